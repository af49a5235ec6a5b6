package roles

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/windlass-cd/windlass/internal/temporalx"
	"github.com/windlass-cd/windlass/worker"
)

// envPostgresPassword holds the PostgreSQL password when no file names it.
const envPostgresPassword = "WINDLASS_POSTGRES_PASSWORD"

// temporalPostgres selects PostgreSQL persistence for `windlass temporal`,
// which makes the process one member of a Temporal cluster.
type temporalPostgres struct {
	DSN                string
	PasswordFile       string
	VisibilityDatabase string
	HistoryShards      int
	Services           string

	// password is read from PasswordFile or the environment; never logged.
	password string
	services []string
}

func bindTemporalPostgres(fs *flag.FlagSet, p *temporalPostgres) {
	fs.StringVar(&p.DSN, "postgres-dsn", env("POSTGRES_DSN", ""), "PostgreSQL persistence instead of SQLite: postgres://user@host:port/database?sslmode=..., without a password (env WINDLASS_POSTGRES_DSN)")
	fs.StringVar(&p.PasswordFile, "postgres-password-file", env("POSTGRES_PASSWORD_FILE", ""), "file holding the PostgreSQL password (default: env "+envPostgresPassword+")")
	fs.StringVar(&p.VisibilityDatabase, "postgres-visibility-database", env("POSTGRES_VISIBILITY_DATABASE", ""), "database of the visibility store (default <database>_visibility)")
	fs.IntVar(&p.HistoryShards, "history-shards", envInt("TEMPORAL_HISTORY_SHARDS", temporalx.DefaultHistoryShards), "history shards of a new PostgreSQL cluster; fixed at the first start (env WINDLASS_TEMPORAL_HISTORY_SHARDS)")
	fs.StringVar(&p.Services, "services", env("TEMPORAL_SERVICES", strings.Join(temporalx.AllServices, ",")), "Temporal services this process serves, with --postgres-dsn (env WINDLASS_TEMPORAL_SERVICES)")
}

// validate checks the flags and reads the password.
func (p *temporalPostgres) validate(set func(string) bool) []error {
	if p.DSN == "" {
		var errs []error
		for _, name := range []string{"postgres-password-file", "postgres-visibility-database", "history-shards", "services"} {
			if set(name) {
				errs = append(errs, fmt.Errorf("%s needs --postgres-dsn (SQLite has one store, 4 shards and every service)", name))
			}
		}
		return errs
	}
	var errs []error
	if p.HistoryShards < 1 {
		errs = append(errs, fmt.Errorf("history-shards %d: want at least 1", p.HistoryShards))
	}
	var err error
	if p.services, err = temporalx.ParseServices(p.Services); err != nil {
		errs = append(errs, fmt.Errorf("services: %w", err))
	}
	switch {
	case p.PasswordFile != "":
		data, err := os.ReadFile(p.PasswordFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("postgres-password-file: %w", err))
		}
		p.password = strings.TrimRight(string(data), "\r\n")
	default:
		p.password = os.Getenv(envPostgresPassword)
	}
	if err := p.config().Validate(); err != nil {
		errs = append(errs, err)
	}
	if p.password == "" && len(errs) == 0 {
		errs = append(errs, errors.New("no PostgreSQL password: give --postgres-password-file or "+envPostgresPassword))
	}
	return errs
}

// config is the temporalx configuration of these flags.
func (p *temporalPostgres) config() temporalx.PostgresConfig {
	return temporalx.PostgresConfig{DSN: p.DSN, Password: p.password, VisibilityDatabase: p.VisibilityDatabase}
}

// runTemporalCluster runs one member of a Temporal cluster on PostgreSQL
// until ctx ends.
func runTemporalCluster(ctx context.Context, cfg temporalConfig, log *slog.Logger, profiles string, stdout io.Writer) error {
	p := cfg.Postgres
	log.Info(msgStarting, "component", "temporal", "postgres", p.DSN, "services", p.services, "history_shards", p.HistoryShards)
	// The default archive is under the data dir, as on SQLite. The
	// namespace's archive is cluster-wide: members on one machine share
	// it, and a member whose URI differs is refused at start.
	arc := cfg.archival(cfg.DataDir)
	srv, err := temporalx.StartClusterServer(ctx, temporalx.ClusterServerConfig{
		Postgres: p.config(), HistoryShards: int32(p.HistoryShards), Services: p.services,
		FrontendAddr: cfg.Address, UIAddr: cfg.UIAddress, Namespace: cfg.Namespace,
		SearchAttributes: worker.SearchAttributes(), Retention: cfg.Retention, Archival: arc, Logger: log,
	})
	if err != nil {
		return fmt.Errorf("start temporal: %w", err)
	}
	fmt.Fprintf(stdout, "Temporal is running.\n  Services:     %s\n  Frontend:     %s\n  Namespace:    %s\n  Temporal UI:  %s\n  Database:     %s\n  Archive:      %s\n  Retention:    %s\n  Profiles:     %s\n",
		strings.Join(p.services, ","), orNone(srv.FrontendAddr()), srv.Namespace(), orNone(srv.UIURL()), p.DSN, archiveURI(arc), cfg.Retention, orNone(profiles))
	log.Info(msgReady, "temporal", srv.FrontendAddr(), "temporal_ui", srv.UIURL(), "services", p.services)
	<-ctx.Done()
	log.Info(msgShuttingDown)
	return srv.Stop()
}
