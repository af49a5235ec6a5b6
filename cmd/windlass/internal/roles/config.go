package roles

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/activities/source"
	"github.com/windlass-cd/windlass/cmd/windlass/internal/cmdline"
	"github.com/windlass-cd/windlass/internal/appset"
	"github.com/windlass-cd/windlass/internal/customizations"
	"github.com/windlass-cd/windlass/internal/health"
	"github.com/windlass-cd/windlass/internal/metrics"
	"github.com/windlass-cd/windlass/internal/notifications"
	"github.com/windlass-cd/windlass/worker"
)

// common holds the settings every role shares.
type common struct {
	TemporalAddr string
	Namespace    string
	LogLevel     string
	// ManagementNamespace is the Kubernetes namespace of Windlass's own
	// Secrets: settings, accounts, signing keys.
	ManagementNamespace string
	// prod: Temporal TLS, Redis modes, the secret store, metrics and task
	// queues (production.go).
	prod prodSettings
}

// apiSettings are the settings of the API (server and dev roles).
type apiSettings struct {
	// AuthConfig is a YAML or JSON file: accounts and the RBAC policy.
	AuthConfig string
	// TemporalUIURL links syncs to their Temporal UI page.
	TemporalUIURL string
	// sso: single sign-on (sso.go).
	sso ssoSettings
	// taskQueue is the queue new apps start on (default workflows.TaskQueue).
	taskQueue string
	// WatchApplications lists the namespaces of the Application resources
	// the front door watches (frontdoor.go); empty: off.
	WatchApplications string
	// AppSetSCMURLs lists provider API URLs, besides the public ones, that
	// an ApplicationSet's tokenRef may be sent to (appsets.go).
	AppSetSCMURLs string
	// AppSetMaxElements bounds the elements of one set (0: the default).
	AppSetMaxElements int
}

// workerSettings are the settings of the worker role.
type workerSettings struct {
	RedisAddr      string
	Kubeconfig     string
	CacheDir       string
	KubeQPS        float64
	KubeBurst      int
	MaxActivities  int
	RefreshSeconds int
	// RepoCredentials is a JSON file of repository credentials (references
	// to secret files and variables; see source.LoadCredentialsFile).
	RepoCredentials   string
	LsRemoteCacheTTL  time.Duration
	ManifestCacheTTL  time.Duration
	CheckoutsMaxBytes int64
	CheckoutsMaxAge   time.Duration
	// ProjectsFile is a JSON list of projects.
	ProjectsFile string
	// PluginsFile is a YAML or JSON list of config-management plugins.
	PluginsFile string
	// PluginServer is the address of an external plugin server; empty:
	// the worker runs one as a child process.
	PluginServer string
	// ResourceCustomizations is an Argo CD-style resource_customizations
	// directory of Lua health checks (and action scripts).
	ResourceCustomizations string
	// CustomizationsRepo, CustomizationsPath and CustomizationsRevision
	// name such a tree in Git instead; CustomizationsEvery is how often
	// the tree is read again.
	CustomizationsRepo     string
	CustomizationsPath     string
	CustomizationsRevision string
	CustomizationsEvery    time.Duration
	// ArgoCDCM is a file in argocd-cm's format: inline health and action
	// scripts and system-wide ignoreDifferences.
	ArgoCDCM string
	// NotificationsConfig is a file in argocd-notifications-cm's format;
	// without it, the configuration saved through the API applies.
	NotificationsConfig string
	SweepEvery          time.Duration
	// RenderSandbox runs renders in child processes under RenderLimits.
	RenderSandbox bool
	RenderLimits  render.SandboxLimits
	// RenderMaxFileBytes bounds each file a render reads from a repository.
	RenderMaxFileBytes int64
	// OCI bounds the artifacts of oci:// sources.
	OCI source.OCILimits
	// GitShallowFetch fetches a commit alone into an empty mirror.
	GitShallowFetch bool
	// GitSubmoduleRepos are the globs of the repositories submodules may
	// point at; none: submodules are not checked out.
	GitSubmoduleRepos []string
	// KustomizeBuildOptions are Argo CD's kustomize.buildOptions, for
	// every kustomization (render.ParseKustomizeBuildOptions).
	KustomizeBuildOptions string
	// SyncImpersonation: syncs write as their project's destination
	// service account (Argo CD's application.sync.impersonation.enabled).
	SyncImpersonation bool
	// HealthScripts are the limits of one Lua health script run.
	HealthScripts health.Options
	// namespace is copied from the common settings.
	namespace string
	// appSets are the ApplicationSet settings: the API's flags where the
	// role serves the API too, else WINDLASS_APPSET_* (appsets.go).
	appSets apiSettings
	// roleProd and metrics are copied from the role (production.go).
	roleProd prodSettings
	metrics  *metrics.Metrics
}

// devConfig configures `windlass dev`.
type devConfig struct {
	common
	workerSettings
	apiSettings
	archiveSettings
	DataDir string
	APIAddr string
	UIAddr  string
}

// serverConfig configures `windlass server`.
type serverConfig struct {
	common
	apiSettings
	APIAddr    string
	RedisAddr  string
	Kubeconfig string
	// ArgoCDCM is the workers' argocd-cm file: the API's diff and tree
	// follow its ignoreDifferences and resource filter as they do.
	ArgoCDCM string
}

// workerConfig configures `windlass worker`.
type workerConfig struct {
	common
	workerSettings
}

// env returns $WINDLASS_<NAME> or def.
func env(name, def string) string {
	if v, ok := os.LookupEnv("WINDLASS_" + name); ok {
		return v
	}
	return def
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(env(name, "")); err == nil {
		return v
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(env(name, "")); err == nil {
		return v
	}
	return def
}

func envInt64(name string, def int64) int64 {
	if v, err := strconv.ParseInt(env(name, ""), 10, 64); err == nil {
		return v
	}
	return def
}

func bindCommon(fs *flag.FlagSet, c *common, temporalDefault string) {
	fs.StringVar(&c.TemporalAddr, "temporal-address", env("TEMPORAL_ADDRESS", envOr("TEMPORAL_ADDRESS", temporalDefault)), "Temporal frontend host:port (env WINDLASS_TEMPORAL_ADDRESS or TEMPORAL_ADDRESS)")
	fs.StringVar(&c.Namespace, "namespace", env("NAMESPACE", envOr("TEMPORAL_NAMESPACE", "default")), "Temporal namespace (env WINDLASS_NAMESPACE)")
	fs.StringVar(&c.LogLevel, "log-level", env("LOG_LEVEL", "info"), "debug, info, warn or error (env WINDLASS_LOG_LEVEL)")
	fs.StringVar(&c.ManagementNamespace, "management-namespace", env("MANAGEMENT_NAMESPACE", "windlass"), "Kubernetes namespace of Windlass's Secrets: settings, accounts, keys (env WINDLASS_MANAGEMENT_NAMESPACE)")
}

func bindAPI(fs *flag.FlagSet, a *apiSettings) {
	fs.StringVar(&a.AuthConfig, "auth-config", env("AUTH_CONFIG", ""), "YAML or JSON file: local accounts, RBAC policy (policy.csv lines) and policy default (env WINDLASS_AUTH_CONFIG)")
	fs.StringVar(&a.TemporalUIURL, "temporal-ui-url", env("TEMPORAL_UI_URL", ""), "Temporal UI base URL, for links to syncs (env WINDLASS_TEMPORAL_UI_URL)")
	bindSSO(fs, &a.sso)
	bindFrontDoor(fs, a)
	fs.StringVar(&a.AppSetSCMURLs, "appset-allowed-scm-urls", env("APPSET_ALLOWED_SCM_URLS", ""), "comma-separated API URLs of self-hosted GitHub, GitLab or Gitea that ApplicationSet generators may send a tokenRef's token to, besides the public ones (env WINDLASS_APPSET_ALLOWED_SCM_URLS)")
	fs.IntVar(&a.AppSetMaxElements, "appset-max-elements", envInt("APPSET_MAX_ELEMENTS", appset.DefaultLimit), "most elements an ApplicationSet's generators may yield; more is an error (env WINDLASS_APPSET_MAX_ELEMENTS)")
}

func envOr(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

func bindWorker(fs *flag.FlagSet, w *workerSettings, cacheDefault string) {
	w.appSets.AppSetSCMURLs, w.appSets.AppSetMaxElements = env("APPSET_ALLOWED_SCM_URLS", ""), envInt("APPSET_MAX_ELEMENTS", appset.DefaultLimit)
	fs.StringVar(&w.RedisAddr, "redis-address", env("REDIS_ADDRESS", ""), "Redis host:port for the manifest cache (env WINDLASS_REDIS_ADDRESS)")
	fs.StringVar(&w.Kubeconfig, "kubeconfig", envOr("KUBECONFIG", ""), "kubeconfig of the destination cluster (env KUBECONFIG; default ~/.kube/config)")
	fs.StringVar(&w.CacheDir, "cache-dir", env("CACHE_DIR", cacheDefault), "Git mirrors and checkouts (env WINDLASS_CACHE_DIR)")
	fs.Float64Var(&w.KubeQPS, "kube-qps", float64(envInt("KUBE_QPS", 500)), "client-go QPS towards clusters")
	fs.IntVar(&w.KubeBurst, "kube-burst", envInt("KUBE_BURST", 1000), "client-go burst towards clusters")
	fs.IntVar(&w.MaxActivities, "max-concurrent-activities", envInt("MAX_CONCURRENT_ACTIVITIES", 0), "parallel activities per worker (0: SDK default)")
	fs.IntVar(&w.RefreshSeconds, "refresh-seconds", envInt("REFRESH_SECONDS", 180), "default refresh interval of applications")
	fs.StringVar(&w.RepoCredentials, "repo-credentials", env("REPO_CREDENTIALS", ""), "JSON file naming the Git credentials by reference (env WINDLASS_REPO_CREDENTIALS)")
	fs.DurationVar(&w.LsRemoteCacheTTL, "ls-remote-cache-ttl", envDuration("LS_REMOTE_CACHE_TTL", source.DefaultRefCacheTTL), "how long Git ref lists are shared through Redis; 0 disables (env WINDLASS_LS_REMOTE_CACHE_TTL)")
	fs.DurationVar(&w.ManifestCacheTTL, "manifest-cache-ttl", envDuration("MANIFEST_CACHE_TTL", 24*time.Hour), "how long rendered manifests stay in Redis (env WINDLASS_MANIFEST_CACHE_TTL)")
	fs.Int64Var(&w.CheckoutsMaxBytes, "checkouts-max-bytes", envInt64("CHECKOUTS_MAX_BYTES", worker.DefaultTreesMaxBytes), "disk budget of the Git checkouts in cache-dir (env WINDLASS_CHECKOUTS_MAX_BYTES)")
	fs.StringVar(&w.ProjectsFile, "projects-file", env("PROJECTS_FILE", ""), "JSON list of projects: source repos, destinations, resource lists, sync windows (env WINDLASS_PROJECTS_FILE)")
	fs.StringVar(&w.PluginsFile, "plugins-file", env("PLUGINS_FILE", ""), "YAML or JSON list of config-management plugins: name, discover, init, generate (env WINDLASS_PLUGINS_FILE)")
	fs.StringVar(&w.PluginServer, "plugin-server", env("PLUGIN_SERVER", ""), "address of the windlass plugin-server that runs the plugins: unix:///path or http://127.0.0.1:port; empty: a child process with a scrubbed environment (env WINDLASS_PLUGIN_SERVER)")
	fs.StringVar(&w.ResourceCustomizations, "resource-customizations", env("RESOURCE_CUSTOMIZATIONS", ""), "directory of Lua health checks and resource actions, <group>/<Kind>/health.lua and <group>/<Kind>/actions/ (env WINDLASS_RESOURCE_CUSTOMIZATIONS)")
	fs.StringVar(&w.CustomizationsRepo, "resource-customizations-repo", env("RESOURCE_CUSTOMIZATIONS_REPO", ""), "Git repository of Lua health checks and actions in Argo CD's layout, instead of a directory (env WINDLASS_RESOURCE_CUSTOMIZATIONS_REPO)")
	fs.StringVar(&w.CustomizationsPath, "resource-customizations-path", env("RESOURCE_CUSTOMIZATIONS_PATH", ""), "folder of the resource-customizations-repo holding the tree (env WINDLASS_RESOURCE_CUSTOMIZATIONS_PATH)")
	fs.StringVar(&w.CustomizationsRevision, "resource-customizations-revision", env("RESOURCE_CUSTOMIZATIONS_REVISION", "HEAD"), "branch, tag or commit of the resource-customizations-repo (env WINDLASS_RESOURCE_CUSTOMIZATIONS_REVISION)")
	fs.DurationVar(&w.CustomizationsEvery, "resource-customizations-interval", envDuration("RESOURCE_CUSTOMIZATIONS_INTERVAL", worker.DefaultCustomizationsEvery), "how often the resource customizations are read again, and reloaded when they changed (env WINDLASS_RESOURCE_CUSTOMIZATIONS_INTERVAL)")
	fs.StringVar(&w.ArgoCDCM, "argocd-cm", env("ARGOCD_CM", ""), "argocd-cm ConfigMap (or its data) in YAML: resource.customizations.health/actions/ignoreDifferences, resource.exclusions and resource.inclusions keys (env WINDLASS_ARGOCD_CM)")
	fs.StringVar(&w.NotificationsConfig, "notifications-config", env("NOTIFICATIONS_CONFIG", ""), "argocd-notifications-cm ConfigMap (or its data) in YAML: triggers, templates, services, subscriptions; read again when it changes (env WINDLASS_NOTIFICATIONS_CONFIG)")
	fs.DurationVar(&w.SweepEvery, "self-heal-sweep", envDuration("SELF_HEAL_SWEEP", 5*time.Minute), "how often every selfHeal app is refreshed as a safety net; negative disables (env WINDLASS_SELF_HEAL_SWEEP)")
	fs.DurationVar(&w.CheckoutsMaxAge, "checkouts-max-age", envDuration("CHECKOUTS_MAX_AGE", worker.DefaultTreesMaxAge), "Git checkouts unused for longer are removed (env WINDLASS_CHECKOUTS_MAX_AGE)")
	d := render.DefaultSandboxLimits
	fs.BoolVar(&w.RenderSandbox, "render-sandbox", env("RENDER_SANDBOX", "true") == "true", "render in child processes under the render limits, so that no repository can crash or exhaust the worker (env WINDLASS_RENDER_SANDBOX)")
	fs.Int64Var(&w.RenderLimits.MemoryBytes, "render-memory-bytes", envInt64("RENDER_MEMORY_BYTES", d.MemoryBytes), "memory limit of one render sandbox (env WINDLASS_RENDER_MEMORY_BYTES)")
	fs.DurationVar(&w.RenderLimits.CPU, "render-cpu", envDuration("RENDER_CPU", d.CPU), "CPU-time limit of one render (env WINDLASS_RENDER_CPU)")
	fs.DurationVar(&w.RenderLimits.Wall, "render-timeout", envDuration("RENDER_TIMEOUT", d.Wall), "wall-time limit of one render (env WINDLASS_RENDER_TIMEOUT)")
	fs.IntVar(&w.RenderLimits.StackBytes, "render-stack-bytes", envInt("RENDER_STACK_BYTES", d.StackBytes), "goroutine stack limit in a render sandbox (env WINDLASS_RENDER_STACK_BYTES)")
	fs.Int64Var(&w.RenderLimits.OutputBytes, "render-max-output-bytes", envInt64("RENDER_MAX_OUTPUT_BYTES", d.OutputBytes), "largest rendered manifests of one app, as JSON (env WINDLASS_RENDER_MAX_OUTPUT_BYTES)")
	fs.BoolVar(&w.SyncImpersonation, "sync-impersonation", envBool("WINDLASS_SYNC_IMPERSONATION", false), "syncs apply and prune as the service account their project's destinationServiceAccounts names, and fail without one (env WINDLASS_SYNC_IMPERSONATION)")
	fs.Int64Var(&w.RenderMaxFileBytes, "render-max-file-bytes", envInt64("RENDER_MAX_FILE_BYTES", render.DefaultMaxFileBytes), "largest file a render reads from a repository (env WINDLASS_RENDER_MAX_FILE_BYTES)")
	fs.BoolVar(&w.GitShallowFetch, "git-shallow-fetch", envBool("WINDLASS_GIT_SHALLOW_FETCH", true), "while a repository's mirror is empty, fetch the commit to check out alone, one level deep, falling back to the full fetch; false fetches every branch and tag at once (env WINDLASS_GIT_SHALLOW_FETCH)")
	fs.StringVar(&w.KustomizeBuildOptions, "kustomize-build-options", env("KUSTOMIZE_BUILD_OPTIONS", ""), "kustomize build flags for every kustomization, as Argo CD's kustomize.buildOptions: --enable-helm, --load-restrictor, --reorder, --helm-kube-version, --helm-api-versions (env WINDLASS_KUSTOMIZE_BUILD_OPTIONS)")
	fs.Int64Var(&w.OCI.MaxArtifactBytes, "oci-max-artifact-bytes", envInt64("OCI_MAX_ARTIFACT_BYTES", source.DefaultOCIMaxArtifactBytes), "largest layer of an oci:// source, as the registry sends it (env WINDLASS_OCI_MAX_ARTIFACT_BYTES)")
	fs.Int64Var(&w.OCI.MaxExtractedBytes, "oci-max-extracted-bytes", envInt64("OCI_MAX_EXTRACTED_BYTES", source.DefaultOCIMaxExtractedBytes), "largest total of the files unpacked from an oci:// source (env WINDLASS_OCI_MAX_EXTRACTED_BYTES)")
	fs.Func("oci-layer-media-types", "comma-separated layer media types an oci:// source may have (default "+strings.Join(source.DefaultOCILayerMediaTypes, ",")+"; env WINDLASS_OCI_LAYER_MEDIA_TYPES)", func(v string) error {
		w.OCI.LayerMediaTypes = splitList(v)
		return nil
	})
	if v := env("OCI_LAYER_MEDIA_TYPES", ""); v != "" {
		w.OCI.LayerMediaTypes = splitList(v)
	}
	w.GitSubmoduleRepos = splitList(env("GIT_SUBMODULE_REPOS", ""))
	fs.Func("git-submodule-repos", "comma-separated globs of the repository URLs a Git submodule may point at (\"!\" denies, as sourceRepos); set, submodules are checked out recursively (env WINDLASS_GIT_SUBMODULE_REPOS)", func(v string) error {
		w.GitSubmoduleRepos = splitList(v)
		return nil
	})
	h := &w.HealthScripts
	fs.Int64Var(&h.MemoryLimit, "health-script-memory-bytes", envInt64("HEALTH_SCRIPT_MEMORY_BYTES", health.DefaultMemoryLimit), "memory budget of one Lua health script run (env WINDLASS_HEALTH_SCRIPT_MEMORY_BYTES)")
	fs.Int64Var(&h.MaxInstructions, "health-script-max-instructions", envInt64("HEALTH_SCRIPT_MAX_INSTRUCTIONS", health.DefaultMaxInstructions), "instruction budget of one Lua health script run (env WINDLASS_HEALTH_SCRIPT_MAX_INSTRUCTIONS)")
	fs.DurationVar(&h.Timeout, "health-script-timeout", envDuration("HEALTH_SCRIPT_TIMEOUT", health.DefaultTimeout), "time limit of one Lua health script run (env WINDLASS_HEALTH_SCRIPT_TIMEOUT)")
}

// customizations configure the worker's resource customizations: the tree
// of ResourceCustomizations or CustomizationsRepo, and ArgoCDCM's keys,
// under the HealthScripts limits. It also returns the argocd-cm keys read
// without effect.
func (w workerSettings) customizations() (worker.CustomizationsConfig, []string, error) {
	c := worker.CustomizationsConfig{
		Dir: w.ResourceCustomizations, RepoURL: w.CustomizationsRepo, Path: w.CustomizationsPath, Revision: w.CustomizationsRevision,
		Every: w.CustomizationsEvery, Health: w.HealthScripts,
	}
	if w.ArgoCDCM == "" {
		return c, nil, nil
	}
	cm, err := customizations.LoadConfigMap(w.ArgoCDCM)
	if err != nil {
		return c, nil, err
	}
	c.Health.Inline, c.Actions, c.IgnoreDifferences = cm.Health, cm.Actions, cm.IgnoreDifferences
	if !cm.Filter.Empty() {
		c.Resources = cm.Filter
	}
	return c, cm.Ignored, nil
}

// credentials loads the repository credentials file, if one is named.
func (w workerSettings) credentials() (source.Credentials, error) {
	if w.RepoCredentials == "" {
		return source.Credentials{}, nil
	}
	return source.LoadCredentialsFile(w.RepoCredentials)
}

// cacheConfig is the worker's cache configuration.
func (w workerSettings) cacheConfig() worker.CacheConfig {
	c := worker.CacheConfig{
		RefTTL: w.LsRemoteCacheTTL, ManifestTTL: w.ManifestCacheTTL,
		TreesMaxBytes: w.CheckoutsMaxBytes, TreesMaxAge: w.CheckoutsMaxAge,
	}
	if c.RefTTL == 0 {
		c.RefTTL = -1 // off
	}
	return c
}

func (c common) validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(c.TemporalAddr); err != nil {
		errs = append(errs, fmt.Errorf("temporal-address %q: %w", c.TemporalAddr, err))
	}
	if c.Namespace == "" {
		errs = append(errs, errors.New("namespace is required"))
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(c.LogLevel)); err != nil {
		errs = append(errs, fmt.Errorf("log-level: %w", err))
	}
	errs = append(errs, c.prod.validate())
	return errors.Join(errs...)
}

func (w workerSettings) validate(needRedis bool) error {
	var errs []error
	if needRedis && w.RedisAddr == "" {
		errs = append(errs, errors.New("redis-address is required"))
	}
	if w.CacheDir == "" {
		errs = append(errs, errors.New("cache-dir is required"))
	}
	if w.RefreshSeconds < 1 {
		errs = append(errs, errors.New("refresh-seconds must be at least 1"))
	}
	if w.KubeQPS <= 0 || w.KubeBurst <= 0 {
		errs = append(errs, errors.New("kube-qps and kube-burst must be positive"))
	}
	if w.LsRemoteCacheTTL < 0 || w.ManifestCacheTTL <= 0 || w.CheckoutsMaxAge <= 0 || w.CheckoutsMaxBytes <= 0 {
		errs = append(errs, errors.New("ls-remote-cache-ttl must not be negative; manifest-cache-ttl, checkouts-max-age and checkouts-max-bytes must be positive"))
	}
	if _, err := w.credentials(); err != nil {
		errs = append(errs, fmt.Errorf("repo-credentials: %w", err))
	}
	if w.ResourceCustomizations != "" && w.CustomizationsRepo != "" {
		errs = append(errs, errors.New("resource-customizations and resource-customizations-repo exclude each other"))
	}
	if w.PluginServer != "" {
		if _, err := render.NewPluginClient(w.PluginServer); err != nil {
			errs = append(errs, err)
		}
	}
	if w.CustomizationsEvery <= 0 {
		errs = append(errs, errors.New("resource-customizations-interval must be positive"))
	}
	if _, _, err := w.customizations(); err != nil {
		errs = append(errs, err)
	}
	if err := w.checkNotifications(); err != nil {
		errs = append(errs, err)
	}
	if l := w.RenderLimits; w.RenderSandbox && (l.MemoryBytes <= 0 || l.CPU <= 0 || l.Wall <= 0 || l.StackBytes <= 0 || l.OutputBytes <= 0) {
		errs = append(errs, errors.New("render-memory-bytes, render-cpu, render-timeout, render-stack-bytes and render-max-output-bytes must be positive"))
	}
	if _, err := render.ParseKustomizeBuildOptions(w.KustomizeBuildOptions); err != nil {
		errs = append(errs, err)
	}
	if w.OCI.MaxArtifactBytes <= 0 || w.OCI.MaxExtractedBytes <= 0 {
		errs = append(errs, errors.New("oci-max-artifact-bytes and oci-max-extracted-bytes must be positive"))
	}
	if h := w.HealthScripts; w.RenderMaxFileBytes <= 0 || h.MemoryLimit <= 0 || h.MaxInstructions <= 0 || h.Timeout <= 0 {
		errs = append(errs, errors.New("render-max-file-bytes, health-script-memory-bytes, health-script-max-instructions and health-script-timeout must be positive"))
	}
	return errors.Join(errs...)
}

// checkNotifications parses --notifications-config when the file exists,
// so that a bad template, condition, service or subscription stops the
// worker at start rather than failing each delivery. A missing file is
// no configuration yet (the worker reads it again when it appears).
func (w workerSettings) checkNotifications() error {
	if w.NotificationsConfig == "" {
		return nil
	}
	if _, err := os.Stat(w.NotificationsConfig); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if _, err := notifications.ParseFile(w.NotificationsConfig); err != nil {
		return fmt.Errorf("notifications-config: %w", err)
	}
	return nil
}

// absolute makes each non-empty path absolute: the renderers compare the
// checkouts' paths with resolved, absolute ones.
func absolute(paths ...*string) error {
	for _, p := range paths {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return fmt.Errorf("path %q: %w", *p, err)
		}
		*p = abs
	}
	return nil
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cmdline.ErrUsage
		}
		return fmt.Errorf("%w: %w", cmdline.ErrUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %s", cmdline.ErrUsage, strings.Join(fs.Args(), " "))
	}
	return nil
}

func loadDevConfig(args []string) (devConfig, error) {
	var c devConfig
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.StringVar(&c.DataDir, "data-dir", env("DATA_DIR", ".windlass"), "state of the embedded Temporal server, Redis and the Git cache (env WINDLASS_DATA_DIR)")
	fs.StringVar(&c.APIAddr, "api-address", env("API_ADDRESS", "127.0.0.1:8080"), "REST API listen address")
	fs.StringVar(&c.UIAddr, "temporal-ui-address", env("TEMPORAL_UI_ADDRESS", "127.0.0.1:8233"), `Temporal UI listen address ("off" disables it)`)
	bindCommon(fs, &c.common, "127.0.0.1:7233")
	bindWorker(fs, &c.workerSettings, "")
	bindAPI(fs, &c.apiSettings)
	bindProd(fs, &c.prod, roleDev, &c.RedisAddr)
	bindArchive(fs, &c.archiveSettings)
	if err := parse(fs, args); err != nil {
		return c, err
	}
	if c.CacheDir == "" {
		c.CacheDir = filepath.Join(c.DataDir, "git")
	}
	c.sso.apiAddr = c.APIAddr
	if err := errors.Join(c.common.validate(), c.workerSettings.validate(false), c.archiveSettings.validate(), absolute(&c.DataDir, &c.CacheDir)); err != nil {
		return c, fmt.Errorf("invalid configuration: %w", err)
	}
	if _, _, err := net.SplitHostPort(c.APIAddr); err != nil {
		return c, fmt.Errorf("invalid configuration: api-address: %w", err)
	}
	if _, err := watchNamespaces(c.WatchApplications); err != nil {
		return c, fmt.Errorf("invalid configuration: %w", err)
	}
	return c, nil
}

func loadServerConfig(args []string) (serverConfig, error) {
	var c serverConfig
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.StringVar(&c.APIAddr, "api-address", env("API_ADDRESS", "127.0.0.1:8080"), "REST API listen address")
	fs.StringVar(&c.RedisAddr, "redis-address", env("REDIS_ADDRESS", ""), "Redis host:port for revoked sessions (env WINDLASS_REDIS_ADDRESS)")
	fs.StringVar(&c.Kubeconfig, "kubeconfig", envOr("KUBECONFIG", ""), "kubeconfig of the management cluster, where Windlass's Secrets live (env KUBECONFIG)")
	fs.StringVar(&c.ArgoCDCM, "argocd-cm", env("ARGOCD_CM", ""), "the workers' argocd-cm file: the diff and tree follow its ignoreDifferences, resource.exclusions and resource.inclusions (env WINDLASS_ARGOCD_CM)")
	bindCommon(fs, &c.common, "127.0.0.1:7233")
	bindAPI(fs, &c.apiSettings)
	bindProd(fs, &c.prod, roleServer, &c.RedisAddr)
	if err := parse(fs, args); err != nil {
		return c, err
	}
	c.sso.apiAddr = c.APIAddr
	if c.RedisAddr == "" {
		return c, errors.New("invalid configuration: redis-address is required")
	}
	if _, err := watchNamespaces(c.WatchApplications); err != nil {
		return c, fmt.Errorf("invalid configuration: %w", err)
	}
	if err := c.common.validate(); err != nil {
		return c, fmt.Errorf("invalid configuration: %w", err)
	}
	if _, err := inspectorRules(c.ArgoCDCM); err != nil {
		return c, fmt.Errorf("invalid configuration: %w", err)
	}
	return c, nil
}

// inspectorRules are the API inspector's options from an argocd-cm file
// (none without one): the system-wide ignoreDifferences and the resource
// filter, so that the API diffs and lists an app as the workers do.
func inspectorRules(argoCDCM string) ([]cluster.Option, error) {
	if argoCDCM == "" {
		return nil, nil
	}
	cm, err := customizations.LoadConfigMap(argoCDCM)
	if err != nil {
		return nil, err
	}
	return []cluster.Option{cluster.WithIgnoreDifferences(cm.IgnoreDifferences...), cluster.WithResourceFilter(cm.Filter)}, nil
}

func loadWorkerConfig(args []string) (workerConfig, error) {
	var c workerConfig
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	bindCommon(fs, &c.common, "127.0.0.1:7233")
	bindWorker(fs, &c.workerSettings, "/var/cache/windlass")
	bindProd(fs, &c.prod, roleWorker, &c.RedisAddr)
	if err := parse(fs, args); err != nil {
		return c, err
	}
	if err := errors.Join(c.common.validate(), c.workerSettings.validate(true), absolute(&c.CacheDir)); err != nil {
		return c, fmt.Errorf("invalid configuration: %w", err)
	}
	return c, nil
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
