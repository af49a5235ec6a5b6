//go:build !nodevserver

package temporalx

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/jackc/pgx/v5/pgconn"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/headers"
	tlog "go.temporal.io/server/common/log"
	"go.temporal.io/server/common/metrics"
	"go.temporal.io/server/common/persistence/serialization"
	persistencesql "go.temporal.io/server/common/persistence/sql"
	"go.temporal.io/server/common/persistence/sql/sqlplugin"
	pgplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql"
	"go.temporal.io/server/common/primitives"
	"go.temporal.io/server/common/resolver"
	pgschema "go.temporal.io/server/schema/postgresql/v12"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
	schematool "go.temporal.io/server/tools/common/schema"
	sqltool "go.temporal.io/server/tools/sql"
)

// Schema directories inside the server module's embedded schema files.
const (
	pgSchemaDefault    = "postgresql/v12/temporal"
	pgSchemaVisibility = "postgresql/v12/visibility"
	// pgSchemaLock is the advisory lock key that serialises schema and
	// namespace setup between processes starting at once.
	pgSchemaLock  = 0x77696e646c617373 // "windlass"
	pgDialTimeout = 10 * time.Second
)

// StartClusterServer starts one process of a Temporal cluster on PostgreSQL.
// See the package documentation for the contract.
func StartClusterServer(ctx context.Context, cfg ClusterServerConfig) (*DevServer, error) {
	started := time.Now()
	t, err := parsePostgres(cfg.Postgres)
	if err != nil {
		return nil, err
	}
	if cfg.HistoryShards == 0 {
		cfg.HistoryShards = DefaultHistoryShards
	}
	if cfg.Retention == 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.Retention < time.Second {
		return nil, fmt.Errorf("cluster server: retention %s is below one second", cfg.Retention)
	}
	if cfg.HistoryShards < 0 {
		return nil, fmt.Errorf("history shards %d: want a positive count", cfg.HistoryShards)
	}
	if len(cfg.Services) == 0 {
		cfg.Services = AllServices
	}
	if cfg.Archival != nil {
		if err := cfg.Archival.Validate(); err != nil {
			return nil, fmt.Errorf("cluster server: archival: %w", err)
		}
	}
	if cfg.Namespace == "" {
		cfg.Namespace = defaultNamespace
	}
	if cfg.FrontendAddr == "" {
		cfg.FrontendAddr = defaultFrontendAddr
	}
	if cfg.AdvertiseIP == "" {
		cfg.AdvertiseIP = "127.0.0.1"
	}
	if err := CheckAdvertiseIP(cfg.AdvertiseIP); err != nil {
		return nil, fmt.Errorf("cluster server: %w", err)
	}
	ip := cfg.AdvertiseIP
	if slices.Contains(cfg.Services, ServiceFrontend) {
		if err := checkFrontendIP(cfg.FrontendAddr, ip); err != nil {
			return nil, fmt.Errorf("cluster server: %w", err)
		}
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	logger = logger.With("component", "temporal")

	defaultStore, visStore := t.sqlConfig(t.database), t.sqlConfig(t.visibility)
	if err := prepareCluster(ctx, t, defaultStore, visStore, cfg, logger); err != nil {
		return nil, err
	}

	serveFrontend := slices.Contains(cfg.Services, ServiceFrontend)
	var frontIP, dialAddr string
	ports := map[primitives.ServiceName][2]int{} // gRPC and membership port
	for _, svc := range cfg.Services {
		name := primitives.ServiceName(svc)
		rpc, err := memberPort(ip)
		if err != nil {
			return nil, err
		}
		if name == primitives.FrontendService {
			if frontIP, rpc, err = frontendPort(cfg.FrontendAddr); err != nil {
				return nil, fmt.Errorf("temporal: frontend address: %w", err)
			}
			dialAddr = net.JoinHostPort(frontIP, strconv.Itoa(rpc))
			if net.ParseIP(frontIP).IsUnspecified() {
				dialAddr = net.JoinHostPort(ip, strconv.Itoa(rpc))
			}
		}
		member, err := memberPort(ip)
		if err != nil {
			return nil, err
		}
		ports[name] = [2]int{rpc, member}
	}

	slogger := serverLogger{l: logger, stopping: new(atomic.Bool)}
	conf := clusterConfig(defaultStore, visStore, cfg.HistoryShards, ip, frontIP, ports)
	archivalServerConfig(conf, cfg.Archival)
	srv, err := temporal.NewServer(
		temporal.WithConfig(conf),
		temporal.ForServices(cfg.Services),
		temporal.WithLogger(slogger),
		temporal.WithDynamicConfigClient(clusterDynamicConfig(cfg.Retention)),
	)
	if err != nil {
		return nil, fmt.Errorf("temporal: create server: %w", err)
	}
	stopServer, err := startServer(srv, slogger, "temporal")
	if err != nil {
		return nil, err
	}
	ds := &DevServer{namespace: cfg.Namespace, stop: stopServer}
	if serveFrontend {
		ds.frontendAddr = dialAddr
		// Visibility's search attributes: new namespaces get them with the
		// namespace; this adds what an older namespace lacks.
		nsCfg := DevServerConfig{Namespace: cfg.Namespace, SearchAttributes: cfg.SearchAttributes, Retention: cfg.Retention, Archival: cfg.Archival}
		if err := setUpNamespace(ctx, dialAddr, nsCfg, logger); err != nil {
			return nil, errors.Join(err, stopServer())
		}
		if err := ds.serveUI(ctx, cfg.UIAddr, logger); err != nil {
			return nil, errors.Join(err, stopServer())
		}
	}
	logger.Info("temporal cluster member started", "services", cfg.Services, "frontend", ds.frontendAddr,
		"postgres", t.String(), "history_shards", cfg.HistoryShards, "advertise", ip, "elapsed", time.Since(started))
	return ds, nil
}

func (t pgTarget) sqlConfig(database string) *config.SQL {
	return &config.SQL{
		PluginName:        pgplugin.PluginNamePGX,
		ConnectAddr:       t.addr,
		ConnectProtocol:   "tcp",
		User:              t.user,
		Password:          t.password,
		DatabaseName:      database,
		ConnectAttributes: t.params,
		MaxConns:          t.maxConns,
		MaxIdleConns:      t.maxConns,
		MaxConnLifetime:   time.Hour,
	}
}

// dsn is a libpq URL for database with the password, for pgconn only.
func (t pgTarget) dsn(database string) string {
	cfg := t.sqlConfig(database)
	u := redactDSN(t.addr, t.user, database)
	q := make([]string, 0, len(cfg.ConnectAttributes)+1)
	for k, v := range cfg.ConnectAttributes {
		q = append(q, k+"="+v)
	}
	if _, ok := cfg.ConnectAttributes["sslmode"]; !ok {
		q = append(q, "sslmode=disable") // as the server's plugin defaults
	}
	slices.Sort(q)
	return u + "?" + strings.Join(q, "&")
}

// connect opens a connection to database as the target's user, and makes
// the failures an operator meets clear: nothing listening, a refused login.
func (t pgTarget) connect(ctx context.Context, database string) (*pgconn.PgConn, error) {
	pc, err := pgconn.ParseConfig(t.dsn(database))
	if err != nil {
		return nil, fmt.Errorf("postgres %s: %w", redactDSN(t.addr, t.user, database), err)
	}
	pc.Password = t.password
	pc.ConnectTimeout = pgDialTimeout
	conn, err := pgconn.ConnectConfig(ctx, pc)
	if err == nil {
		return conn, nil
	}
	where := redactDSN(t.addr, t.user, database)
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && (pgErr.Code == "28P01" || pgErr.Code == "28000"):
		return nil, fmt.Errorf("%w: %s: wrong user or password (%s)", ErrPostgresAuth, where, pgErr.Message)
	case errors.As(err, &pgErr):
		return nil, fmt.Errorf("postgres %s: %w", where, err)
	default:
		return nil, fmt.Errorf("%w: %s: %w", ErrPostgresUnreachable, where, err)
	}
}

// ensureDatabase creates database unless it exists, through the server's
// maintenance database "postgres".
func (t pgTarget) ensureDatabase(ctx context.Context, database string) error {
	conn, err := t.connect(ctx, database)
	if err == nil {
		return conn.Close(ctx)
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "3D000" { // invalid_catalog_name
		return err
	}
	admin, err := t.connect(ctx, "postgres")
	if err != nil {
		return fmt.Errorf("create database %s: %w", database, err)
	}
	defer admin.Close(ctx)
	quoted := `"` + database + `"`
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+quoted).ReadAll(); err != nil {
		if errors.As(err, &pgErr) && pgErr.Code == "42P04" { // another process was first
			return nil
		}
		return fmt.Errorf("create database %s: %w", database, err)
	}
	return nil
}

// prepareCluster creates the databases, creates or upgrades their schemas,
// checks the shard count and registers the namespace, holding an advisory
// lock so that processes starting together take turns.
func prepareCluster(ctx context.Context, t pgTarget, defaultStore, visStore *config.SQL, cfg ClusterServerConfig, logger *slog.Logger) error {
	for _, db := range []string{t.database, t.visibility} {
		if err := t.ensureDatabase(ctx, db); err != nil {
			return fmt.Errorf("temporal: %w", err)
		}
	}
	lock, err := t.connect(ctx, t.database)
	if err != nil {
		return fmt.Errorf("temporal: %w", err)
	}
	defer lock.Close(context.WithoutCancel(ctx))
	if _, err := lock.Exec(ctx, "SELECT pg_advisory_lock("+strconv.FormatInt(pgSchemaLock, 10)+")").ReadAll(); err != nil {
		return fmt.Errorf("temporal: lock %s for setup: %w", t, err)
	}

	tl := tlog.NewNoopLogger()
	if err := ensureSchema(defaultStore, pgSchemaDefault, pgschema.Version, tl, logger); err != nil {
		return err
	}
	if err := ensureSchema(visStore, pgSchemaVisibility, pgschema.VisibilityVersion, tl, logger); err != nil {
		return err
	}
	if err := checkShardCount(ctx, defaultStore, cfg.HistoryShards); err != nil {
		return err
	}
	ns, err := sqliteschema.NewNamespaceConfig(clusterName, cfg.Namespace, false, cfg.SearchAttributes)
	if err != nil {
		return fmt.Errorf("temporal: namespace config: %w", err)
	}
	newNamespaceConfig(ns.Detail.Config, cfg.Retention, cfg.Archival)
	// CreateNamespaces writes through whichever SQL plugin the config names.
	if err := sqliteschema.CreateNamespaces(defaultStore, ns); err != nil {
		return fmt.Errorf("temporal: register namespace: %w", err)
	}
	return nil
}

// ensureSchema sets up the schema of a new database and upgrades an older
// one to want, from the schema files embedded in the server module. A
// database at a newer version is refused: this server cannot run on it.
func ensureSchema(store *config.SQL, schemaName, want string, tl tlog.Logger, logger *slog.Logger) error {
	where := redactDSN(store.ConnectAddr, store.User, store.DatabaseName)
	conn, err := sqltool.NewConnection(store, tl)
	if err != nil {
		return fmt.Errorf("temporal: connect %s: %w", where, err)
	}
	defer conn.Close()
	tables, err := conn.ListTables()
	if err != nil {
		return fmt.Errorf("temporal: list tables of %s: %w", where, err)
	}
	have := "0.0"
	if slices.Contains(tables, "schema_version") {
		if have, err = conn.ReadSchemaVersion(); err != nil {
			return fmt.Errorf("temporal: read schema version of %s: %w", where, err)
		}
	} else {
		setup := &schematool.SetupConfig{InitialVersion: "0.0"}
		if err := schematool.NewSetupSchemaTask(conn, setup, tl).Run(); err != nil {
			return fmt.Errorf("temporal: set up schema of %s: %w", where, err)
		}
	}
	hv, err := semver.NewVersion(have)
	if err != nil {
		return fmt.Errorf("temporal: schema version %q of %s: %w", have, where, err)
	}
	wv := semver.MustParse(want)
	switch {
	case hv.GreaterThan(wv):
		return fmt.Errorf("%w: %s has schema %s, this Temporal server %s knows up to %s; run a newer windlass",
			ErrSchemaTooNew, where, have, headers.ServerVersion, want)
	case hv.Equal(wv):
		return nil
	}
	update := &schematool.UpdateConfig{DBName: store.DatabaseName, SchemaName: schemaName, TargetVersion: want}
	if err := schematool.NewUpdateSchemaTask(conn, update, tl).Run(); err != nil {
		return fmt.Errorf("temporal: upgrade schema of %s from %s to %s: %w", where, have, want, err)
	}
	logger.Info("temporal schema upgraded", "database", where, "from", have, "to", want)
	return nil
}

// checkShardCount refuses a shard count other than the one the cluster's
// metadata recorded at the first start. The server itself would go on with
// the recorded count and only log a warning.
func checkShardCount(ctx context.Context, store *config.SQL, want int32) error {
	db, err := persistencesql.NewSQLDB(sqlplugin.DbKindMain, store, resolver.NewNoopResolver(), tlog.NewNoopLogger(), metrics.NoopMetricsHandler)
	if err != nil {
		return fmt.Errorf("temporal: open %s: %w", store.DatabaseName, err)
	}
	defer db.Close()
	row, err := db.GetClusterMetadata(ctx, &sqlplugin.ClusterMetadataFilter{ClusterName: clusterName})
	if errors.Is(err, sql.ErrNoRows) {
		return nil // first start: the server records want
	}
	if err != nil {
		return fmt.Errorf("temporal: read cluster metadata: %w", err)
	}
	enc, err := enums.EncodingTypeFromString(row.DataEncoding)
	if err != nil {
		return fmt.Errorf("temporal: cluster metadata encoding: %w", err)
	}
	md, err := serialization.NewSerializer().DeserializeClusterMetadata(&commonpb.DataBlob{Data: row.Data, EncodingType: enc})
	if err != nil {
		return fmt.Errorf("temporal: decode cluster metadata: %w", err)
	}
	if md.GetHistoryShardCount() != want {
		return fmt.Errorf("%w: the database was created with %d history shards and --history-shards is %d; the count is fixed at the first start",
			ErrShardCountChanged, md.GetHistoryShardCount(), want)
	}
	return nil
}

// clusterConfig is the server configuration of one cluster member: both
// stores on PostgreSQL, ringpop membership on the advertised IP (seeded
// from the cluster_membership table), and internal clients that find a
// frontend through membership.
func clusterConfig(defaultStore, visStore *config.SQL, shards int32, ip, frontIP string, ports map[primitives.ServiceName][2]int) *config.Config {
	conf := &config.Config{}
	conf.Global.Membership.MaxJoinDuration = 30 * time.Second
	conf.Global.Membership.BroadcastAddress = ip
	conf.Persistence.DefaultStore = "default"
	conf.Persistence.VisibilityStore = "visibility"
	conf.Persistence.NumHistoryShards = shards
	conf.Persistence.DataStores = map[string]config.DataStore{
		"default":    {SQL: defaultStore},
		"visibility": {SQL: visStore},
	}
	rpcAddr := defaultFrontendAddr
	if p, ok := ports[primitives.FrontendService]; ok {
		rpcAddr = net.JoinHostPort(ip, strconv.Itoa(p[0]))
	}
	conf.ClusterMetadata = &cluster.Config{
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{
			clusterName: {Enabled: true, InitialFailoverVersion: 1, RPCAddress: rpcAddr},
		},
	}
	conf.DCRedirectionPolicy.Policy = "noop"
	conf.Services = make(map[string]config.Service, len(ports))
	for svc, p := range ports {
		var s config.Service
		s.RPC.GRPCPort = p[0]
		s.RPC.MembershipPort = p[1]
		s.RPC.BindOnIP = ip
		if svc == primitives.FrontendService {
			s.RPC.BindOnIP = frontIP
		}
		conf.Services[string(svc)] = s
	}
	return conf
}

// checkFrontendIP refuses a frontend bound where other members, which dial
// it at the advertised IP, cannot reach it.
func checkFrontendIP(addr, ip string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("frontend address %q: %w", addr, err)
	}
	if host == "" || host == "localhost" {
		host = "127.0.0.1"
	}
	if fip := net.ParseIP(host); fip != nil && !fip.IsUnspecified() && !fip.Equal(net.ParseIP(ip)) {
		return fmt.Errorf("frontend address %s: other members reach this process at %s; bind the frontend on %s or 0.0.0.0", addr, ip, ip)
	}
	return nil
}

// maxMemberPort is the highest port the cluster_membership table can hold
// (its rpc_port column is a smallint).
const maxMemberPort = 32767

// frontendPort is resolveAddr with port 0 picked by memberPort, and a
// refusal of a port the membership table cannot hold.
func frontendPort(addr string) (string, int, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	if port == "0" {
		ip, _, err := resolveAddr(net.JoinHostPort(host, "1"))
		if err != nil {
			return "", 0, err
		}
		p, err := memberPort(ip)
		return ip, p, err
	}
	ip, p, err := resolveAddr(addr)
	if err == nil && p > maxMemberPort {
		err = fmt.Errorf("port %d: a cluster member's ports must be at most %d (Temporal's membership table)", p, maxMemberPort)
	}
	return ip, p, err
}

// memberPort picks a free port on ip at random in [20000, 32767]: below
// the kernel's usual ephemeral range, which the membership table cannot
// hold.
func memberPort(ip string) (int, error) {
	const low = 20000
	for range 200 {
		p := low + rand.IntN(maxMemberPort-low+1)
		l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(p)))
		if err != nil {
			continue
		}
		_ = l.Close()
		return p, nil
	}
	return 0, fmt.Errorf("no free port in [%d, %d] on %s", low, maxMemberPort, ip)
}

// clusterDynamicConfig is the cluster's static dynamic config; it lets the
// namespace take a retention below the server's minimum, as in dev.
func clusterDynamicConfig(retention time.Duration) dynamicconfig.StaticClient {
	dc := dynamicconfig.StaticClient{
		dynamicconfig.QueueReaderStuckCriticalAttempts.Key():             0,
		dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key(): 100,
	}
	retentionDynamicConfig(dc, retention, 0)
	return dc
}
