package customizations

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	resactions "github.com/windlass-cd/windlass/internal/actions"
	"github.com/windlass-cd/windlass/internal/health"
)

// Source is where a tree comes from. Fetch returns a directory holding the
// tree as of revision, a commit SHA ("" for a plain directory, which is
// read on every load). The directory must stay readable until the next
// Fetch.
type Source interface {
	Fetch(ctx context.Context) (dir, revision string, err error)
}

// Dir is a tree in a local directory.
type Dir string

// Fetch returns the directory itself.
func (d Dir) Fetch(context.Context) (string, string, error) { return string(d), "", nil }

// Recorder is told the outcome of each load (internal/metrics).
type Recorder interface {
	CustomizationsLoaded(ok bool)
}

// Status is what a Library reports about its loads.
type Status struct {
	// Source names where the tree comes from (repository, revision and
	// path, or a directory); empty when there is only the inline set.
	Source string `json:"source,omitempty"`
	// Origin says what set Source: OriginFlags (the worker's flags, which
	// win) or OriginSettings (the settings API); empty with no source.
	Origin string `json:"origin,omitempty"`
	// Revision is the commit of the set in use; LoadedAt when it was loaded.
	Revision string `json:"revision,omitempty"`
	// Digest names the set in use by its content (Set.Digest), under which
	// RedisStatuses.Publish stores it for the API (Mirror).
	Digest   string    `json:"digest,omitempty"`
	LoadedAt time.Time `json:"loadedAt,omitzero"`
	// Error says why the last load failed, FailedAt when; the set in use
	// is then the last good one (or the built-in checks, if none loaded).
	Error    string    `json:"error,omitempty"`
	FailedAt time.Time `json:"failedAt,omitzero"`
	// ActionKinds counts the kinds with action scripts in the set in use.
	ActionKinds int `json:"actionKinds"`
}

// Origins of a source.
const (
	OriginFlags    = "flags"
	OriginSettings = "settings"
)

// Resolver picks the source before each load, so that it may change
// without a restart (the settings API's). A nil src means none: the set is
// the inline scripts alone.
type Resolver func(ctx context.Context) (src Source, name string, err error)

// Library serves the current Set. Create it with NewLibrary; it is safe for
// concurrent use.
type Library struct {
	src     Source
	name    string
	origin  string
	resolve Resolver
	// setName is the name of the source of the Set in use.
	setName string
	opts    health.Options
	actions map[string]ActionScripts
	log     *slog.Logger
	rec     Recorder
	report  func(context.Context, Status, *Set)

	cur    atomic.Pointer[Set]
	mu     sync.Mutex // serialises loads and guards status
	status Status
}

// Option configures NewLibrary.
type Option func(*Library)

// WithSource sets where the tree comes from; name describes it in the
// status and logs. Without one, the set is the inline scripts alone.
func WithSource(src Source, name string) Option {
	return func(l *Library) { l.src, l.name, l.origin = src, name, OriginFlags }
}

// WithResolver asks resolve for the source before each load; a change of
// source loads the new one even at the same revision. It replaces
// WithSource.
func WithResolver(resolve Resolver) Option {
	return func(l *Library) { l.resolve, l.origin = resolve, OriginSettings }
}

// WithRecorder reports each load's outcome to r.
func WithRecorder(r Recorder) Option {
	return func(l *Library) { l.rec = r }
}

// WithReport calls report with the status and the set in use (nil before
// the first good load) after every load, to publish them
// (RedisStatuses.Publish).
func WithReport(report func(context.Context, Status, *Set)) Option {
	return func(l *Library) { l.report = report }
}

// WithLogger logs loads and failures to log.
func WithLogger(log *slog.Logger) Option {
	return func(l *Library) { l.log = log }
}

// NewLibrary makes a Library on the health options (limits and inline
// health scripts) and inline action scripts. It holds no set until Load.
func NewLibrary(opts health.Options, actions map[string]ActionScripts, options ...Option) *Library {
	l := &Library{opts: opts, actions: actions, log: slog.New(slog.DiscardHandler)}
	for _, o := range options {
		o(l)
	}
	l.status.Source = l.name
	if l.name != "" {
		l.status.Origin = l.origin
	}
	return l
}

// Log messages.
const (
	msgLoaded     = "resource customizations loaded"
	msgLoadFailed = "resource customizations did not load; the last good set stays"
)

// Load reads the source and, when its revision moved (or it is a
// directory), builds a new Set and serves it. On failure the last good
// Set stays, and the status and the error say why.
func (l *Library) Load(ctx context.Context) error {
	err := l.loadOnce(ctx)
	if l.report != nil {
		l.report(ctx, l.Status(), l.Current())
	}
	return err
}

func (l *Library) loadOnce(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	set, err := l.load(ctx)
	if err != nil {
		l.status.Error, l.status.FailedAt = err.Error(), time.Now()
		l.log.Warn(msgLoadFailed, "source", l.name, "revision", l.status.Revision, "error", err)
		l.record(false)
		return err
	}
	if set != nil {
		// A directory is loaded every time: only its first load, or one
		// after a failure, is news.
		level := slog.LevelInfo
		if prev := l.cur.Swap(set); prev != nil && prev.Revision == set.Revision && l.status.Error == "" {
			level = slog.LevelDebug
		}
		l.setName = l.name
		l.status.Revision, l.status.Digest, l.status.LoadedAt, l.status.ActionKinds = set.Revision, set.Digest, time.Now(), len(set.Actions)
		l.log.Log(ctx, level, msgLoaded, "source", l.name, "revision", set.Revision, "action_kinds", len(set.Actions))
	}
	l.status.Error, l.status.FailedAt = "", time.Time{}
	l.record(true)
	return nil
}

// load builds a new Set, or returns nil when the revision in use is
// current.
func (l *Library) load(ctx context.Context) (*Set, error) {
	if l.resolve != nil {
		src, name, err := l.resolve(ctx)
		if err != nil {
			return nil, fmt.Errorf("read the customizations source: %w", err)
		}
		if name != l.name {
			l.src, l.name, l.status.Source, l.status.Origin = src, name, name, ""
			if name != "" {
				l.status.Origin = OriginSettings
			}
		}
	}
	var dir, rev string
	if l.src != nil {
		var err error
		if dir, rev, err = l.src.Fetch(ctx); err != nil {
			return nil, fmt.Errorf("fetch %s: %w", l.name, err)
		}
		if cur := l.cur.Load(); cur != nil && rev != "" && cur.Revision == rev && l.setName == l.name {
			return nil, nil
		}
	}
	set, err := build(dir, l.opts, l.actions)
	if err != nil {
		if rev != "" {
			return nil, fmt.Errorf("%s at %s: %w", l.name, rev, err)
		}
		return nil, err
	}
	set.Revision = rev
	return set, set.digest()
}

// Run loads every interval until ctx ends.
func (l *Library) Run(ctx context.Context, every time.Duration) {
	tick(ctx, every, func() { _ = l.Load(ctx) }) // logged and in the status
}

// tick calls fn every interval until ctx ends.
func tick(ctx context.Context, every time.Duration, fn func()) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

// Current returns the Set in use, or nil before the first good load.
func (l *Library) Current() *Set { return l.cur.Load() }

// Status reports the last loads.
func (l *Library) Status() Status {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.status
}

// Assess assesses health with the current Set, or with the built-in checks
// before the first good load.
func (l *Library) Assess(obj *unstructured.Unstructured) health.Result {
	return assess(l.cur.Load(), obj)
}

// assess assesses health with s, or with the built-in checks when s is nil.
func assess(s *Set, obj *unstructured.Unstructured) health.Result {
	if s != nil {
		return s.Health.Assess(obj)
	}
	return health.Assess(obj)
}

// builtinActions is the catalog before the first good load.
var builtinActions, _ = resactions.FromScripts(nil, nil)

// Actions are the resource actions of a Library's or a Mirror's current
// Set (the built-ins before the first good load), so that actions follow
// reloads as health does.
type Actions struct{ sets interface{ Current() *Set } }

// Actions returns the library's actions.
func (l *Library) Actions() Actions { return Actions{l} }

// List lists obj's actions.
func (a Actions) List(obj *unstructured.Unstructured) ([]resactions.Action, error) {
	return a.catalog().List(obj)
}

// Run runs an action on obj; it applies nothing.
func (a Actions) Run(obj *unstructured.Unstructured, name string, params map[string]string) ([]resactions.Operation, error) {
	return a.catalog().Run(obj, name, params)
}

func (a Actions) catalog() *resactions.Catalog {
	if s := a.sets.Current(); s != nil && s.Catalog != nil {
		return s.Catalog
	}
	return builtinActions
}

func (l *Library) record(ok bool) {
	if l.rec != nil {
		l.rec.CustomizationsLoaded(ok)
	}
}
