package roles

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/client"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/activities/notify"
	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/api"
	"github.com/windlass-cd/windlass/api/auth"
	"github.com/windlass-cd/windlass/api/rbac"
	"github.com/windlass-cd/windlass/api/webhook"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/customizations"
	"github.com/windlass-cd/windlass/internal/healthlog"
	"github.com/windlass-cd/windlass/internal/kube"
	"github.com/windlass-cd/windlass/internal/metrics"
	"github.com/windlass-cd/windlass/internal/secretstore"
	"github.com/windlass-cd/windlass/internal/settings"
	"github.com/windlass-cd/windlass/internal/temporalx"
	"github.com/windlass-cd/windlass/internal/testbed"
	"github.com/windlass-cd/windlass/worker"
	"github.com/windlass-cd/windlass/workflows"
)

const (
	msgStarting = "starting"
	msgReady    = "windlass is ready"
	// msgArgoCDCMIgnored names the argocd-cm keys read without effect.
	msgArgoCDCMIgnored = "argocd-cm keys have no effect in windlass"
	msgResourceFilter  = "resource kinds excluded from management"
	msgShuttingDown    = "shutting down"
)

// Dev runs `windlass dev`, configured by the flags args and the
// environment, until ctx ends.
func Dev(ctx context.Context, args []string) error { return start(ctx, args, loadDevConfig, runDev) }

// Server runs `windlass server` until ctx ends.
func Server(ctx context.Context, args []string) error {
	return start(ctx, args, loadServerConfig, runServer)
}

// Worker runs `windlass worker` until ctx ends.
func Worker(ctx context.Context, args []string) error {
	return start(ctx, args, loadWorkerConfig, runWorker)
}

// Temporal runs `windlass temporal` until ctx ends; it prints the
// frontend's address on stdout once the server accepts connections.
func Temporal(ctx context.Context, args []string, stdout io.Writer) error {
	return start(ctx, args, loadTemporalConfig, func(ctx context.Context, cfg temporalConfig) error {
		return runTemporal(ctx, cfg, stdout)
	})
}

// start loads a role's configuration from args, then runs the role.
func start[C any](ctx context.Context, args []string, load func([]string) (C, error), run func(context.Context, C) error) error {
	cfg, err := load(args)
	if err != nil {
		return err
	}
	return run(ctx, cfg)
}

func runDev(ctx context.Context, cfg devConfig) error {
	log, err := newLogger(cfg.LogLevel)
	if err != nil {
		return err
	}
	kcfg, err := kube.LoadConfig(cfg.Kubeconfig)
	if err != nil {
		return fmt.Errorf("no cluster to deploy to (set KUBECONFIG, or use make run, which starts a local one): %w", err)
	}
	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return err
	}
	cleanup := []func(){}
	defer func() {
		for i := len(cleanup) - 1; i >= 0; i-- {
			cleanup[i]()
		}
	}()

	redisAddr := cfg.RedisAddr
	if redisAddr == "" {
		log.Info(msgStarting, "component", "redis")
		dir := filepath.Join(dataDir, "redis")
		_ = testbed.StopDir(dir) // a server left behind by a killed run
		r, err := testbed.StartRedis(ctx, dir)
		if err != nil {
			return fmt.Errorf("start embedded redis: %w", err)
		}
		cleanup = append(cleanup, func() { _ = r.Stop() })
		redisAddr = r.Addr()
	}

	log.Info(msgStarting, "component", "temporal")
	tdir := filepath.Join(dataDir, "temporal")
	dev, err := temporalx.StartDevServer(ctx, temporalx.DevServerConfig{
		DataDir: tdir, Namespace: cfg.Namespace,
		FrontendAddr: cfg.TemporalAddr, UIAddr: cfg.UIAddr,
		SearchAttributes: worker.SearchAttributes(), Logger: log,
		Retention: cfg.Retention, Archival: cfg.archival(tdir),
	})
	if err != nil {
		return fmt.Errorf("start embedded temporal: %w", err)
	}
	cleanup = append(cleanup, func() { _ = dev.Stop() })

	m := metrics.New()
	c, err := temporalx.Dial(ctx, devClientConfig(dev.FrontendAddr(), cfg.Namespace, log, m))
	if err != nil {
		return err
	}
	cleanup = append(cleanup, c.Close)

	cfg.workerSettings.namespace = cfg.Namespace
	cfg.workerSettings.roleProd, cfg.workerSettings.metrics = cfg.prod, m
	cfg.workerSettings.appSets = cfg.apiSettings
	store, sets, err := cfg.prod.openSettings(kcfg, cfg.ManagementNamespace, cfg.ProjectsFile)
	if err != nil {
		return err
	}
	watchProjects(ctx, store, sets, log)
	stopWorker, lib, err := startWorker(ctx, log, c, cfg.workerSettings, redisAddr, cfg.Kubeconfig, sets)
	if err != nil {
		return err
	}
	cleanup = append(cleanup, stopWorker)

	if cfg.TemporalUIURL == "" {
		cfg.TemporalUIURL = dev.UIURL()
	}
	rdb, err := cfg.prod.Redis.client(redisAddr)
	if err != nil {
		return err
	}
	cleanup = append(cleanup, func() { _ = rdb.Close() })
	// The API's health and actions are the worker's (its scripts, reloaded).
	var (
		checker cluster.HealthChecker
		acts    cluster.ActionCatalog
	)
	if lib != nil {
		checker, acts = lib, lib.Actions()
	}
	// So are its argocd-cm rules: the diff and tree leave out what it does.
	rules, err := inspectorRules(cfg.ArgoCDCM)
	if err != nil {
		return err
	}
	insp, err := newInspector(kcfg, rdb, sets, log, checker, acts, c, cfg.Namespace, rules...)
	if err != nil {
		return err
	}
	h, password, err := buildAPI(ctx, log, c, store, sets, rdb, insp, cfg.apiSettings, cfg.Namespace, cfg.RefreshSeconds)
	if err != nil {
		return err
	}
	if err := startFrontDoor(ctx, log, kcfg, h, cfg.apiSettings, cfg.ManagementNamespace); err != nil {
		return err
	}
	probes, err := apiReadiness(c, cfg.Namespace, rdb, kcfg)
	if err != nil {
		return err
	}
	handler, err := cfg.prod.apiOps(ctx, log, h, probes, m, c, cfg.Namespace)
	if err != nil {
		return err
	}
	srv, ln, err := listenAPI(handler, cfg.APIAddr)
	if err != nil {
		return err
	}
	// As Argo CD's argocd-initial-admin-secret: the first password also
	// goes to a file only this user can read, for `windlass login`.
	pwFile := filepath.Join(dataDir, "initial-admin-password")
	login := "admin (initial password in " + pwFile + ")"
	if password != "" {
		if err := os.WriteFile(pwFile, []byte(password+"\n"), 0o600); err != nil {
			return fmt.Errorf("write the initial admin password: %w", err)
		}
		login = "admin / " + password + "   (also in " + pwFile + ")"
	}
	fmt.Printf("\nWindlass is running.\n  Web UI:       http://%s/\n  REST API:     http://%s/api/v1/applications\n  Login:        %s\n  Temporal UI:  %s\n  Temporal:     %s (namespace %s)\n  Cluster:      %s\n  Data dir:     %s\nPress Ctrl-C to stop.\n\n",
		ln.Addr(), ln.Addr(), login, orNone(dev.UIURL()), dev.FrontendAddr(), cfg.Namespace, kcfg.Host, dataDir)
	log.Info(msgReady, "api", ln.Addr().String(), "temporal_ui", dev.UIURL())
	return serve(ctx, log, srv, ln)
}

func orNone(s string) string {
	if s == "" {
		return "(off)"
	}
	return s
}

// connect makes the logger and dials the external Temporal of a
// production role.
func connect(ctx context.Context, cfg common, m *metrics.Metrics) (*slog.Logger, client.Client, error) {
	log, err := newLogger(cfg.LogLevel)
	if err != nil {
		return nil, nil, err
	}
	cc, err := cfg.prod.clientConfig(cfg, log, m)
	if err != nil {
		return nil, nil, err
	}
	c, err := temporalx.Dial(ctx, cc)
	if err != nil {
		return nil, nil, err
	}
	return log, c, nil
}

func runServer(ctx context.Context, cfg serverConfig) error {
	m := metrics.New()
	cfg.apiSettings.taskQueue = cfg.prod.taskQueues()[0]
	log, c, err := connect(ctx, cfg.common, m)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := cfg.prod.registerSearchAttributes(ctx, c, cfg.Namespace, log); err != nil {
		return err
	}
	kcfg, err := kube.LoadConfig(cfg.Kubeconfig)
	if err != nil {
		return fmt.Errorf("the server keeps its settings in Kubernetes Secrets: %w", err)
	}
	store, sets, err := cfg.prod.openSettings(kcfg, cfg.ManagementNamespace, "")
	if err != nil {
		return err
	}
	rdb, err := cfg.prod.Redis.client(cfg.RedisAddr)
	if err != nil {
		return err
	}
	defer rdb.Close()
	cfg.prod.logConnections(log, cfg.common, cfg.RedisAddr)
	rules, err := inspectorRules(cfg.ArgoCDCM)
	if err != nil {
		return err
	}
	// The workers' health scripts and actions, as they publish them.
	mirror := workerCustomizations(ctx, rdb, log)
	insp, err := newInspector(kcfg, rdb, sets, log, mirror, mirror.Actions(), c, cfg.Namespace, rules...)
	if err != nil {
		return err
	}
	h, password, err := buildAPI(ctx, log, c, store, sets, rdb, insp, cfg.apiSettings, cfg.Namespace, 0)
	if err != nil {
		return err
	}
	if err := startFrontDoor(ctx, log, kcfg, h, cfg.apiSettings, cfg.ManagementNamespace); err != nil {
		return err
	}
	if password != "" {
		fmt.Printf("initial admin password (shown once, stored hashed): %s\n", password)
	}
	probes, err := apiReadiness(c, cfg.Namespace, rdb, kcfg)
	if err != nil {
		return err
	}
	handler, err := cfg.prod.apiOps(ctx, log, h, probes, m, c, cfg.Namespace)
	if err != nil {
		return err
	}
	srv, ln, err := listenAPI(handler, cfg.APIAddr)
	if err != nil {
		return err
	}
	log.Info(msgReady, "api", ln.Addr().String())
	return serve(ctx, log, srv, ln)
}

func runWorker(ctx context.Context, cfg workerConfig) error {
	m := metrics.New()
	log, c, err := connect(ctx, cfg.common, m)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := cfg.prod.registerSearchAttributes(ctx, c, cfg.Namespace, log); err != nil {
		return err
	}
	cfg.workerSettings.namespace = cfg.Namespace
	cfg.workerSettings.roleProd, cfg.workerSettings.metrics = cfg.prod, m
	cfg.prod.logConnections(log, cfg.common, cfg.RedisAddr)
	kcfg, err := kube.LoadConfig(cfg.Kubeconfig)
	if err != nil {
		return err
	}
	started, err := cfg.prod.workerOps(ctx, log, c, cfg.Namespace, cfg.RedisAddr, kcfg, m)
	if err != nil {
		return err
	}
	store, sets, err := cfg.prod.openSettings(kcfg, cfg.ManagementNamespace, cfg.ProjectsFile)
	if err != nil {
		return err
	}
	watchProjects(ctx, store, sets, log)
	stop, _, err := startWorker(ctx, log, c, cfg.workerSettings, cfg.RedisAddr, cfg.Kubeconfig, sets)
	if err != nil {
		return err
	}
	defer stop()
	started.Store(true)
	log.Info(msgReady, "task_queues", cfg.prod.taskQueues())
	<-ctx.Done()
	log.Info(msgShuttingDown)
	return nil
}

// watchProjects keeps the projects of a Kubernetes secret store in memory
// (settings.Store.WatchProjects) until ctx ends: every pass of every app
// reads its project.
func watchProjects(ctx context.Context, store secretstore.Store, sets *settings.Store, log *slog.Logger) {
	if k, ok := store.(*secretstore.Kubernetes); ok {
		sets.WatchProjects(ctx, k.Secrets(), log)
	}
}

// startWorker starts the worker role's Temporal worker. It returns how to
// stop it and the health checks it uses, when they have scripts (nil: the
// built-in checks).
func startWorker(ctx context.Context, log *slog.Logger, c client.Client, w workerSettings, redisAddr, kubeconfig string, sets *settings.Store) (func(), *customizations.Library, error) {
	kcfg, err := kube.LoadConfig(kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	creds, err := w.credentials()
	if err != nil {
		return nil, nil, err
	}
	plugins, err := loadPlugins(w.PluginsFile)
	if err != nil {
		return nil, nil, err
	}
	custom, ignored, err := w.customizations()
	if err != nil {
		return nil, nil, err
	}
	if len(ignored) > 0 {
		log.Warn(msgArgoCDCMIgnored, "file", w.ArgoCDCM, "keys", ignored)
	}
	if excl, incl := custom.Resources.Rules(); len(excl)+len(incl) > 0 {
		log.Info(msgResourceFilter, "file", w.ArgoCDCM, "exclusions", len(excl), "inclusions", len(incl))
	}
	plugSrv, stopPlugins, err := w.pluginServer(ctx, plugins, log)
	if err != nil {
		return nil, nil, err
	}
	var sandbox *render.Sandbox
	if w.RenderSandbox {
		exe, err := os.Executable()
		if err != nil {
			return nil, nil, fmt.Errorf("render sandbox: %w", err)
		}
		if sandbox, err = render.NewSandbox(exe, w.RenderLimits, log); err != nil {
			stopPlugins()
			return nil, nil, err
		}
	}
	rdb, err := w.roleProd.Redis.client(redisAddr)
	if err != nil {
		stopPlugins()
		return nil, nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		_ = rdb.Close()
		stopPlugins()
		return nil, nil, fmt.Errorf("redis unreachable at %s: %w", redisAddr, err)
	}
	kustomizeOpts, err := render.ParseKustomizeBuildOptions(w.KustomizeBuildOptions)
	if err != nil {
		return nil, nil, err
	}
	wk, err := worker.New(worker.Config{
		Client: c, CacheDir: w.CacheDir, Redis: rdb, Kube: kcfg,
		KubeOptions: kube.Options{QPS: float32(w.KubeQPS), Burst: w.KubeBurst},
		Logger:      log, MaxConcurrentActivities: w.MaxActivities,
		Credentials: creds, Namespace: w.namespace, Settings: sets, Customizations: custom,
		SweepEvery: w.SweepEvery, Cache: w.cacheConfig(), Plugins: plugins, PluginServer: plugSrv, RenderSandbox: sandbox, RenderMaxFileBytes: w.RenderMaxFileBytes,
		OCI: w.OCI, GitShallowFetch: w.GitShallowFetch, Kustomize: kustomizeOpts, GitSubmoduleRepos: w.GitSubmoduleRepos,
		TaskQueue: w.roleProd.taskQueues()[0], ExtraTaskQueues: w.roleProd.taskQueues()[1:], Metrics: w.metrics,
		SyncImpersonation: w.SyncImpersonation, AppConfig: workflows.AppConfig{RefreshSeconds: w.RefreshSeconds, DriftWatch: true},
		Notifications: w.notifications(), AppSetMaxElements: w.appSets.AppSetMaxElements, AppSetSCMURLs: w.appSets.scmURLs(),
	})
	if err != nil {
		_ = rdb.Close()
		stopPlugins()
		return nil, nil, err
	}
	if err := wk.Start(); err != nil {
		_ = rdb.Close()
		stopPlugins()
		return nil, nil, err
	}
	stop := func() {
		wk.Stop()
		_ = rdb.Close()
		stopPlugins()
		if sandbox != nil {
			sandbox.Close()
		}
	}
	return stop, wk.Customizations(), nil
}

func listenAPI(h http.Handler, addr string) (*http.Server, net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("listen for the api on %s: %w", addr, err)
	}
	return &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}, ln, nil
}

// openSettings opens the secret store in the management namespace and the
// settings on it, with the projects file's projects read-only.
func openSettings(kcfg *rest.Config, namespace, projectsFile string) (secretstore.Store, *settings.Store, error) {
	cs, err := kubernetes.NewForConfig(settingsConfig(kcfg))
	if err != nil {
		return nil, nil, err
	}
	store, err := secretstore.NewKubernetes(cs, namespace)
	if err != nil {
		return nil, nil, err
	}
	projects, err := loadProjects(projectsFile)
	if err != nil {
		return nil, nil, err
	}
	sets, err := settings.New(store, projects...)
	if err != nil {
		return nil, nil, err
	}
	return store, sets, nil
}

// authFile is the --auth-config file.
type authFile struct {
	Accounts []auth.AccountConfig `json:"accounts,omitempty"`
	// Policy holds policy.csv lines; PolicyDefault the role every
	// authenticated caller has (role:readonly, say).
	Policy        string `json:"policy,omitempty"`
	PolicyDefault string `json:"policyDefault,omitempty"`
	// PolicyMatchMode is glob (the default) or regex: how policy objects
	// are matched, as policy.matchMode in argocd-rbac-cm.
	PolicyMatchMode string `json:"policyMatchMode,omitempty"`
	// SSO is single sign-on (sso.go).
	SSO *ssoFile `json:"sso,omitempty"`
}

func loadAuthFile(path string) (authFile, error) {
	var f authFile
	if path == "" {
		return f, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return f, fmt.Errorf("auth config: %w", err)
	}
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		return f, fmt.Errorf("auth config %s: %w", path, err)
	}
	return f, nil
}

// webhookSecrets come from the environment only, never from flags or files
// that end up in logs.
func webhookSecrets() webhook.Secrets {
	return webhook.Secrets{
		GitHub: os.Getenv("WINDLASS_WEBHOOK_GITHUB_SECRET"), GitLab: os.Getenv("WINDLASS_WEBHOOK_GITLAB_SECRET"),
		Bitbucket: os.Getenv("WINDLASS_WEBHOOK_BITBUCKET_SECRET"),
	}
}

const (
	msgProjectsReload = "reload of project roles failed"
	projectsReload    = 30 * time.Second
)

// buildAPI makes the REST API: accounts (bootstrapping admin, whose first
// password it returns), RBAC, settings and webhooks. It reloads the project
// roles periodically, for the changes other replicas make.
func buildAPI(ctx context.Context, log *slog.Logger, c client.Client, store secretstore.Store, sets *settings.Store,
	rdb redis.UniversalClient, insp api.Inspector, a apiSettings, namespace string, refresh int) (*api.Server, string, error) {
	af, err := loadAuthFile(a.AuthConfig)
	if err != nil {
		return nil, "", err
	}
	authSvc, err := auth.New(auth.Config{Accounts: af.Accounts}, store, auth.RedisRevocations{Client: rdb}, log)
	if err != nil {
		return nil, "", err
	}
	password, err := authSvc.Bootstrap(ctx)
	if err != nil {
		return nil, "", err
	}
	ssoHandler, dex, err := buildSSO(ctx, log, af.SSO, a.sso, authSvc, rdb)
	if err != nil {
		return nil, "", err
	}
	projects, err := sets.Projects(ctx)
	if err != nil {
		return nil, "", err
	}
	enf, err := rbac.New(rbac.Config{
		PolicyCSV: af.Policy, DefaultRole: af.PolicyDefault, MatchMode: af.PolicyMatchMode, Logger: log,
	}, projects)
	if err != nil {
		return nil, "", fmt.Errorf("auth config: %w", err)
	}
	healthLog, err := healthlog.New(rdb)
	if err != nil {
		return nil, "", err
	}
	appSets, err := appSetEvaluator(ctx, log, store, sets, a)
	if err != nil {
		return nil, "", err
	}
	srv, err := api.New(c, api.Options{
		Logger: log, Namespace: namespace, Auth: authSvc, RBAC: enf, Settings: sets,
		SSO: ssoHandler, Dex: dex,
		Webhook: webhook.Config{Secrets: webhookSecrets()}, TemporalUIURL: a.TemporalUIURL, TaskQueue: a.taskQueue,
		AppConfig: workflows.AppConfig{RefreshSeconds: refresh, DriftWatch: true}, Inspector: insp,
		Customizations: customizations.RedisStatuses{Client: rdb}, HealthHistory: healthLog, AppSets: appSets,
	})
	if err != nil {
		return nil, "", err
	}
	go func() {
		t := time.NewTicker(projectsReload)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := srv.ReloadProjects(ctx); err != nil && ctx.Err() == nil {
					log.Warn(msgProjectsReload, "error", err)
				}
			}
		}
	}()
	return srv, password, nil
}

// serve serves until ctx ends, then shuts down gracefully.
func serve(ctx context.Context, log *slog.Logger, srv *http.Server, ln net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("api server: %w", err)
	case <-ctx.Done():
	}
	log.Info(msgShuttingDown)
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// loadProjects reads a JSON or YAML list of projects (Windlass's form);
// the default project always exists.
func loadProjects(path string) ([]appspec.Project, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("projects file: %w", err)
	}
	var list []appspec.Project
	if err := yaml.UnmarshalStrict(b, &list); err != nil {
		return nil, fmt.Errorf("projects file %s: %w", path, err)
	}
	return list, nil
}

const msgPluginServerDown = "plugin server not answering yet; plugin renders fail until it does"

// pluginServer is the plugin server the worker's renders use, and how to
// stop it: none without plugins, the external one PluginServer names, or
// a child process of this binary with a scrubbed environment.
func (w workerSettings) pluginServer(ctx context.Context, plugins []render.PluginConfig, log *slog.Logger) (*render.PluginClient, func(), error) {
	if len(plugins) == 0 {
		return nil, func() {}, nil
	}
	if w.PluginServer != "" {
		c, err := render.NewPluginClient(w.PluginServer)
		if err != nil {
			return nil, nil, err
		}
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := c.Ping(pctx); err != nil {
			log.Warn(msgPluginServerDown, "address", w.PluginServer, "error", err) // a sidecar may start later
		}
		return c, func() {}, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("plugin server: %w", err)
	}
	child, err := startPluginChild(ctx, exe, pluginChildEnviron(os.Environ()), log)
	if err != nil {
		return nil, nil, err
	}
	return child.Client(), child.Stop, nil
}

// loadPlugins reads a YAML or JSON list of plugins (Argo CD's plugin.yaml
// spec fields, with a name).
func loadPlugins(path string) ([]render.PluginConfig, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("plugins file: %w", err)
	}
	var list []render.PluginConfig
	if err := yaml.UnmarshalStrict(b, &list); err != nil {
		return nil, fmt.Errorf("plugins file %s: %w", path, err)
	}
	if err := render.ValidatePlugins(list); err != nil {
		return nil, fmt.Errorf("plugins file %s: %w", path, err)
	}
	return list, nil
}

// Client-side rate limit of the settings client. Every app create and
// every sync reads its project's Secret; client-go's default (5/s, burst
// 10) throttled a burst of creates to about 2/s (docs/benchmarks.md).
const (
	settingsQPS   = 200
	settingsBurst = 400
)

// settingsConfig is kcfg with the settings client's rate limit.
func settingsConfig(kcfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(kcfg)
	c.QPS, c.Burst = settingsQPS, settingsBurst
	return c
}

// notifications is the file source of --notifications-config (nil: the
// configuration saved through the API).
func (w workerSettings) notifications() notify.ConfigSource {
	if w.NotificationsConfig == "" {
		return nil
	}
	return &notify.FileSource{Path: w.NotificationsConfig}
}
