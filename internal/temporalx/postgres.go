package temporalx

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"go.temporal.io/api/enums/v1"
)

// Errors of StartClusterServer that a caller (or a test) tells apart.
var (
	// ErrPostgresUnreachable: no PostgreSQL answers at the DSN's address.
	ErrPostgresUnreachable = errors.New("postgres unreachable")
	// ErrPostgresAuth: PostgreSQL refused the user or the password.
	ErrPostgresAuth = errors.New("postgres refused the login")
	// ErrSchemaTooNew: the database was set up by a newer Temporal server.
	ErrSchemaTooNew = errors.New("database schema is newer than this Temporal server")
	// ErrShardCountChanged: the database was created with another number
	// of history shards, which is fixed at the first start.
	ErrShardCountChanged = errors.New("history shard count changed")
)

// Services a Temporal process can serve; AllServices is every one.
const (
	ServiceFrontend = "frontend"
	ServiceHistory  = "history"
	ServiceMatching = "matching"
	ServiceWorker   = "worker"
)

// AllServices are the services a process serves by default.
var AllServices = []string{ServiceFrontend, ServiceHistory, ServiceMatching, ServiceWorker}

// DefaultHistoryShards is the shard count of a new cluster database.
const DefaultHistoryShards = 4

// PostgresConfig locates a cluster's two PostgreSQL databases: the default
// store (the DSN's database) and the visibility store.
type PostgresConfig struct {
	// DSN is postgres://user@host:port/database?params, without a password;
	// the params (sslmode, ...) are passed to the driver.
	DSN string
	// Password of the DSN's user; never logged.
	Password string
	// VisibilityDatabase defaults to <database>_visibility.
	VisibilityDatabase string
	// MaxConns per store and process; default 20.
	MaxConns int
}

// pgTarget is a parsed PostgresConfig.
type pgTarget struct {
	addr, user, database, visibility string
	params                           map[string]string
	password                         string
	maxConns                         int
}

// String names the target without its password, for errors and logs.
func (t pgTarget) String() string { return redactDSN(t.addr, t.user, t.database) }

func redactDSN(addr, user, database string) string {
	u := url.URL{Scheme: "postgres", User: url.User(user), Host: addr, Path: "/" + database}
	return u.String()
}

// parsePostgres checks c and splits its DSN.
func parsePostgres(c PostgresConfig) (pgTarget, error) {
	u, err := url.Parse(c.DSN)
	if err != nil {
		// url's error quotes the input, which may hold a password.
		return pgTarget{}, errors.New("postgres dsn: not a URL (want postgres://user@host:port/database)")
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		return pgTarget{}, fmt.Errorf("postgres dsn: scheme %q, want postgres://user@host:port/database", u.Scheme)
	}
	if _, set := u.User.Password(); set {
		return pgTarget{}, errors.New("postgres dsn: holds a password; give it in a file or the environment instead")
	}
	t := pgTarget{
		addr: u.Host, user: u.User.Username(), database: strings.TrimPrefix(u.Path, "/"),
		visibility: c.VisibilityDatabase, password: c.Password, maxConns: c.MaxConns,
		params: map[string]string{},
	}
	if u.Port() == "" && u.Host != "" {
		t.addr = net.JoinHostPort(u.Hostname(), "5432")
	}
	var errs []error
	if u.Hostname() == "" {
		errs = append(errs, errors.New("postgres dsn: no host"))
	}
	if t.user == "" {
		errs = append(errs, errors.New("postgres dsn: no user"))
	}
	if t.database == "" || strings.Contains(t.database, "/") {
		errs = append(errs, fmt.Errorf("postgres dsn: database %q, want one name", t.database))
	}
	for k, v := range u.Query() {
		if len(v) != 1 {
			errs = append(errs, fmt.Errorf("postgres dsn: parameter %q given %d times", k, len(v)))
			continue
		}
		t.params[k] = v[0]
	}
	if t.visibility == "" {
		t.visibility = t.database + "_visibility"
	}
	if t.visibility == t.database {
		errs = append(errs, errors.New("postgres: the visibility database must differ from the default one"))
	}
	if t.maxConns == 0 {
		t.maxConns = 20
	}
	return t, errors.Join(errs...)
}

// ClusterServerConfig configures StartClusterServer: one process of a
// Temporal cluster whose state is in PostgreSQL.
type ClusterServerConfig struct {
	Postgres PostgresConfig
	// HistoryShards of a new database; default DefaultHistoryShards. An
	// existing database with another count is refused.
	HistoryShards int32
	// Services this process serves; default AllServices.
	Services []string
	// FrontendAddr is the frontend's gRPC host:port (port 0: a free one);
	// default 127.0.0.1:7233. Used when the process serves the frontend.
	FrontendAddr string
	// UIAddr serves the Web UI, as in DevServerConfig; only with the
	// frontend.
	UIAddr string
	// Namespace registered at start; default "default".
	Namespace string
	// SearchAttributes registered at start.
	SearchAttributes map[string]enums.IndexedValueType
	// Retention is how long the namespace keeps closed workflows; default
	// DefaultRetention. It is set on every start.
	Retention time.Duration
	// Archival, as in DevServerConfig; nil: no archive. The namespace's
	// URIs are cluster-wide: give every member the same ones.
	Archival *ArchivalConfig
	// AdvertiseIP is the address other members reach this process at:
	// ringpop broadcasts it, and the internal services bind on it. Default
	// 127.0.0.1, for members on one machine. A frontend must bind on it or
	// on an unspecified address.
	AdvertiseIP string
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// CheckAdvertiseIP checks an advertise address: ringpop needs an IP that
// other hosts can dial, so a name or an unspecified address is refused.
func CheckAdvertiseIP(ip string) error {
	parsed := net.ParseIP(ip)
	switch {
	case parsed == nil:
		return fmt.Errorf("advertise address %q: want an IP address (Temporal's membership takes no host names)", ip)
	case parsed.IsUnspecified():
		return fmt.Errorf("advertise address %s: want the address other members dial, not an unspecified one", ip)
	}
	return nil
}

// ParseServices splits a comma-separated list of services and checks it.
func ParseServices(list string) ([]string, error) {
	var out []string
	for s := range strings.SplitSeq(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !slices.Contains(AllServices, s) {
			return nil, fmt.Errorf("unknown service %q (want some of %s)", s, strings.Join(AllServices, ","))
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no service given (want some of %s)", strings.Join(AllServices, ","))
	}
	return out, nil
}

// Validate checks the DSN and the other fields without connecting.
func (c PostgresConfig) Validate() error {
	_, err := parsePostgres(c)
	return err
}
