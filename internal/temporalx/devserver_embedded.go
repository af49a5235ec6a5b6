//go:build !nodevserver

package temporalx

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uioptions "github.com/temporalio/ui-server/v2/server/server_options"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/membership/static"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
)

const (
	dbFileName     = "temporal.db"
	clusterName    = "active"
	historyShards  = 4
	uiReadyTimeout = 10 * time.Second
)

// sqliteConnectAttributes become the DSN of the SQLite file: the plugin
// passes every attribute it does not know as a URI parameter as
// _pragma=<key>=<value>, which modernc.org/sqlite runs on each new connection.
// The plugin also allows MaxConns > 1 only when journal_mode is wal; we keep
// its default of one connection.
func sqliteConnectAttributes() map[string]string {
	return map[string]string{
		"mode":         "rwc",
		"journal_mode": "wal",
		"synchronous":  "normal",
	}
}

// DevServerBuiltIn tells whether this build has the embedded server.
const DevServerBuiltIn = true

// StartDevServer starts an embedded Temporal server and, unless disabled, the
// Web UI, and returns once both accept connections, the namespace exists and
// the search attributes are registered. See the package documentation for the
// contract.
func StartDevServer(ctx context.Context, cfg DevServerConfig) (*DevServer, error) {
	started := time.Now()
	if cfg.DataDir == "" {
		return nil, errors.New("dev server: data dir is required")
	}
	if cfg.Namespace == "" {
		cfg.Namespace = defaultNamespace
	}
	if cfg.FrontendAddr == "" {
		cfg.FrontendAddr = defaultFrontendAddr
	}
	if cfg.Retention == 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.Retention < time.Second {
		return nil, fmt.Errorf("dev server: retention %s is below one second", cfg.Retention)
	}
	if cfg.Archival != nil {
		if err := cfg.Archival.Validate(); err != nil {
			return nil, fmt.Errorf("dev server: archival: %w", err)
		}
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	logger = logger.With("component", "temporal")

	frontIP, frontPort, err := resolveAddr(cfg.FrontendAddr)
	if err != nil {
		return nil, fmt.Errorf("dev server: frontend address: %w", err)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("dev server: create data dir: %w", err)
	}

	sqlCfg := &config.SQL{
		PluginName:        sqliteplugin.PluginName,
		DatabaseName:      filepath.Join(cfg.DataDir, dbFileName),
		ConnectAttributes: sqliteConnectAttributes(),
	}
	if err := prepareDatabase(sqlCfg, cfg, logger); err != nil {
		return nil, err
	}

	// Internal services listen on loopback ports of their own; their
	// addresses live only in static membership, so they can change at every
	// start.
	svcPorts := make(map[primitives.ServiceName]int, 4)
	svcPorts[primitives.FrontendService] = frontPort
	for _, svc := range []primitives.ServiceName{primitives.HistoryService, primitives.MatchingService, primitives.WorkerService} {
		if svcPorts[svc], err = freePort("127.0.0.1"); err != nil {
			return nil, fmt.Errorf("dev server: %w", err)
		}
	}
	// Clients, the UI and the server's own services reach a frontend bound
	// to all interfaces through loopback.
	dialAddr := net.JoinHostPort(frontIP, strconv.Itoa(frontPort))
	if net.ParseIP(frontIP).IsUnspecified() {
		dialAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(frontPort))
	}

	slogger := serverLogger{l: logger, stopping: new(atomic.Bool)}
	dc := dynamicconfig.StaticClient{
		// Without this the history queue's "reader stuck" detector delays
		// timers by 50-200 s under load.
		dynamicconfig.QueueReaderStuckCriticalAttempts.Key(): 0,
		// The UI lists workflows through visibility; the default of 10/s
		// is easily exceeded by one browser tab.
		dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key(): 100,
	}
	retentionDynamicConfig(dc, cfg.Retention, cfg.RetentionJitter)
	conf := serverConfig(sqlCfg, frontIP, dialAddr, svcPorts)
	archivalServerConfig(conf, cfg.Archival)
	opts := []temporal.ServerOption{
		temporal.WithConfig(conf),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithStaticHosts(staticHosts(dialAddr, svcPorts)),
		temporal.WithLogger(slogger),
		temporal.WithDynamicConfigClient(dc),
	}
	srv, err := temporal.NewServer(opts...)
	if err != nil {
		return nil, fmt.Errorf("dev server: create server: %w", err)
	}
	stopServer, err := startServer(srv, slogger, "dev server")
	if err != nil {
		return nil, err
	}

	if err := setUpNamespace(ctx, dialAddr, cfg, logger); err != nil {
		return nil, errors.Join(err, stopServer())
	}

	ds := &DevServer{
		frontendAddr: dialAddr,
		namespace:    cfg.Namespace,
		stop:         stopServer,
	}
	if err := ds.serveUI(ctx, cfg.UIAddr, logger); err != nil {
		return nil, errors.Join(err, ds.stop())
	}
	logger.Info("temporal dev server started",
		"frontend", ds.frontendAddr, "ui", ds.uiURL, "namespace", ds.namespace,
		"db", sqlCfg.DatabaseName, "elapsed", time.Since(started))
	return ds, nil
}

// prepareDatabase creates the schema in a new database file and registers the
// namespace, which is a no-op when it already exists. A new namespace gets the
// search attributes at once; an existing one gets missing ones later through
// the operator service.
func prepareDatabase(sqlCfg *config.SQL, cfg DevServerConfig, logger *slog.Logger) error {
	_, err := os.Stat(sqlCfg.DatabaseName)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := sqliteschema.SetupSchema(sqlCfg); err != nil {
			return fmt.Errorf("dev server: set up sqlite schema: %w", err)
		}
		logger.Info("temporal database created", "db", sqlCfg.DatabaseName)
	case err != nil:
		return fmt.Errorf("dev server: stat database: %w", err)
	}

	ns, err := sqliteschema.NewNamespaceConfig(clusterName, cfg.Namespace, false, cfg.SearchAttributes)
	if err != nil {
		return fmt.Errorf("dev server: namespace config: %w", err)
	}
	newNamespaceConfig(ns.Detail.Config, cfg.Retention, cfg.Archival)
	if err := sqliteschema.CreateNamespaces(sqlCfg, ns); err != nil {
		return fmt.Errorf("dev server: register namespace: %w", err)
	}
	return nil
}

func serverConfig(sqlCfg *config.SQL, bindIP, dialAddr string, ports map[primitives.ServiceName]int) *config.Config {
	const store = "sqlite"
	conf := &config.Config{}
	conf.Global.Membership.MaxJoinDuration = 30 * time.Second
	conf.Global.Membership.BroadcastAddress = "127.0.0.1"
	conf.Persistence.DefaultStore = store
	conf.Persistence.VisibilityStore = store
	// Only used when the database is new; the persisted count wins after.
	conf.Persistence.NumHistoryShards = historyShards
	conf.Persistence.DataStores = map[string]config.DataStore{store: {SQL: sqlCfg}}
	conf.ClusterMetadata = &cluster.Config{
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{
			clusterName: {
				Enabled:                true,
				InitialFailoverVersion: 1,
				RPCAddress:             dialAddr,
			},
		},
	}
	conf.DCRedirectionPolicy.Policy = "noop"
	conf.Services = make(map[string]config.Service, len(ports))
	for svc, port := range ports {
		var s config.Service
		s.RPC.GRPCPort = port
		s.RPC.BindOnIP = "127.0.0.1"
		if svc == primitives.FrontendService {
			s.RPC.BindOnIP = bindIP
		}
		conf.Services[string(svc)] = s
	}
	conf.PublicClient.HostPort = dialAddr
	return conf
}

func staticHosts(frontendAddr string, ports map[primitives.ServiceName]int) map[primitives.ServiceName]static.Hosts {
	hosts := make(map[primitives.ServiceName]static.Hosts, len(ports))
	for svc, port := range ports {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if svc == primitives.FrontendService {
			addr = frontendAddr
		}
		hosts[svc] = static.SingleLocalHost(addr)
	}
	return hosts
}

// setUpNamespace brings an existing namespace's retention and archival to
// the configured ones, and adds the custom search attributes it lacks. One
// that exists with another type is an error.
func setUpNamespace(ctx context.Context, addr string, cfg DevServerConfig, logger *slog.Logger) error {
	namespace, want := cfg.Namespace, cfg.SearchAttributes
	c, err := Dial(ctx, ClientConfig{HostPort: addr, Namespace: namespace, Logger: logger})
	if err != nil {
		return fmt.Errorf("dev server: %w", err)
	}
	defer c.Close()
	if err := reconcileNamespace(ctx, c.WorkflowService(), namespace, cfg.Retention, cfg.Archival, logger); err != nil {
		return fmt.Errorf("dev server: %w", err)
	}
	if len(want) == 0 {
		return nil
	}

	added, err := EnsureSearchAttributes(ctx, c, namespace, want)
	if err != nil {
		return fmt.Errorf("dev server: %w", err)
	}
	if len(added) > 0 {
		logger.Info("temporal search attributes added", "namespace", namespace, "count", len(added))
	}
	return nil
}

// startServer starts srv and returns its stop, which first quiets the
// server's log; what names the server in errors.
func startServer(srv temporal.Server, slogger serverLogger, what string) (func() error, error) {
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("%s: start server: %w", what, err)
	}
	return func() error {
		slogger.stopping.Store(true)
		if err := srv.Stop(); err != nil {
			return fmt.Errorf("%s: stop server: %w", what, err)
		}
		return nil
	}, nil
}

// serveUI serves the Web UI for ds's frontend on addr ("" or "off": no
// UI), and makes ds's stop stop it first.
func (ds *DevServer) serveUI(ctx context.Context, addr string, logger *slog.Logger) error {
	if addr == "" || addr == "off" {
		return nil
	}
	ui, url, err := startUI(ctx, addr, ds.frontendAddr, ds.namespace, logger)
	if err != nil {
		return err
	}
	stopServer := ds.stop
	ds.uiURL = url
	ds.stop = func() error {
		ui.Stop()
		return stopServer()
	}
	return nil
}

// startUI serves the Web UI on addr and waits until it answers.
func startUI(ctx context.Context, addr, frontendAddr, namespace string, logger *slog.Logger) (*uiserver.Server, string, error) {
	ip, port, err := resolveAddr(addr)
	if err != nil {
		return nil, "", fmt.Errorf("dev server: ui address: %w", err)
	}
	// ui-server's Start exits the process when it cannot listen, so make sure
	// here that the port is free. Another process could still take it in the
	// short window before the UI binds.
	l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		return nil, "", fmt.Errorf("dev server: ui address: %w", err)
	}
	_ = l.Close()

	host := ip
	if net.ParseIP(ip).To4() == nil {
		host = "[" + ip + "]" // ui-server joins host and port with a bare colon
	}
	ui := uiserver.NewServer(uioptions.WithConfigProvider(&uiconfig.Config{
		Host:                host,
		Port:                port,
		TemporalGRPCAddress: frontendAddr,
		EnableUI:            true,
		DefaultNamespace:    namespace,
		CORS:                uiconfig.CORS{CookieInsecure: true},
		HideLogs:            true,
		DisableNewsFetch:    true,
	}))
	go func() {
		// Start blocks until Stop and returns nil then.
		if err := ui.Start(); err != nil {
			logger.Error("temporal ui stopped", "error", err)
		}
	}()

	connectHost := ip
	if net.ParseIP(ip).IsUnspecified() {
		connectHost = "127.0.0.1"
	}
	url := "http://" + net.JoinHostPort(connectHost, strconv.Itoa(port))
	if err := waitHTTP(ctx, url+"/healthz"); err != nil {
		ui.Stop()
		return nil, "", fmt.Errorf("dev server: ui not ready: %w", err)
	}
	return ui, url, nil
}

func waitHTTP(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, uiReadyTimeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %w)", ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// resolveAddr splits host:port into an IP literal and a port, picking a free
// port for port 0. An empty host or "localhost" means 127.0.0.1.
func resolveAddr(addr string) (string, int, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	if host == "" || host == "localhost" {
		host = "127.0.0.1"
	}
	if net.ParseIP(host) == nil {
		return "", 0, fmt.Errorf("host %q is not an IP address", host)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("bad port %q", portStr)
	}
	if port == 0 {
		if port, err = freePort(host); err != nil {
			return "", 0, err
		}
	}
	return host, port, nil
}

// freePort asks the kernel for a free port on ip. The port is released
// before the server binds it, so another process could take it in between.
func freePort(ip string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, fmt.Errorf("pick free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
