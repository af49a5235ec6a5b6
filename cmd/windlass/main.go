// Command windlass is Windlass's single binary: `windlass dev` runs
// everything in one process (embedded Temporal server and UI, Redis, worker,
// REST API); `windlass server` and `windlass worker` are the production
// roles; `windlass app ...` is the CLI client of the REST API.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

const usage = `usage: windlass <command> [flags]

commands:
  dev       run everything in one process (embedded Temporal + UI, Redis, worker, API)
  server    run the REST API against an external Temporal
  worker    run the Temporal worker against an external Temporal
  app       CLI client: app list | get NAME | sync NAME | create -f FILE
  health    assess one object from a file: health [--customizations DIR] --object FILE

run "windlass <command> -h" for the flags of a command.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1], os.Args[2:])
	if errors.Is(err, errUsage) {
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "windlass:", err)
		os.Exit(1)
	}
}

var errUsage = errors.New("usage")

func run(ctx context.Context, cmd string, args []string) error {
	switch cmd {
	case "dev":
		cfg, err := loadDevConfig(args)
		if err != nil {
			return err
		}
		return runDev(ctx, cfg)
	case "server":
		cfg, err := loadServerConfig(args)
		if err != nil {
			return err
		}
		return runServer(ctx, cfg)
	case "worker":
		cfg, err := loadWorkerConfig(args)
		if err != nil {
			return err
		}
		return runWorker(ctx, cfg)
	case "app":
		return runApp(ctx, args, os.Stdout)
	case "health":
		return runHealth(args, os.Stdin, os.Stdout, os.Stderr)
	case "-h", "--help", "help":
		fmt.Print(usage)
		return nil
	}
	fmt.Fprintf(os.Stderr, "unknown command %q\n\n%s", cmd, usage)
	return errUsage
}

func newLogger(level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log level %q: %w", level, err)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l})), nil
}
