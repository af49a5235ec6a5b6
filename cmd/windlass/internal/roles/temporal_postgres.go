package roles

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/windlass-cd/windlass/internal/temporalx"
	"github.com/windlass-cd/windlass/worker"
)

// envPostgresPassword holds the PostgreSQL password when no file names it.
const envPostgresPassword = "WINDLASS_POSTGRES_PASSWORD"

// temporalPostgres selects PostgreSQL persistence for `windlass temporal`,
// which makes the process one member of a Temporal cluster. The database
// is named by a DSN or by its parts, never both.
type temporalPostgres struct {
	DSN                string
	Host               string
	Port               string
	User               string
	Database           string
	SSLMode            string
	PasswordFile       string
	VisibilityDatabase string
	HistoryShards      int
	Services           string
	// AdvertiseAddress is the IP other members reach this process at.
	AdvertiseAddress string

	// password is read from PasswordFile or the environment; never logged.
	password string
	services []string
}

// sslModes are libpq's sslmode values.
var sslModes = []string{"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}

// partFlags are the flags that name the database by its parts.
var partFlags = []string{"postgres-host", "postgres-port", "postgres-user", "postgres-database", "postgres-sslmode"}

func bindTemporalPostgres(fs *flag.FlagSet, p *temporalPostgres) {
	fs.StringVar(&p.DSN, "postgres-dsn", env("POSTGRES_DSN", ""), "PostgreSQL persistence instead of SQLite: postgres://user@host:port/database?sslmode=..., without a password; or give its parts, --postgres-host and the others (env WINDLASS_POSTGRES_DSN)")
	fs.StringVar(&p.Host, "postgres-host", env("POSTGRES_HOST", ""), "PostgreSQL persistence, by parts instead of --postgres-dsn: the server's host (env WINDLASS_POSTGRES_HOST)")
	fs.StringVar(&p.Port, "postgres-port", env("POSTGRES_PORT", "5432"), "with --postgres-host: the server's port (env WINDLASS_POSTGRES_PORT)")
	fs.StringVar(&p.User, "postgres-user", env("POSTGRES_USER", ""), "with --postgres-host: the user (env WINDLASS_POSTGRES_USER)")
	fs.StringVar(&p.Database, "postgres-database", env("POSTGRES_DATABASE", "temporal"), "with --postgres-host: the default store's database (env WINDLASS_POSTGRES_DATABASE)")
	fs.StringVar(&p.SSLMode, "postgres-sslmode", env("POSTGRES_SSLMODE", ""), "with --postgres-host: "+strings.Join(sslModes, ", ")+" (default disable; env WINDLASS_POSTGRES_SSLMODE)")
	fs.StringVar(&p.PasswordFile, "postgres-password-file", env("POSTGRES_PASSWORD_FILE", ""), "file holding the PostgreSQL password (default: env "+envPostgresPassword+")")
	fs.StringVar(&p.VisibilityDatabase, "postgres-visibility-database", env("POSTGRES_VISIBILITY_DATABASE", ""), "database of the visibility store (default <database>_visibility)")
	fs.IntVar(&p.HistoryShards, "history-shards", envInt("TEMPORAL_HISTORY_SHARDS", temporalx.DefaultHistoryShards), "history shards of a new PostgreSQL cluster; fixed at the first start (env WINDLASS_TEMPORAL_HISTORY_SHARDS)")
	fs.StringVar(&p.Services, "services", env("TEMPORAL_SERVICES", strings.Join(temporalx.AllServices, ",")), "Temporal services this process serves, with PostgreSQL (env WINDLASS_TEMPORAL_SERVICES)")
	fs.StringVar(&p.AdvertiseAddress, "advertise-address", env("TEMPORAL_ADVERTISE_ADDRESS", ""), "with PostgreSQL: the IP other cluster members reach this process at; its internal services bind on it (default 127.0.0.1: members on one machine; env WINDLASS_TEMPORAL_ADVERTISE_ADDRESS)")
}

// validate checks the flags, builds the DSN from its parts when they are
// given, and reads the password.
func (p *temporalPostgres) validate(set func(string) bool) []error {
	parts := p.Host != "" || p.User != ""
	for _, name := range partFlags {
		parts = parts || set(name)
	}
	if p.DSN != "" && parts {
		return []error{errors.New("postgres-dsn and postgres-host, -port, -user, -database, -sslmode name the database twice: give the DSN or its parts")}
	}
	if p.DSN == "" && !parts {
		var errs []error
		for _, name := range []string{"postgres-password-file", "postgres-visibility-database", "history-shards", "services", "advertise-address"} {
			if set(name) {
				errs = append(errs, fmt.Errorf("%s needs --postgres-dsn or --postgres-host (SQLite has one store, 4 shards and every service)", name))
			}
		}
		return errs
	}
	var errs []error
	if parts {
		dsn, err := p.partsDSN()
		if err != nil {
			return []error{err}
		}
		p.DSN = dsn
	}
	if p.HistoryShards < 1 {
		errs = append(errs, fmt.Errorf("history-shards %d: want at least 1", p.HistoryShards))
	}
	var err error
	if p.services, err = temporalx.ParseServices(p.Services); err != nil {
		errs = append(errs, fmt.Errorf("services: %w", err))
	}
	if p.AdvertiseAddress != "" {
		if err := temporalx.CheckAdvertiseIP(p.AdvertiseAddress); err != nil {
			errs = append(errs, err)
		}
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

// partsDSN is the DSN of the part flags, without a password.
func (p *temporalPostgres) partsDSN() (string, error) {
	var errs []error
	if p.Host == "" {
		errs = append(errs, errors.New("postgres-host is required with the other --postgres-* parts"))
	} else if strings.ContainsAny(p.Host, "/@?#") {
		// Not quoted: it may hold a pasted password.
		errs = append(errs, errors.New("postgres-host: want a host name or an IP address, without a user, password or path"))
	}
	port, err := strconv.Atoi(p.Port)
	if err != nil || port < 1 || port > 65535 {
		errs = append(errs, fmt.Errorf("postgres-port %q: want a number from 1 to 65535", p.Port))
	}
	if p.User == "" {
		errs = append(errs, errors.New("postgres-user is required with --postgres-host"))
	}
	if p.Database == "" || strings.Contains(p.Database, "/") {
		errs = append(errs, fmt.Errorf("postgres-database %q: want one name", p.Database))
	}
	if p.SSLMode != "" && !slices.Contains(sslModes, p.SSLMode) {
		errs = append(errs, fmt.Errorf("postgres-sslmode %q: want one of %s", p.SSLMode, strings.Join(sslModes, ", ")))
	}
	if err := errors.Join(errs...); err != nil {
		return "", err
	}
	u := url.URL{Scheme: "postgres", User: url.User(p.User), Host: net.JoinHostPort(p.Host, strconv.Itoa(port)), Path: "/" + p.Database}
	if p.SSLMode != "" {
		u.RawQuery = url.Values{"sslmode": {p.SSLMode}}.Encode()
	}
	return u.String(), nil
}

// config is the temporalx configuration of these flags.
func (p *temporalPostgres) config() temporalx.PostgresConfig {
	return temporalx.PostgresConfig{DSN: p.DSN, Password: p.password, VisibilityDatabase: p.VisibilityDatabase}
}

// runTemporalCluster runs one member of a Temporal cluster on PostgreSQL
// until ctx ends.
func runTemporalCluster(ctx context.Context, cfg temporalConfig, log *slog.Logger, profiles string, stdout io.Writer) error {
	p := cfg.Postgres
	log.Info(msgStarting, "component", "temporal", "postgres", p.DSN, "services", p.services, "history_shards", p.HistoryShards, "advertise", orNone(p.AdvertiseAddress))
	// The default archive is under the data dir, as on SQLite. The
	// namespace's archive is cluster-wide: members on one machine share
	// it, and a member whose URI differs is refused at start.
	arc := cfg.archival(cfg.DataDir)
	srv, err := temporalx.StartClusterServer(ctx, temporalx.ClusterServerConfig{
		Postgres: p.config(), HistoryShards: int32(p.HistoryShards), Services: p.services, AdvertiseIP: p.AdvertiseAddress,
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
