package render

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/go-git/go-git/v5/plumbing/object"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/gpgkey"
	"github.com/windlass-cd/windlass/internal/manifest"
)

// Activity names: wire contracts, never rename.
const RenderName = "render.Render"

// Errors that retrying cannot fix.
var (
	ErrPathNotFound = failure.Permanent("PathNotFound", "path not found in repository")
	ErrBadPath      = failure.Permanent("BadPath", "bad repository path")
)

// Checkouter gives a read-only directory holding a commit's tree.
type Checkouter interface {
	Checkout(ctx context.Context, repoURL, sha string) (string, error)
}

// ScopedCheckouter checks a commit out with its Git submodules limited to
// a project's sourceRepos (source.Activities.CheckoutIn).
type ScopedCheckouter interface {
	CheckoutIn(ctx context.Context, repoURL, sha string, proj *appspec.Project) (string, error)
}

// RevisionReader gives the metadata of a commit the worker has read,
// without fetching (false: unknown).
type RevisionReader interface {
	RevisionMetadata(repoURL, sha string) (appspec.RevisionMetadata, bool)
}

// CommitVerifier hands a Git commit, with its signature, to check.
type CommitVerifier interface {
	VerifyCommit(ctx context.Context, repoURL, sha string, check func(*object.Commit) error) error
}

// GPGKeyLister lists the GPG key store.
type GPGKeyLister interface {
	GPGKeys(ctx context.Context) ([]gpgkey.Key, error)
}

// Config holds the Renderer's dependencies and settings.
type Config struct {
	Store Store
	Git   Checkouter
	// Commits and GPGKeys check the signatures of a request with
	// SignatureKeys; without them such a request is refused.
	Commits CommitVerifier
	GPGKeys GPGKeyLister
	// Revisions adds the commit's subject, author and date to a rendered
	// ref (nil: none).
	Revisions RevisionReader
	// CacheDir holds downloaded charts and scratch space (required for
	// Helm chart repositories and plugins).
	CacheDir string
	// Plugins are the configured config-management plugins.
	Plugins []PluginConfig
	// PluginServer runs the plugins in a process without the worker's
	// credentials (nil: the render runs them itself).
	PluginServer *PluginClient
	// CacheTTL is how long rendered manifests stay in the cache (0:
	// the default CacheTTL).
	CacheTTL time.Duration
	Logger   *slog.Logger
	// Metrics records cache reads and render durations (nil: none).
	Metrics Metrics
	// Sandbox, when set, renders in child processes (nil: in this
	// process).
	Sandbox *Sandbox
	// MaxFileBytes bounds each file a render reads from a repository (0:
	// DefaultMaxFileBytes).
	MaxFileBytes int64
	// NetTimeout bounds the silence of a chart repository or registry: the
	// dial, the handshake and each read (0: netdeadline.DefaultTimeout).
	NetTimeout time.Duration
	// Credentials finds chart repositories' and registries' credentials
	// (nil: anonymous).
	Credentials CredentialLookup
	// Kustomize are the build options of every kustomization.
	Kustomize KustomizeOptions
}

// Renderer renders sources and serves rendered manifests from the cache.
type Renderer struct {
	store     Store
	git       Checkouter
	revisions RevisionReader
	cacheDir  string
	plugins   []PluginConfig
	// pluginServer is Config.PluginServer.
	pluginServer *PluginClient
	log          *slog.Logger
	ttl          time.Duration
	stats        cacheCounters
	metrics      Metrics
	sandbox      *Sandbox
	maxFile      int64
	// netTimeout is Config.NetTimeout.
	netTimeout time.Duration
	creds      CredentialLookup
	kustomize  KustomizeOptions
	commits    CommitVerifier
	gpgKeys    GPGKeyLister
}

// NewRenderer checks its dependencies.
func NewRenderer(cfg Config) (*Renderer, error) {
	if cfg.Store == nil || cfg.Git == nil {
		return nil, errors.New("render: store and checkouter are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.CacheTTL <= 0 {
		cfg.CacheTTL = CacheTTL
	}
	return &Renderer{store: cfg.Store, git: cfg.Git, revisions: cfg.Revisions, cacheDir: cfg.CacheDir, plugins: cfg.Plugins, pluginServer: cfg.PluginServer, log: cfg.Logger, ttl: cfg.CacheTTL, metrics: cfg.Metrics,
		sandbox: cfg.Sandbox, maxFile: cfg.MaxFileBytes, netTimeout: cfg.NetTimeout, creds: cfg.Credentials, kustomize: cfg.Kustomize,
		commits: cfg.Commits, gpgKeys: cfg.GPGKeys}, nil
}

const (
	msgCacheHit  = "manifest cache hit"
	msgRendered  = "manifests rendered"
	msgCacheLost = "manifest cache entry lost, rendering again"
)

// Render renders req (or finds it in the cache) and returns its ref. hard
// skips the cache read. The cache is an optimisation: when it fails, Render
// renders fresh and still returns the ref (see getCache and putCache).
// A render that broke a sandbox limit is remembered for a while
// (rememberLimit): on a cache miss Render answers it again without
// rendering, unless hard, which renders and replaces it.
func (r *Renderer) Render(ctx context.Context, req Request, hard bool) (ManifestRef, error) {
	if hard {
		r.stats.bypassed.Add(1)
	} else if ref, ok := r.Cached(ctx, req); ok {
		return ref, nil
	} else if err := r.rememberedLimit(ctx, req); err != nil {
		return ManifestRef{}, err
	}
	objs, b, shared, err := r.renderFresh(ctx, req)
	if err != nil {
		err = capError(err)
		r.rememberLimit(ctx, req, err)
		return ManifestRef{}, err
	}
	key := req.Key()
	if shared {
		key = req.sharedKey()
	}
	r.putCache(ctx, key, b, len(objs))
	r.log.Info(msgRendered, "app", req.AppName, "sources", len(req.Sources), "objects", len(objs))
	return ManifestRef{Key: key, SHA: req.firstSHA(), Count: len(objs), Digest: digest(b), Request: req,
		RevisionMetadata: r.revisionMetadata(req)}, nil
}

// quickRenderBudget bounds a render in an app's quick pass (RenderQuick):
// well below the SDK's workflow-task heartbeat (8 s), so that the pass
// stays one workflow task. A render that needs longer runs as the render
// activity.
const quickRenderBudget = 3 * time.Second

// RenderQuick renders req for an app's quick pass when that is cheap: every
// source is a Git source without a plugin at a commit this worker has read
// (no fetch), and the render ends within quickRenderBudget. It answers
// false otherwise and on any failure: the pass then runs the render
// activity, which retries and reports errors as always. It saves a first
// pass the activity's task and the workflow task its completion costs.
func (r *Renderer) RenderQuick(ctx context.Context, req Request) (ManifestRef, bool) {
	if r.revisions == nil || len(req.Sources) == 0 {
		return ManifestRef{}, false
	}
	for _, s := range req.Sources {
		if s.Chart != "" || s.Plugin != nil || s.SHA == "" || appspec.IsOCIRepoURL(s.RepoURL) {
			return ManifestRef{}, false
		}
		if _, ok := r.revisions.RevisionMetadata(s.RepoURL, s.SHA); !ok {
			return ManifestRef{}, false
		}
	}
	ctx, cancel := context.WithTimeout(ctx, quickRenderBudget)
	defer cancel()
	ref, err := r.Render(ctx, req, false)
	if err != nil {
		r.log.Debug(msgQuickRenderSkipped, "app", req.AppName, "error", err)
		return ManifestRef{}, false
	}
	return ref, true
}

const msgQuickRenderSkipped = "no render in the quick pass; the render activity runs"

// Cached returns the ref of req when the cache holds its manifests, as
// Render would, without rendering: under the request's own key, or under
// the key it shares with other apps when it renders as directories
// (Request.sharedKey). False on a miss and on any failure of the cache
// (getCache logs and counts it).
func (r *Renderer) Cached(ctx context.Context, req Request) (ManifestRef, bool) {
	e, key, ok := r.getCache(ctx, false, req.Key(), req.sharedKey())
	if !ok {
		return ManifestRef{}, false
	}
	r.log.Debug(msgCacheHit, "key", key)
	return ManifestRef{Key: key, SHA: req.firstSHA(), Count: e.count, Digest: e.digest, Request: req,
		RevisionMetadata: r.revisionMetadata(req)}, true
}

// revisionMetadata describes the commit of the first rendered source when
// it is a Git source the worker has read (after a render, it has).
func (r *Renderer) revisionMetadata(req Request) *appspec.RevisionMetadata {
	s, ok := req.first()
	if r.revisions == nil || !ok || s.Chart != "" {
		return nil
	}
	if m, ok := r.revisions.RevisionMetadata(s.RepoURL, s.SHA); ok {
		return &m
	}
	return nil
}

// Load returns the manifests ref points at, rendering again if the cache
// has lost them or cannot be read. The result is fresh: callers may modify
// it.
func (r *Renderer) Load(ctx context.Context, ref ManifestRef) ([]*unstructured.Unstructured, error) {
	e, _, ok := r.getCache(ctx, true, ref.Key)
	if !ok {
		r.log.Info(msgCacheLost, "key", ref.Key)
		objs, fresh, _, err := r.renderFresh(ctx, ref.Request)
		if err != nil {
			return nil, err
		}
		r.putCache(ctx, ref.Key, fresh, len(objs))
		return objs, nil
	}
	objs := make([]*unstructured.Unstructured, len(e.objs))
	for i := range e.objs {
		objs[i] = &unstructured.Unstructured{}
		if err := objs[i].UnmarshalJSON(e.objs[i]); err != nil {
			return nil, fmt.Errorf("manifest cache entry %s: %w", ref.Key, err)
		}
	}
	return objs, nil
}

// renderFresh renders req, in the sandbox when the Renderer has one;
// shared says that every source rendered with the directory tool
// (Request.sharedKey).
func (r *Renderer) renderFresh(ctx context.Context, req Request) ([]*unstructured.Unstructured, []byte, bool, error) {
	if err := r.verifySignatures(ctx, req); err != nil {
		return nil, nil, false, err
	}
	if r.sandbox != nil {
		return r.sandbox.render(ctx, r, req)
	}
	return r.renderLocal(ctx, req)
}

// renderLocal renders req in this process.
func (r *Renderer) renderLocal(ctx context.Context, req Request) (_ []*unstructured.Unstructured, _ []byte, shared bool, _ error) {
	if len(req.Sources) == 0 {
		return nil, nil, false, fmt.Errorf("%w: no sources", ErrBadPath)
	}
	refs := map[string]string{}
	for _, s := range req.Sources {
		if s.Ref == "" {
			continue
		}
		root, err := r.checkout(ctx, req, s.RepoURL, s.SHA)
		if err != nil {
			return nil, nil, false, fmt.Errorf("source $%s: %w", s.Ref, err)
		}
		refs[s.Ref] = root
	}
	var all []*unstructured.Unstructured
	shared = true
	for _, s := range req.Sources {
		if s.RefOnly() {
			continue
		}
		objs, tool, err := r.renderSource(ctx, req, s, refs)
		if err != nil {
			err = hidePaths(err, append(slices.Collect(maps.Values(refs)), r.cacheDir)...)
			return nil, nil, false, fmt.Errorf("render %s@%s: %w", s.Path, s.SHA, err)
		}
		shared = shared && tool == appspec.ToolDirectory
		all = append(all, objs...)
		if len(all) > manifest.MaxObjects {
			return nil, nil, false, fmt.Errorf("%w: more than %d objects", manifest.ErrInvalidManifest, manifest.MaxObjects)
		}
	}
	b, err := json.Marshal(all)
	if err != nil {
		return nil, nil, false, err
	}
	return all, b, shared, nil
}

// toolInput is what a tool renders from.
type toolInput struct {
	// Root is the checkout (or unpacked chart) the source lives in; Dir is
	// the source's directory inside it. Nothing may be read outside Root,
	// except the roots of other sources named in Refs.
	Root, Dir string
	Source    SourceRequest
	AppName   string
	Namespace string
	// Refs maps a source's ref name to its checkout root.
	Refs map[string]string
	// Limit bounds each file read from a checkout (0: the default).
	Limit int64
}

// renderSource checks out one source and renders it with its tool, which
// it returns.
func (r *Renderer) renderSource(ctx context.Context, req Request, s SourceRequest, refs map[string]string) (_ []*unstructured.Unstructured, tool string, _ error) {
	in := toolInput{Source: s, AppName: req.AppName, Namespace: req.Namespace, Refs: refs, Limit: r.maxFile}
	if s.Chart != "" {
		defer r.timeRender(appspec.ToolHelm, time.Now())
		objs, err := r.renderHelmRepoChart(ctx, in)
		return objs, appspec.ToolHelm, err
	}
	root, err := r.checkout(ctx, req, s.RepoURL, s.SHA)
	if err != nil {
		return nil, "", err
	}
	dir, err := appDir(root, s.Path)
	if err != nil {
		return nil, "", err
	}
	in.Root, in.Dir = root, dir
	tool = req.Tool
	if tool == "" {
		tool = s.ExplicitTool()
	}
	if tool == "" {
		if tool, err = r.detectTool(ctx, root, dir); err != nil {
			return nil, "", err
		}
	}
	if tool == appspec.ToolDirectory && s.Directory != nil && hasJsonnet(root, dir, *s.Directory) {
		tool = appspec.ToolJsonnet // Argo CD evaluates a directory's Jsonnet files, whatever its options
	}
	defer r.timeRender(tool, time.Now())
	var objs []*unstructured.Unstructured
	switch tool {
	case appspec.ToolDirectory:
		objs, err = renderDirectory(in, s.Directory)
	case appspec.ToolHelm:
		objs, err = r.renderHelm(ctx, in)
	case appspec.ToolKustomize:
		objs, err = r.renderKustomize(ctx, in)
	case appspec.ToolJsonnet:
		objs, err = r.renderJsonnet(ctx, in)
	case appspec.ToolPlugin:
		objs, err = r.renderPlugin(ctx, in)
	default:
		err = fmt.Errorf("%w: unknown tool %q", ErrBadPath, tool)
	}
	return objs, tool, hidePaths(err, root)
}

// Activities exposes the Renderer as Temporal activities.
type Activities struct{ r *Renderer }

// New wraps a Renderer.
func New(r *Renderer) (*Activities, error) {
	if r == nil {
		return nil, errors.New("render: renderer is required")
	}
	return &Activities{r: r}, nil
}

// Register registers the activities under their constant names.
func (a *Activities) Register(reg worker.ActivityRegistry) {
	reg.RegisterActivityWithOptions(a.Render, activity.RegisterOptions{Name: RenderName})
	reg.RegisterActivityWithOptions(a.ResolveChart, activity.RegisterOptions{Name: ResolveChartName})
}

// Render renders the source, stores the manifests in the cache and returns
// a small reference to them.
func (a *Activities) Render(ctx context.Context, in RenderInput) (ManifestRef, error) {
	ref, err := a.r.Render(ctx, in.Request, in.Hard)
	return ref, failure.Activity(err)
}

// checkout checks a source out within req's scope, when the checkouter
// can limit it (the sandbox's child reads checkouts the worker made).
func (r *Renderer) checkout(ctx context.Context, req Request, repoURL, sha string) (string, error) {
	if sc, ok := r.git.(ScopedCheckouter); ok && req.Scope != nil {
		return sc.CheckoutIn(ctx, repoURL, sha, &appspec.Project{Name: req.Scope.Project, SourceRepos: req.Scope.SourceRepos})
	}
	return r.git.Checkout(ctx, repoURL, sha)
}
