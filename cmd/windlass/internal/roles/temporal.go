package roles

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"path/filepath"

	"github.com/windlass-cd/windlass/internal/temporalx"
	"github.com/windlass-cd/windlass/worker"
)

// temporalConfig configures `windlass temporal`: a standalone Temporal
// server (the same embedded server and SQLite persistence as `windlass
// dev`) in a process of its own, for `windlass server` and several
// `windlass worker` processes to share on one machine.
type temporalConfig struct {
	DataDir   string
	Address   string
	UIAddress string
	Namespace string
	LogLevel  string
	archiveSettings
	// DebugAddress serves the process's Go profiles under /debug/pprof/
	// (the server's own CPU, in a benchmark); empty: off.
	DebugAddress string
	// Postgres, when its DSN is set, replaces SQLite.
	Postgres temporalPostgres
}

func loadTemporalConfig(args []string) (temporalConfig, error) {
	var c temporalConfig
	fs := flag.NewFlagSet("temporal", flag.ContinueOnError)
	fs.StringVar(&c.DataDir, "data-dir", env("TEMPORAL_DATA_DIR", ".windlass/temporal"), "directory kept across restarts: the SQLite database <dir>/temporal.db and the default archive <dir>/archive (with --postgres-dsn, the archive only) (env WINDLASS_TEMPORAL_DATA_DIR)")
	fs.StringVar(&c.Address, "address", env("TEMPORAL_LISTEN_ADDRESS", "127.0.0.1:7233"), "gRPC frontend listen address; port 0 picks a free port (env WINDLASS_TEMPORAL_LISTEN_ADDRESS)")
	fs.StringVar(&c.UIAddress, "ui-address", env("TEMPORAL_UI_ADDRESS", "127.0.0.1:8233"), `Temporal UI listen address ("off" disables it)`)
	fs.StringVar(&c.Namespace, "namespace", env("NAMESPACE", envOr("TEMPORAL_NAMESPACE", "default")), "namespace registered at start (env WINDLASS_NAMESPACE)")
	fs.StringVar(&c.LogLevel, "log-level", env("LOG_LEVEL", "info"), "debug, info, warn or error (env WINDLASS_LOG_LEVEL)")
	fs.StringVar(&c.DebugAddress, "debug-address", env("TEMPORAL_DEBUG_ADDRESS", ""), "listen address for the Go profiles under /debug/pprof/ (default off; env WINDLASS_TEMPORAL_DEBUG_ADDRESS)")
	bindTemporalPostgres(fs, &c.Postgres)
	bindArchive(fs, &c.archiveSettings)
	if err := parse(fs, args); err != nil {
		return c, err
	}
	errs := []error{c.archiveSettings.validate()}
	errs = append(errs, c.Postgres.validate(func(name string) bool {
		set := false
		fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
		return set
	})...)
	if c.DataDir == "" {
		errs = append(errs, errors.New("data-dir is required"))
	} else if err := absolute(&c.DataDir); err != nil {
		errs = append(errs, err)
	}
	if _, _, err := net.SplitHostPort(c.Address); err != nil {
		errs = append(errs, fmt.Errorf("address %q: %w", c.Address, err))
	}
	if c.UIAddress != "off" && c.UIAddress != "" {
		if _, _, err := net.SplitHostPort(c.UIAddress); err != nil {
			errs = append(errs, fmt.Errorf("ui-address %q: %w", c.UIAddress, err))
		}
	}
	if c.DebugAddress != "" {
		if _, _, err := net.SplitHostPort(c.DebugAddress); err != nil {
			errs = append(errs, fmt.Errorf("debug-address %q: %w", c.DebugAddress, err))
		}
	}
	if c.Namespace == "" {
		errs = append(errs, errors.New("namespace is required"))
	}
	if _, err := newLogger(c.LogLevel); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("invalid configuration: %w", err)
	}
	return c, nil
}

// runTemporal runs the Temporal server until ctx ends. The lines it prints
// on stdout once the server accepts connections name the frontend address
// (useful with port 0).
func runTemporal(ctx context.Context, cfg temporalConfig, stdout io.Writer) error {
	log, err := newLogger(cfg.LogLevel)
	if err != nil {
		return err
	}
	dir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return err
	}
	log.Info(msgStarting, "component", "temporal", "data_dir", dir)
	var profiles string
	if cfg.DebugAddress != "" {
		addr, err := serveDebug(ctx, log, cfg.DebugAddress)
		if err != nil {
			return fmt.Errorf("start temporal: %w", err)
		}
		profiles = "http://" + addr.String() + "/debug/pprof/"
	}
	if cfg.Postgres.DSN != "" {
		return runTemporalCluster(ctx, cfg, log, profiles, stdout)
	}
	arc := cfg.archival(dir)
	srv, err := temporalx.StartDevServer(ctx, temporalx.DevServerConfig{
		DataDir: dir, Namespace: cfg.Namespace, FrontendAddr: cfg.Address, UIAddr: cfg.UIAddress,
		SearchAttributes: worker.SearchAttributes(), Logger: log,
		Retention: cfg.Retention, Archival: arc,
	})
	if err != nil {
		return fmt.Errorf("start temporal: %w", err)
	}
	fmt.Fprintf(stdout, "Temporal is running.\n  Frontend:     %s\n  Namespace:    %s\n  Temporal UI:  %s\n  Database:     %s\n  Archive:      %s\n  Retention:    %s\n  Profiles:     %s\n",
		srv.FrontendAddr(), srv.Namespace(), orNone(srv.UIURL()), filepath.Join(dir, "temporal.db"), archiveURI(arc), cfg.Retention, orNone(profiles))
	log.Info(msgReady, "temporal", srv.FrontendAddr(), "temporal_ui", srv.UIURL())
	<-ctx.Done()
	log.Info(msgShuttingDown)
	return srv.Stop()
}
