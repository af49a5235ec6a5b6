package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"k8s.io/client-go/rest"

	"github.com/windlass-cd/windlass/activities/appsets"
	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/activities/depends"
	"github.com/windlass-cd/windlass/activities/notify"
	"github.com/windlass-cd/windlass/activities/placement"
	"github.com/windlass-cd/windlass/activities/project"
	"github.com/windlass-cd/windlass/activities/reconcile"
	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/activities/rollout"
	"github.com/windlass-cd/windlass/activities/source"
	"github.com/windlass-cd/windlass/activities/watch"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/customizations"
	"github.com/windlass-cd/windlass/internal/ghapp"
	"github.com/windlass-cd/windlass/internal/healthlog"
	"github.com/windlass-cd/windlass/internal/kube"
	"github.com/windlass-cd/windlass/internal/metrics"
	"github.com/windlass-cd/windlass/internal/repocred"
	"github.com/windlass-cd/windlass/internal/secretstore"
	"github.com/windlass-cd/windlass/internal/settings"
	"github.com/windlass-cd/windlass/worker/children"
	"github.com/windlass-cd/windlass/workflows"
)

// Config holds what a worker needs.
type Config struct {
	Client    client.Client
	TaskQueue string
	// ExtraTaskQueues are polled too, with the same workflows and
	// activities: a worker limited to some task queues (windlass worker
	// --task-queue, repeated).
	ExtraTaskQueues []string
	// CacheDir holds the Git mirrors and checkouts.
	CacheDir    string
	Redis       redis.UniversalClient
	Kube        *rest.Config
	KubeOptions kube.Options
	Credentials source.Credentials
	Logger      *slog.Logger
	// MaxConcurrentActivities bounds parallel activities (0: SDK default).
	MaxConcurrentActivities int
	// Cache settings; zero values take the defaults below.
	Cache CacheConfig
	// Namespace is the Temporal namespace (for the self-heal sweep's
	// visibility queries; default "default").
	Namespace string
	// Projects serves the projects (default: only the built-in default
	// project).
	Projects project.Store
	// Health assesses resource health (default: the built-in checks, with
	// Customizations' scripts when it has any).
	Health cluster.HealthChecker
	// Actions lists and runs resource actions (default: the built-ins);
	// pass an *actions.Catalog to add Lua actions.
	Actions cluster.ActionCatalog
	// Customizations are the Lua health checks and action scripts, loaded
	// and reloaded by the worker, and the system-wide ignoreDifferences.
	Customizations CustomizationsConfig
	// SweepEvery is how often the self-heal sweep runs (default 5 min;
	// negative: no schedule).
	SweepEvery time.Duration
	// WatchDebounce gathers drift events per app (default 1 s).
	WatchDebounce time.Duration
	// NoClusterWatch leaves the in-cluster watch workflow unstarted.
	NoClusterWatch bool
	// Plugins are the config-management plugins renders may use.
	Plugins []render.PluginConfig
	// PluginServer runs the plugins in a process without the worker's
	// credentials (nil: the renders run them).
	PluginServer *render.PluginClient
	// RenderSandbox, when set, runs every render in a child process under
	// its limits (nil: in the worker's process).
	RenderSandbox *render.Sandbox
	// RenderMaxFileBytes bounds each file a render reads from a repository
	// (0: render.DefaultMaxFileBytes).
	RenderMaxFileBytes int64
	// OCI bounds the artifacts of oci:// sources (zero fields: the
	// defaults).
	OCI source.OCILimits
	// GitShallowFetch fetches a commit alone into an empty mirror
	// (source.WithShallowFetch).
	GitShallowFetch bool
	// Kustomize are the build options of every kustomization.
	Kustomize render.KustomizeOptions
	// GitSubmoduleRepos, when set, checks submodules out, those whose
	// URL they match (source.WithSubmodules).
	GitSubmoduleRepos []string
	// Metrics records render and cluster measurements (nil: none; its
	// methods are nil-safe).
	Metrics *metrics.Metrics
	// Settings, when set, serves the projects (unless Projects is set),
	// the credentials of registered repositories (before Credentials) and
	// the registered destination clusters.
	Settings *settings.Store
	// SyncImpersonation makes syncs write as the service account their
	// project names for the destination (destinationServiceAccounts), as
	// Argo CD's application.sync.impersonation.enabled does.
	SyncImpersonation bool
	// Notifications is the notifications configuration (nil: the one the
	// API saved in Settings' secret store, or none without Settings).
	Notifications notify.ConfigSource
	// AppConfig is passed to the app workflows that app of apps and
	// ApplicationSets create (as the API's Options.AppConfig).
	AppConfig workflows.AppConfig
	// AppSetMaxElements bounds the apps one ApplicationSet yields (0:
	// appset.DefaultLimit); AppSetSCMURLs are the provider APIs besides
	// the public ones that a set's tokenRef may be sent to.
	AppSetMaxElements int
	AppSetSCMURLs     []string
}

// CacheConfig bounds the worker's caches.
type CacheConfig struct {
	// RefTTL is how long ls-remote results are shared through Redis
	// (default source.DefaultRefCacheTTL; negative: no sharing).
	RefTTL time.Duration
	// ManifestTTL is how long rendered manifests, and the resource lists
	// of compares, stay in Redis (default render.CacheTTL).
	ManifestTTL time.Duration
	// TreesMaxBytes and TreesMaxAge bound the Git checkouts on disk
	// (defaults DefaultTreesMaxBytes and DefaultTreesMaxAge); EvictEvery is
	// how often they are enforced (default DefaultEvictEvery).
	TreesMaxBytes int64
	TreesMaxAge   time.Duration
	EvictEvery    time.Duration
}

// Defaults of CacheConfig.
const (
	DefaultTreesMaxBytes = 10 << 30
	DefaultTreesMaxAge   = 24 * time.Hour
	DefaultEvictEvery    = 10 * time.Minute
)

func (c *CacheConfig) setDefaults() {
	if c.TreesMaxBytes <= 0 {
		c.TreesMaxBytes = DefaultTreesMaxBytes
	}
	if c.TreesMaxAge <= 0 {
		c.TreesMaxAge = DefaultTreesMaxAge
	}
	if c.EvictEvery <= 0 {
		c.EvictEvery = DefaultEvictEvery
	}
}

// The factory discovers kinds, so prune finds tracked objects of any kind.
var _ cluster.ResourceDiscoverer = (*kube.Factory)(nil)

// The Git source limits submodules to the app's project.
var _ render.ScopedCheckouter = (*source.Activities)(nil)

// Worker is a running Temporal worker.
type Worker struct {
	ws    []sdkworker.Worker
	src   *source.Activities
	lib   *customizations.Library // nil: no customizations
	cache CacheConfig
	log   *slog.Logger
	stop  context.CancelFunc
	wg    sync.WaitGroup
	cfg   Config
}

// New builds the activities and registers everything.
func New(cfg Config) (*Worker, error) {
	if cfg.Client == nil || cfg.Redis == nil || cfg.Kube == nil {
		return nil, errors.New("worker: temporal client, redis and kube config are required")
	}
	if cfg.TaskQueue == "" {
		cfg.TaskQueue = workflows.TaskQueue
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	cfg.Cache.setDefaults()
	if err := render.ValidatePlugins(cfg.Plugins); err != nil {
		return nil, fmt.Errorf("worker: plugins: %w", err)
	}
	srcOpts := []source.Option{source.WithOCILimits(cfg.OCI), source.WithShallowFetch(cfg.GitShallowFetch)}
	if len(cfg.GitSubmoduleRepos) > 0 {
		srcOpts = append(srcOpts, source.WithSubmodules(cfg.GitSubmoduleRepos))
	}
	if cfg.Cache.RefTTL >= 0 {
		srcOpts = append(srcOpts, source.WithRefCache(source.RedisRefCache{Client: cfg.Redis}, cfg.Cache.RefTTL))
	}
	var creds source.CredentialResolver = cfg.Credentials
	// One GitHub App token cache serves Git fetches and notifications.
	apps := ghapp.NewTokens()
	// repoCreds finds chart repositories' credentials and the project
	// scope of registered repositories.
	var repoCreds *repocred.Resolver
	var chartCreds render.CredentialLookup // nil, not a nil *Resolver
	if cfg.Settings != nil {
		var err error
		if repoCreds, err = repocred.NewResolver(cfg.Settings, 0); err != nil {
			return nil, err
		}
		chartCreds = repoCreds
		creds = &source.RegisteredAuth{Repos: cfg.Settings, Fallback: cfg.Credentials, KnownHostsDir: filepath.Join(cfg.CacheDir, "known_hosts"),
			GitHubApps: apps}
		if cfg.KubeOptions.Resolver == nil {
			cfg.KubeOptions.Resolver = cfg.Settings.ClusterConfig
		}
		if cfg.Projects == nil {
			cfg.Projects = cfg.Settings
		}
	}
	src, err := source.New(cfg.CacheDir, creds, log, srcOpts...)
	if err != nil {
		return nil, err
	}
	var gpgKeys render.GPGKeyLister // nil, not a nil *settings.Store
	if cfg.Settings != nil {
		gpgKeys = cfg.Settings
	}
	renderer, err := render.NewRenderer(render.Config{
		Store: render.RedisStore{Client: cfg.Redis}, Git: src, Revisions: src, CacheDir: filepath.Join(cfg.CacheDir, "render"),
		CacheTTL: cfg.Cache.ManifestTTL, Plugins: cfg.Plugins, PluginServer: cfg.PluginServer, Logger: log, Metrics: cfg.Metrics, Sandbox: cfg.RenderSandbox,
		MaxFileBytes: cfg.RenderMaxFileBytes, Credentials: chartCreds, Kustomize: cfg.Kustomize, Commits: src, GPGKeys: gpgKeys,
	})
	if err != nil {
		return nil, err
	}
	rnd, err := render.New(renderer)
	if err != nil {
		return nil, err
	}
	clusters := kube.NewFactory(cfg.Kube, cfg.KubeOptions)
	// A compare's full resource list, when longer than the workflow
	// keeps, waits in the manifests' Redis for the API.
	clOpts := []cluster.Option{cluster.WithMetrics(cfg.Metrics), cluster.WithResourceLists(render.RedisStore{Client: cfg.Redis}, cfg.Cache.ManifestTTL)}
	// Each compare's health changes go to the same Redis, for the API's
	// health timeline.
	healthLog, err := healthlog.New(cfg.Redis)
	if err != nil {
		return nil, err
	}
	clOpts = append(clOpts, cluster.WithHealthLog(healthLog))
	var lib *customizations.Library
	// With settings, the source may be set through the API at any time.
	var custSettings CustomizationsSettings
	if cfg.Settings != nil {
		custSettings = cfg.Settings
	}
	if cfg.Customizations.scripted() || custSettings != nil {
		if lib, err = newLibrary(cfg.Customizations, src, custSettings, cfg.Redis, cfg.Metrics, log); err != nil {
			return nil, err
		}
		if cfg.Health == nil {
			cfg.Health = lib
		}
	}
	if cfg.Health != nil {
		clOpts = append(clOpts, cluster.WithHealthChecker(cfg.Health))
	}
	if cfg.Actions == nil && lib != nil {
		cfg.Actions = lib.Actions()
	}
	if cfg.Actions != nil {
		clOpts = append(clOpts, cluster.WithActions(cfg.Actions))
	}
	clOpts = append(clOpts, cluster.WithIgnoreDifferences(cfg.Customizations.IgnoreDifferences...), cluster.WithResourceFilter(cfg.Customizations.Resources))
	clOpts = append(clOpts, cluster.WithSyncImpersonation(cfg.SyncImpersonation))
	if cfg.Namespace == "" {
		cfg.Namespace = "default"
	}
	if cfg.Settings != nil {
		// Apps and projects declared in an app's manifests (app of apps).
		decls, err := children.New(&children.TemporalApps{Client: cfg.Client, Namespace: cfg.Namespace, TaskQueue: cfg.TaskQueue, Config: cfg.AppConfig}, cfg.Settings)
		if err != nil {
			return nil, err
		}
		clOpts = append(clOpts, cluster.WithDeclarations(decls))
	}
	cl, err := cluster.New(renderer, clusters, log, clOpts...)
	if err != nil {
		return nil, err
	}
	if cfg.Projects == nil {
		store, err := project.NewStaticStore()
		if err != nil {
			return nil, err
		}
		cfg.Projects = store
	}
	var projOpts []project.Option
	if repoCreds != nil {
		projOpts = append(projOpts, project.WithRepos(repoCreds))
	}
	proj, err := project.New(cfg.Projects, projOpts...)
	if err != nil {
		return nil, err
	}
	rec, err := reconcile.New(proj, src, renderer, cl, log)
	if err != nil {
		return nil, err
	}
	wat, err := watch.New(clusters, cfg.Client, cfg.Namespace, cluster.FieldManager, log,
		watch.WithResourceFilter(cfg.Customizations.Resources), watch.WithSweepEvery(sweepEvery(cfg.SweepEvery)))
	if err != nil {
		return nil, err
	}
	// A registered cluster's task queue comes from the settings.
	var queues placement.Resolver = placement.None{}
	if cfg.Settings != nil {
		queues = cfg.Settings
	}
	plc, err := placement.New(queues)
	if err != nil {
		return nil, err
	}
	// An app's dependencies (spec.dependsOn) are read from their workflows.
	deps, err := depends.New(dependencyStates{apps: &children.TemporalApps{Client: cfg.Client, Namespace: cfg.Namespace}})
	if err != nil {
		return nil, err
	}
	// A rollout syncs and reads its apps through their workflows.
	rol, err := rollout.New(rolloutApps{client: cfg.Client, apps: &children.TemporalApps{Client: cfg.Client, Namespace: cfg.Namespace}})
	if err != nil {
		return nil, err
	}
	ntf, err := newNotify(cfg, log, apps)
	if err != nil {
		return nil, err
	}
	// ApplicationSets need the settings: clusters, secrets, projects.
	var sets *appsets.Activities
	if cfg.Settings != nil {
		if sets, err = newAppSets(cfg, src, cfg.Settings); err != nil {
			return nil, err
		}
	}
	var ws []sdkworker.Worker
	for _, q := range append([]string{cfg.TaskQueue}, cfg.ExtraTaskQueues...) {
		w := sdkworker.New(cfg.Client, q, sdkworker.Options{
			MaxConcurrentWorkflowTaskPollers:   taskPollers,
			MaxConcurrentActivityTaskPollers:   taskPollers,
			MaxConcurrentActivityExecutionSize: cfg.MaxConcurrentActivities,
			MaxHeartbeatThrottleInterval:       HeartbeatEvery,
			Interceptors:                       []interceptor.WorkerInterceptor{newAutoHeartbeat(autoHeartbeatEvery, autoHeartbeatActivities...)},
		})
		workflows.Register(w)
		src.Register(w)
		rnd.Register(w)
		cl.Register(w)
		proj.Register(w)
		rec.Register(w)
		wat.Register(w)
		plc.Register(w)
		deps.Register(w)
		rol.Register(w)
		ntf.Register(w)
		if sets != nil {
			sets.Register(w)
		}
		ws = append(ws, w)
	}
	return &Worker{ws: ws, src: src, lib: lib, cache: cfg.Cache, log: log, cfg: cfg}, nil
}

// taskPollers is how many long polls a worker keeps open for workflow
// tasks, and for activity tasks, per task queue (the SDK's default is 2).
// With two, a task often arrives while both polls are busy handing out
// others, and waits on the server, several times in every sync.
const taskPollers = 8

// Start starts polling, the eviction of old Git checkouts and the reloads
// of the customizations.
func (w *Worker) Start() error {
	for i, sw := range w.ws {
		if err := sw.Start(); err != nil {
			for _, started := range w.ws[:i] {
				started.Stop()
			}
			return fmt.Errorf("start worker: %w", err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.stop = cancel
	w.wg.Go(func() { w.evictLoop(ctx) })
	if w.lib != nil {
		w.wg.Go(func() { w.lib.Run(ctx, w.cfg.Customizations.every()) })
	}
	sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
	defer scancel()
	if err := w.ensureBackground(sctx); err != nil {
		w.Stop()
		return err
	}
	return nil
}

// ensureBackground starts the watch workflows of the in-cluster and the
// registered destination clusters and the self-heal sweep schedule unless
// they exist already.
func (w *Worker) ensureBackground(ctx context.Context) error {
	c := w.cfg.Client
	if !w.cfg.NoClusterWatch {
		servers := []string{appspec.InClusterServer}
		if w.cfg.Settings != nil {
			registered, err := w.cfg.Settings.Clusters(ctx)
			if err != nil {
				return fmt.Errorf("start cluster watches: %w", err)
			}
			for _, cl := range registered {
				servers = append(servers, cl.Server)
			}
		}
		for _, server := range servers {
			if err := workflows.StartClusterWatch(ctx, c, w.cfg.TaskQueue, server, w.cfg.WatchDebounce); err != nil {
				return err
			}
		}
	}
	every := sweepEvery(w.cfg.SweepEvery)
	if every < 0 {
		return nil
	}
	_, err := c.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:      workflows.SelfHealSweepScheduleID,
		Spec:    client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: every}}},
		Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
		Action: &client.ScheduleWorkflowAction{
			ID: "selfheal-sweep", Workflow: workflows.SelfHealSweepWorkflowName, TaskQueue: w.cfg.TaskQueue,
			Args: []any{workflows.SelfHealSweepInput{}},
		},
	})
	if err != nil && !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return fmt.Errorf("create self-heal sweep schedule: %w", err)
	}
	return nil
}

// HeartbeatEvery is the longest a heartbeat waits before it is sent (the
// SDK's default is 80 % of the heartbeat timeout, which leaves a loaded
// Temporal too little slack: late heartbeats time out running waits and
// watches).
const HeartbeatEvery = 10 * time.Second

// autoHeartbeatEvery is how often autoHeartbeat beats.
const autoHeartbeatEvery = 5 * time.Second

// DefaultSweepEvery is how often the self-heal sweep runs by default.
const DefaultSweepEvery = 5 * time.Minute

// sweepEvery is the sweep's interval configured as d: the default for 0,
// negative for none.
func sweepEvery(d time.Duration) time.Duration {
	if d == 0 {
		return DefaultSweepEvery
	}
	return d
}

// Stop stops the eviction and polling, and waits for running tasks.
func (w *Worker) Stop() {
	if w.stop != nil {
		w.stop()
		w.wg.Wait()
	}
	for _, sw := range w.ws {
		sw.Stop()
	}
}

const msgEvictFailed = "git checkout eviction failed"

// evictLoop enforces the checkout budget every EvictEvery until ctx ends.
func (w *Worker) evictLoop(ctx context.Context) {
	tick := time.NewTicker(w.cache.EvictEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if _, err := w.src.Evict(ctx, w.cache.TreesMaxBytes, w.cache.TreesMaxAge); err != nil && ctx.Err() == nil {
				w.log.Warn(msgEvictFailed, "err", err)
			}
		}
	}
}

// SearchAttributes are the custom search attributes the namespace needs.
func SearchAttributes() map[string]enumspb.IndexedValueType {
	m := make(map[string]enumspb.IndexedValueType, len(workflows.KeywordSearchAttributes))
	for _, n := range workflows.KeywordSearchAttributes {
		m[n] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
	}
	for _, n := range workflows.KeywordListSearchAttributes {
		m[n] = enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST
	}
	return m
}

// newNotify builds the notification activities: credentials come from the
// settings' secret store.
func newNotify(cfg Config, log *slog.Logger, apps *ghapp.Tokens) (*notify.Activities, error) {
	var secrets notify.SecretReader = &secretstore.Memory{}
	if cfg.Settings != nil {
		secrets = cfg.Settings.Secrets()
	}
	src := cfg.Notifications
	if src == nil {
		src = notify.StaticSource{}
		if cfg.Settings != nil {
			src = &notify.StoreSource{Store: secrets}
		}
	}
	return notify.New(src, secrets, log, notify.WithRecorder(cfg.Metrics), notify.WithGitHubApps(apps))
}
