// Command cluster starts and stops the local test bed of internal/testbed:
// a Kubernetes control plane with kwok nodes, and Redis. The servers run
// detached, so they stay up after this command exits.
//
//	go run ./hack/cluster up         [--dir DIR] [--nodes N] [--bin BINDIR]
//	go run ./hack/cluster down       [--dir DIR]
//	go run ./hack/cluster status     [--dir DIR]
//	go run ./hack/cluster redis-up   [--dir DIR]
//	go run ./hack/cluster redis-down [--dir DIR]
//	go run ./hack/cluster postgres-up   [--dir DIR]
//	go run ./hack/cluster postgres-down [--dir DIR]
//
// up prints `export KUBECONFIG=DIR/admin.kubeconfig` (and the variable that
// makes Shared in internal/testbed use this cluster) on stdout; progress
// goes to stderr. Redis keeps its state in DIR/redis and its address in
// DIR/redis.addr; PostgreSQL keeps its cluster, address and password in
// DIR/postgres.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"k8s.io/client-go/kubernetes"

	"github.com/windlass-cd/windlass/internal/testbed"
)

const defaultDir = ".windlass/testbed"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: cluster up|down|status|redis-up|redis-down|postgres-up|postgres-down [--dir DIR] [--nodes N] [--bin BINDIR]")
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	cmd := args[0]
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", defaultDir, "state directory")
	nodes := fs.Int("nodes", 2, "number of kwok nodes (up)")
	bin := fs.String("bin", "", "directory of the test-bed binaries (up; default $"+testbed.EnvBinDir+" or bin/testbed)")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		usage(stderr)
		return 2
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))

	switch cmd {
	case "up":
		err = up(ctx, log, stdout, abs, *nodes, *bin)
	case "down":
		err = testbed.StopDir(abs)
		if err == nil {
			log.Info("cluster stopped", "dir", abs)
		}
	case "status":
		if !status(ctx, stdout, abs) {
			return 1
		}
	case "redis-up":
		err = redisUp(ctx, log, stdout, abs)
	case "redis-down":
		err = testbed.StopDir(filepath.Join(abs, "redis"))
		if err == nil {
			_ = os.Remove(filepath.Join(abs, "redis.addr"))
			log.Info("redis stopped", "dir", abs)
		}
	case "postgres-up":
		err = postgresUp(ctx, log, stdout, filepath.Join(abs, "postgres"))
	case "postgres-down":
		err = testbed.StopDir(filepath.Join(abs, "postgres"))
		if err == nil {
			log.Info("postgres stopped", "dir", abs)
		}
	default:
		usage(stderr)
		return 2
	}
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	return 0
}

func up(ctx context.Context, log *slog.Logger, stdout io.Writer, dir string, nodes int, bin string) error {
	if c, err := testbed.LoadCluster(dir); err == nil {
		log.Info("cluster already up", "dir", dir)
		printExports(stdout, c)
		return nil
	}
	// Whatever is left of an earlier run (some processes died) goes first.
	if err := testbed.StopDir(dir); err != nil {
		return err
	}
	begin := time.Now()
	c, err := testbed.StartCluster(ctx, testbed.ClusterOptions{
		BinDir: bin,
		Dir:    dir,
		Nodes:  nodes,
		Log:    log.Info,
	})
	if err != nil {
		return err
	}
	log.Info("cluster up", "dir", dir, "took", time.Since(begin).Round(time.Millisecond))
	printExports(stdout, c)
	return nil
}

func printExports(w io.Writer, c *testbed.Cluster) {
	fmt.Fprintf(w, "export %s=%s\n", testbed.EnvClusterDir, c.Dir)
	fmt.Fprintf(w, "export KUBECONFIG=%s\n", c.Kubeconfig)
}

func status(ctx context.Context, w io.Writer, dir string) bool {
	ok := true
	c, err := testbed.LoadCluster(dir)
	if err != nil {
		fmt.Fprintf(w, "cluster: down (%v)\n", err)
		ok = false
	} else {
		cs, err := kubernetes.NewForConfig(c.Config)
		if err == nil {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err = cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(cctx)
			cancel()
		}
		if err != nil {
			fmt.Fprintf(w, "cluster: processes up, apiserver not ready: %v\n", err)
			ok = false
		} else {
			fmt.Fprintf(w, "cluster: up (%s, logs in %s)\n", c.Kubeconfig, filepath.Join(dir, "logs"))
		}
	}
	addr, err := os.ReadFile(filepath.Join(dir, "redis.addr"))
	switch {
	case errors.Is(err, os.ErrNotExist):
		fmt.Fprintln(w, "redis: not started")
	case err != nil:
		fmt.Fprintf(w, "redis: %v\n", err)
	default:
		a := strings.TrimSpace(string(addr))
		client := redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1})
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		perr := client.Ping(cctx).Err()
		cancel()
		_ = client.Close()
		if perr != nil {
			fmt.Fprintf(w, "redis: down at %s (%v)\n", a, perr)
		} else {
			fmt.Fprintf(w, "redis: up at %s\n", a)
		}
	}
	return ok
}

func redisUp(ctx context.Context, log *slog.Logger, stdout io.Writer, dir string) error {
	addrFile := filepath.Join(dir, "redis.addr")
	if addr, err := os.ReadFile(addrFile); err == nil {
		a := strings.TrimSpace(string(addr))
		client := redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1})
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		perr := client.Ping(cctx).Err()
		cancel()
		_ = client.Close()
		if perr == nil {
			log.Info("redis already up", "addr", a)
			fmt.Fprintf(stdout, "export %s=%s\n", testbed.EnvRedisAddr, a)
			return nil
		}
	}
	rdir := filepath.Join(dir, "redis")
	if err := testbed.StopDir(rdir); err != nil {
		return err
	}
	r, err := testbed.StartRedis(ctx, rdir)
	if err != nil {
		return err
	}
	if err := os.WriteFile(addrFile, []byte(r.Addr()+"\n"), 0o644); err != nil {
		return errors.Join(fmt.Errorf("write redis address: %w", err), r.Stop())
	}
	log.Info("redis up", "addr", r.Addr(), "dir", rdir)
	fmt.Fprintf(stdout, "export %s=%s\n", testbed.EnvRedisAddr, r.Addr())
	return nil
}

// postgresUp starts a new PostgreSQL in dir unless one runs there already,
// and prints the variable that makes SharedPostgres use it.
func postgresUp(ctx context.Context, log *slog.Logger, stdout io.Writer, dir string) error {
	if procs, _ := testbed.Processes(dir); len(procs) > 0 {
		if p, err := testbed.LoadPostgres(dir); err == nil {
			log.Info("postgres already up", "addr", p.Addr())
			fmt.Fprintf(stdout, "export %s=%s\n", testbed.EnvPostgresDir, dir)
			return nil
		}
	}
	if err := testbed.StopDir(dir); err != nil {
		return err
	}
	p, err := testbed.StartPostgres(ctx, dir)
	if err != nil {
		return err
	}
	log.Info("postgres up", "addr", p.Addr(), "dir", dir)
	fmt.Fprintf(stdout, "export %s=%s\n", testbed.EnvPostgresDir, dir)
	return nil
}
