package cluster

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/health"
	"github.com/windlass-cd/windlass/internal/kube"
	"github.com/windlass-cd/windlass/internal/resourcefilter"
)

// Activity names: wire contracts, never rename.
const (
	CompareName      = "cluster.Compare"
	ResourceTreeName = "cluster.ResourceTree"
)

// FieldManager is the server-side-apply field manager of Windlass.
const FieldManager = "windlass"

// ManifestLoader loads rendered manifests by reference.
type ManifestLoader interface {
	Load(ctx context.Context, ref render.ManifestRef) ([]*unstructured.Unstructured, error)
}

// ClientSource hands out clients per destination server. When it also
// implements ResourceDiscoverer, the live objects of an app are searched
// in every listable kind the cluster serves; otherwise in the kinds of the
// app's manifests, the kinds seen for the app before, and a built-in list
// of common kinds.
type ClientSource interface {
	For(server string) (*kube.Clients, error)
}

// ResourceDiscoverer lists the resource kinds a destination cluster serves
// (discovery's ServerPreferredResources). Partial results with an error are
// used as far as they go.
type ResourceDiscoverer interface {
	ServerPreferredResources(server string) ([]*metav1.APIResourceList, error)
}

// HealthChecker assesses the health of a live object (nil: Missing).
type HealthChecker interface {
	Assess(obj *unstructured.Unstructured) health.Result
}

var _ HealthChecker = (*health.Checker)(nil)

type builtinHealth struct{}

func (builtinHealth) Assess(obj *unstructured.Unstructured) health.Result { return health.Assess(obj) }

// Activities is the cluster capability. Create it with New.
type Activities struct {
	manifests   ManifestLoader
	clusters    ClientSource
	log         *slog.Logger
	health      HealthChecker
	ignore      []appspec.ResourceIgnoreDifferences
	concurrency int
	writes      chan struct{} // bounds the writes in flight across activities
	reads       chan struct{} // bounds the lists in flight across activities
	kinds       *kindCache
	jq          *jqCache
	dryRuns     *dryRunCache
	memo        *compareMemo
	metrics     Metrics
	settleWait  time.Duration
	lists       *listWriter  // nil: no full lists are kept
	impersonate bool         // sync impersonation (impersonate.go)
	decls       Declarations // nil: manifests may not declare apps
	parents     sync.Map     // app name → manages (mayManage)
	actions     ActionCatalog
	healthLog   HealthRecorder         // nil: no health transitions are kept
	filter      *resourcefilter.Filter // nil: every kind is managed
}

// Option configures Activities.
type Option func(*Activities)

// WithIgnoreDifferences adds system-wide ignoreDifferences rules, applied to
// every app next to its own (Argo CD's resource.customizations.ignoreDifferences).
func WithIgnoreDifferences(rules ...appspec.ResourceIgnoreDifferences) Option {
	return func(a *Activities) { a.ignore = append(a.ignore, rules...) }
}

// WithResourceFilter leaves the kinds f excludes on a cluster alone:
// they are not listed, compared, applied, pruned or shown in the tree,
// and a rendered object of such a kind is reported in the compare's
// conditions (Argo CD's resource.exclusions and resource.inclusions).
func WithResourceFilter(f *resourcefilter.Filter) Option {
	return func(a *Activities) { a.filter = f }
}

// WithHealthChecker replaces the built-in health checks (say with a
// health.Checker that has Lua scripts).
func WithHealthChecker(h HealthChecker) Option {
	return func(a *Activities) {
		if h != nil {
			a.health = h
		}
	}
}

// WithConcurrency bounds the API requests one activity runs in parallel
// (default 8).
func WithConcurrency(n int) Option {
	return func(a *Activities) {
		if n > 0 {
			a.concurrency = n
		}
	}
}

// WithMaxWrites bounds the apply requests in flight across all the
// activities of this instance, that is of one worker (default 64). One
// wave's writes are bounded by WithConcurrency; this bounds the sum over
// the syncs that run at once, so a burst of syncs queues in the worker
// instead of overloading the API server until its requests time out.
func WithMaxWrites(n int) Option {
	return func(a *Activities) {
		if n > 0 {
			a.writes = make(chan struct{}, n)
		}
	}
}

// WithMaxReads bounds the list requests in flight across all the
// activities of this instance (default 64): a compare lists every kind
// the cluster serves, and a burst of new apps compared at once opened so
// many requests that the API server's TLS handshakes timed out.
func WithMaxReads(n int) Option {
	return func(a *Activities) {
		if n > 0 {
			a.reads = make(chan struct{}, n)
		}
	}
}

// WithSettleWait is how long ApplyWave watches a wave that its apply did
// not leave healthy for it to become so (default DefaultSettleWait; 0: it
// does not). A wave that settles within it needs no WaitWave: a sync of
// one wave of a Deployment is one activity and one workflow task fewer.
// One that does not is waited for by WaitWave as before, which has lost
// nothing: the wave could not be done sooner. A sync bounds the settle
// wait by its wait timeout (WaveInput.SettleMillis) and gives WaitWave
// what is left of it.
func WithSettleWait(d time.Duration) Option {
	return func(a *Activities) {
		if d >= 0 {
			a.settleWait = d
		}
	}
}

// DefaultSettleWait is WithSettleWait's default: long enough for a
// Deployment's pods to become ready on a busy cluster, short against the
// apply's timeout (5 min; the wait heartbeats every few seconds).
const DefaultSettleWait = time.Minute

// Defaults of WithMaxWrites and WithMaxReads.
const (
	DefaultMaxWrites = 64
	DefaultMaxReads  = 64
)

// New checks its dependencies.
func New(manifests ManifestLoader, clusters ClientSource, log *slog.Logger, opts ...Option) (*Activities, error) {
	if manifests == nil || clusters == nil {
		return nil, errors.New("cluster: manifest loader and cluster clients are required")
	}
	if log == nil {
		log = slog.Default()
	}
	a := &Activities{
		manifests: manifests, clusters: clusters, log: log, health: builtinHealth{},
		concurrency: 8, writes: make(chan struct{}, DefaultMaxWrites), reads: make(chan struct{}, DefaultMaxReads), kinds: newKindCache(), jq: &jqCache{}, dryRuns: &dryRunCache{}, memo: &compareMemo{},
		settleWait: DefaultSettleWait, actions: builtinActions,
	}
	for _, o := range opts {
		o(a)
	}
	for _, r := range a.ignore {
		if _, err := a.ignoreSetOf([]appspec.ResourceIgnoreDifferences{r}); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// Register registers the activities under their constant names.
func (a *Activities) Register(r worker.ActivityRegistry) {
	for _, act := range []struct {
		name string
		fn   any
	}{
		{CompareName, a.Compare},
		{PlanName, a.Plan}, {ApplyWaveName, a.ApplyWave}, {WaitWaveName, a.WaitWave},
		{PruneName, a.Prune}, {DeleteHooksName, a.DeleteHooks}, {DeleteAppName, a.DeleteApp},
		{ResourceTreeName, a.ResourceTree}, {OrphansName, a.Orphans}, {RunActionName, a.RunAction},
		{RetrackName, a.Retrack},
	} {
		r.RegisterActivityWithOptions(act.fn, activity.RegisterOptions{Name: act.name})
	}
}

// heartbeat records progress when ctx is an activity's (benchmarks call
// the methods directly).
func heartbeat(ctx context.Context, details ...any) {
	if activity.IsActivity(ctx) {
		activity.RecordHeartbeat(ctx, details...)
	}
}

// parallel runs fn(i) for i in [0, n) with at most limit at once and
// returns the error of the lowest index that failed.
// bounded runs fn holding one of the instance's write slots.
func (a *Activities) bounded(ctx context.Context, fn func() error) error {
	return holding(ctx, a.writes, fn)
}

// holding runs fn holding one slot of slots (nil: no bound).
func holding(ctx context.Context, slots chan struct{}, fn func() error) error {
	if slots == nil {
		return fn()
	}
	select {
	case slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-slots }()
	return fn()
}

func parallel(ctx context.Context, n, limit int, fn func(ctx context.Context, i int) error) error {
	errs := make([]error, n)
	sem := make(chan struct{}, max(limit, 1))
	var wg sync.WaitGroup
	for i := range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			errs[i] = ctx.Err()
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = fn(ctx, i)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
