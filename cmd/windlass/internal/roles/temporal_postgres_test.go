package roles

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/windlass-cd/windlass/internal/temporalx"
	"github.com/windlass-cd/windlass/internal/testbed"
)

func TestLoadTemporalConfigPostgres(t *testing.T) {
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte("s3cret-pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dsn := "postgres://windlass@127.0.0.1:5432/temporal?sslmode=disable"
	tests := []struct {
		name    string
		args    []string
		env     string // WINDLASS_POSTGRES_PASSWORD
		wantErr string
		wantDSN string // the DSN in effect; default dsn
	}{
		{name: "password from a file", args: []string{"--postgres-dsn", dsn, "--postgres-password-file", pwFile}},
		{name: "password from the environment", args: []string{"--postgres-dsn", dsn}, env: "s3cret-pw"},
		{name: "no password", args: []string{"--postgres-dsn", dsn}, wantErr: "no PostgreSQL password"},
		{name: "password in the dsn", args: []string{"--postgres-dsn", "postgres://windlass:s3cret-pw@127.0.0.1/temporal"}, env: "x", wantErr: "holds a password"},
		{name: "missing password file", args: []string{"--postgres-dsn", dsn, "--postgres-password-file", pwFile + ".missing"}, wantErr: "postgres-password-file"},
		{name: "unknown service", args: []string{"--postgres-dsn", dsn, "--services", "frontend,scheduler"}, env: "x", wantErr: `unknown service "scheduler"`},
		{name: "no shards", args: []string{"--postgres-dsn", dsn, "--history-shards", "0"}, env: "x", wantErr: "history-shards 0"},
		{name: "shards without postgres", args: []string{"--history-shards", "8"}, wantErr: "history-shards needs --postgres-dsn"},
		{name: "archive on postgres", args: []string{"--postgres-dsn", dsn, "--archive-history-uri", "file:///tmp/h", "--archive-visibility-uri", "file:///tmp/v"}, env: "s3cret-pw"},
		{name: "half an archive on postgres", args: []string{"--postgres-dsn", dsn, "--archive-history-uri", "file:///tmp/h"}, env: "x", wantErr: "set both or neither"},
		{name: "services without postgres", args: []string{"--services", "history"}, wantErr: "services needs --postgres-dsn"},
		{name: "parts", args: []string{"--postgres-host", "db.internal", "--postgres-port", "6432", "--postgres-user", "windlass", "--postgres-database", "tmp", "--postgres-sslmode", "verify-full"},
			env: "s3cret-pw", wantDSN: "postgres://windlass@db.internal:6432/tmp?sslmode=verify-full"},
		{name: "parts with defaults and a password file", args: []string{"--postgres-host", "10.0.0.5", "--postgres-user", "windlass", "--postgres-password-file", pwFile},
			wantDSN: "postgres://windlass@10.0.0.5:5432/temporal"},
		{name: "parts on IPv6", args: []string{"--postgres-host", "::1", "--postgres-user", "windlass"}, env: "s3cret-pw", wantDSN: "postgres://windlass@[::1]:5432/temporal"},
		{name: "dsn and parts", args: []string{"--postgres-dsn", dsn, "--postgres-host", "db.internal"}, env: "x", wantErr: "name the database twice"},
		{name: "dsn and a part", args: []string{"--postgres-dsn", dsn, "--postgres-port", "5433"}, env: "x", wantErr: "name the database twice"},
		{name: "parts without a host", args: []string{"--postgres-user", "windlass"}, env: "x", wantErr: "postgres-host is required"},
		{name: "parts without a user", args: []string{"--postgres-host", "db.internal"}, env: "x", wantErr: "postgres-user is required"},
		{name: "bad port", args: []string{"--postgres-host", "db.internal", "--postgres-user", "windlass", "--postgres-port", "54x2"}, env: "x", wantErr: `postgres-port "54x2": want a number from 1 to 65535`},
		{name: "port out of range", args: []string{"--postgres-host", "db.internal", "--postgres-user", "windlass", "--postgres-port", "65536"}, env: "x", wantErr: `postgres-port "65536"`},
		{name: "bad sslmode", args: []string{"--postgres-host", "db.internal", "--postgres-user", "windlass", "--postgres-sslmode", "on"}, env: "x", wantErr: `postgres-sslmode "on": want one of disable`},
		{name: "host with a password", args: []string{"--postgres-host", "windlass:s3cret-pw@db", "--postgres-user", "windlass"}, env: "x", wantErr: "postgres-host"},
		{name: "no database", args: []string{"--postgres-host", "db.internal", "--postgres-user", "windlass", "--postgres-database", ""}, env: "x", wantErr: `postgres-database "": want one name`},
		{name: "parts without a password", args: []string{"--postgres-host", "db.internal", "--postgres-user", "windlass"}, wantErr: "no PostgreSQL password"},
		{name: "parts with a missing password file", args: []string{"--postgres-host", "db.internal", "--postgres-user", "windlass", "--postgres-password-file", pwFile + ".missing"}, wantErr: "postgres-password-file"},
		{name: "advertise", args: []string{"--postgres-dsn", dsn, "--advertise-address", "10.0.0.7"}, env: "s3cret-pw"},
		{name: "advertise a name", args: []string{"--postgres-dsn", dsn, "--advertise-address", "temporal-1"}, env: "x", wantErr: `advertise address "temporal-1": want an IP address`},
		{name: "advertise without postgres", args: []string{"--advertise-address", "10.0.0.7"}, wantErr: "advertise-address needs --postgres-dsn or --postgres-host"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(envPostgresPassword, tt.env)
			args := append([]string{"--data-dir", t.TempDir()}, tt.args...)
			c, err := loadTemporalConfig(args)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if c.Postgres.password != "s3cret-pw" || strings.Contains(c.Postgres.DSN, "s3cret-pw") {
					t.Errorf("password = %q, want the file's or the environment's", c.Postgres.password)
				}
				wantDSN := tt.wantDSN
				if wantDSN == "" {
					wantDSN = dsn
				}
				if c.Postgres.DSN != wantDSN {
					t.Errorf("dsn = %q, want %q", c.Postgres.DSN, wantDSN)
				}
				if strings.Join(c.Postgres.services, ",") != "frontend,history,matching,worker" {
					t.Errorf("services = %v, want all", c.Postgres.services)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "s3cret-pw") {
				t.Errorf("err = %v holds the password", err)
			}
		})
	}
}

// A cluster member archives under its data dir unless URIs are given, as
// on SQLite.
func TestClusterArchival(t *testing.T) {
	dsn := "postgres://windlass@127.0.0.1:5432/temporal?sslmode=disable"
	tests := []struct {
		name        string
		args        []string
		wantHistory string // "" for no archive; DATA for the data dir
	}{
		{name: "default", wantHistory: "file://DATA/archive/history"},
		{name: "off", args: []string{"--archive-history-uri", "off"}, wantHistory: ""},
		{name: "file", args: []string{"--archive-history-uri", "file:///srv/a/h", "--archive-visibility-uri", "file:///srv/a/v"}, wantHistory: "file:///srv/a/h"},
		{name: "s3", args: []string{"--archive-history-uri", "s3://b/h", "--archive-visibility-uri", "s3://b/v", "--archive-s3-region", "r"}, wantHistory: "s3://b/h"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(envPostgresPassword, "x")
			data := t.TempDir()
			c, err := loadTemporalConfig(append([]string{"--data-dir", data, "--postgres-dsn", dsn}, tt.args...))
			if err != nil {
				t.Fatal(err)
			}
			arc := c.archival(c.DataDir)
			var got string
			if arc != nil {
				got = arc.HistoryURI
			}
			if want := strings.ReplaceAll(tt.wantHistory, "DATA", data); got != want {
				t.Errorf("history archive = %q, want %q", got, want)
			}
		})
	}
}

// `windlass temporal --postgres-dsn` refuses a data dir whose default
// archive cannot be written, naming it, before it dials PostgreSQL (nothing
// listens at the DSN).
func TestRunTemporalPostgresUnwritableArchive(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(envPostgresPassword, "s3cret-pw")
	dsn := "postgres://windlass@" + testbed.ClosedAddr(t) + "/temporal?sslmode=disable"
	cfg, err := loadTemporalConfig([]string{"--postgres-dsn", dsn, "--data-dir", filepath.Join(file, "data"), "--ui-address", "off", "--log-level", "error"})
	if err != nil {
		t.Fatal(err)
	}
	err = runTemporal(t.Context(), cfg, io.Discard)
	want := "archive directory " + filepath.Join(file, "data", "archive", "history") + " is not writable"
	if err == nil || !strings.Contains(err.Error(), want) || errors.Is(err, temporalx.ErrPostgresUnreachable) {
		t.Fatalf("runTemporal = %v, want %q before any connection", err, want)
	}
}

// PostgreSQL down at start: the error names the database, whether given as
// a DSN or as parts, without its password.
func TestRunTemporalPostgresDown(t *testing.T) {
	closed := testbed.ClosedAddr(t)
	host, port, err := net.SplitHostPort(closed)
	if err != nil {
		t.Fatal(err)
	}
	want := "postgres://windlass@" + closed + "/temporal"
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"dsn", []string{"--postgres-dsn", want + "?sslmode=disable"}},
		{"parts", []string{"--postgres-host", host, "--postgres-port", port, "--postgres-user", "windlass", "--postgres-sslmode", "disable"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(envPostgresPassword, "s3cret-pw")
			cfg, err := loadTemporalConfig(append([]string{"--data-dir", t.TempDir(), "--ui-address", "off", "--log-level", "error"}, tc.args...))
			if err != nil {
				t.Fatal(err)
			}
			err = runTemporal(t.Context(), cfg, io.Discard)
			if !errors.Is(err, temporalx.ErrPostgresUnreachable) || !strings.Contains(err.Error(), want) {
				t.Fatalf("runTemporal = %v, want %v naming %s", err, temporalx.ErrPostgresUnreachable, want)
			}
			if strings.Contains(err.Error(), "s3cret-pw") {
				t.Errorf("err = %v holds the password", err)
			}
		})
	}
}
