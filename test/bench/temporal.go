package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/windlass-cd/windlass/internal/testbed"
	"github.com/windlass-cd/windlass/test/bench/harness"
)

// variant is how the suite runs Temporal (issue 28 §4).
type variant string

const (
	// sqlite is one `windlass temporal` on its SQLite file, the default.
	sqlite variant = "sqlite"
	// pg1 is one `windlass temporal --postgres-dsn`, pg2 two of them in
	// one cluster; clients dial the first.
	pg1 variant = "pg1"
	pg2 variant = "pg2"
)

// temporalDatabase is the persistence database on PostgreSQL; Temporal
// keeps visibility in <database>_visibility.
const temporalDatabase = "temporal"

// parseVariants reads -temporal.
func parseVariants(list string) ([]variant, error) {
	var out []variant
	for f := range strings.SplitSeq(list, ",") {
		v := variant(strings.ToLower(strings.TrimSpace(f)))
		if v.processes() == 0 {
			return nil, fmt.Errorf("unknown Temporal variant %q: want sqlite, pg1 or pg2", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// processes is how many Temporal processes v runs (0: not a variant).
func (v variant) processes() int {
	switch v {
	case sqlite, pg1:
		return 1
	case pg2:
		return 2
	}
	return 0
}

func (v variant) describe() string {
	if v == sqlite {
		return "one windlass temporal on SQLite"
	}
	return fmt.Sprintf("%d windlass temporal processes on PostgreSQL", v.processes())
}

// startTemporal starts v's Temporal processes (and, for pg1 and pg2, a
// PostgreSQL of their own), sets e.temporal, e.temporals and the address
// clients dial; stop stops what was started, even after an error.
func (e *env) startTemporal(ctx context.Context, v variant, logs string) (stop func(), err error) {
	e.variant = v
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	common := []string{"--address", "127.0.0.1:0", "--ui-address", "off", "--log-level", "warn", "--debug-address", "127.0.0.1:0"}
	var env []string
	if v != sqlite {
		// Run as root, PostgreSQL runs as another user, who must reach
		// its dir.
		if err := os.Chmod(e.tmp, 0o755); err != nil {
			return stop, err
		}
		dir := filepath.Join(e.tmp, "postgres")
		if e.postgres, err = testbed.StartPostgres(ctx, dir); err != nil {
			return stop, err
		}
		stops = append(stops, func() { _ = e.postgres.Stop() })
		procs, err := testbed.Processes(dir)
		for _, p := range procs {
			if p.Name == "postgres" {
				e.postgresPID = p.PID
			}
		}
		if e.postgresPID == 0 {
			return stop, fmt.Errorf("find PostgreSQL's postmaster in %s: %v", dir, err)
		}
		common = append(common, "--postgres-dsn", e.postgres.DSN(temporalDatabase))
		env = []string{"WINDLASS_POSTGRES_PASSWORD=" + e.postgres.Password()}
	}
	for i := range v.processes() {
		name, data := "temporal", filepath.Join(e.tmp, "temporal")
		args := append([]string{"temporal", "--data-dir", data}, common...)
		if i > 0 {
			// The members share the namespace, and with it the first's
			// archive (each would default to one under its own data dir).
			archive := "file://" + filepath.Join(data, "archive")
			name, data = "temporal-"+strconv.Itoa(i+1), data+"-"+strconv.Itoa(i+1)
			args = append([]string{"temporal", "--data-dir", data, "--archive-history-uri", archive + "/history",
				"--archive-visibility-uri", archive + "/visibility"}, common...)
		}
		p, err := harness.StartProc(logs, e.fullBin, name, env, args...)
		if err != nil {
			return stop, err
		}
		stops = append(stops, p.Stop)
		addr, err := p.WaitLine(ctx, "Frontend:")
		if err != nil {
			return stop, err
		}
		if i == 0 {
			e.temporal, e.temporalAddr, e.temporalData = p, addr, data
			profiles, err := p.WaitLine(ctx, "Profiles:")
			if err != nil {
				return stop, err
			}
			e.temporalDebug = strings.TrimSuffix(strings.TrimPrefix(profiles, "http://"), "/debug/pprof/")
		}
		e.temporals = append(e.temporals, p)
	}
	return stop, nil
}

// postgresCPUSeconds is the CPU time so far of PostgreSQL: its postmaster,
// the backends and helpers, live or exited; 0 on SQLite.
func (e *env) postgresCPUSeconds() float64 {
	if e.postgresPID == 0 {
		return 0
	}
	return harness.TreeCPUSeconds(e.postgresPID)
}

// temporalDBBytes is the size of Temporal's store: on PostgreSQL the
// persistence and visibility databases (pg_database_size), on SQLite the
// files of the data dir but its archive.
func (e *env) temporalDBBytes(ctx context.Context) (int64, error) {
	if e.postgres == nil {
		var total int64
		err := filepath.WalkDir(e.temporalData, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "archive" {
				return filepath.SkipDir
			}
			if info, err := d.Info(); err == nil && info.Mode().IsRegular() {
				total += info.Size()
			}
			return nil
		})
		return total, err
	}
	cfg, err := pgx.ParseConfig(e.postgres.DSN(temporalDatabase))
	if err != nil {
		return 0, err
	}
	cfg.Password = e.postgres.Password()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return 0, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	defer conn.Close(ctx)
	var size int64
	if err := conn.QueryRow(ctx, "SELECT pg_database_size($1) + pg_database_size($2)",
		temporalDatabase, temporalDatabase+"_visibility").Scan(&size); err != nil {
		return 0, fmt.Errorf("pg_database_size: %w", err)
	}
	return size, nil
}

// mib is bytes in MiB.
func mib(b int64) float64 { return float64(b) / (1 << 20) }
