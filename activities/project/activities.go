package project

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/settings"
)

// Activity names: wire contracts, never rename.
const (
	GetName        = "project.Get"
	SyncWindowName = "project.SyncWindow"
)

// ErrNotFound is returned for a project that does not exist: the store's
// own error (settings.ErrProjectNotFound).
var ErrNotFound = settings.ErrProjectNotFound

var _ Store = (*settings.Store)(nil)

// Store reads projects.
type Store interface {
	Project(ctx context.Context, name string) (appspec.Project, error)
}

// StaticStore holds projects in memory; the default project exists unless
// it is overridden. It is safe for concurrent use.
type StaticStore struct {
	mu       sync.RWMutex
	projects map[string]appspec.Project
}

// NewStaticStore validates and stores projects.
func NewStaticStore(projects ...appspec.Project) (*StaticStore, error) {
	s := &StaticStore{projects: map[string]appspec.Project{appspec.DefaultProject: appspec.DefaultProjectSpec()}}
	for _, p := range projects {
		if err := s.Put(p); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Put adds or replaces a project.
func (s *StaticStore) Put(p appspec.Project) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("project %s: %w", p.Name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.projects[p.Name] = p
	return nil
}

// Project returns the named project or ErrNotFound.
func (s *StaticStore) Project(_ context.Context, name string) (appspec.Project, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	p, ok := s.projects[name]
	if !ok {
		return appspec.Project{}, fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	return p, nil
}

// Names lists the projects, sorted.
func (s *StaticStore) Names() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, 0, len(s.projects))
	for n := range s.projects {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// RepoLister lists the registered repositories (settings.Store).
type RepoLister interface {
	Repos(ctx context.Context) ([]settings.Repository, error)
}

// Activities is the project capability.
type Activities struct {
	store Store
	repos RepoLister
}

// Option configures New.
type Option func(*Activities)

// WithRepos makes Get fill in the repositories registered for other
// projects (appspec.Project.ForeignRepos), so that CheckApp refuses them.
func WithRepos(l RepoLister) Option { return func(a *Activities) { a.repos = l } }

// New checks its dependencies.
func New(store Store, opts ...Option) (*Activities, error) {
	if store == nil {
		return nil, errors.New("project: store is required")
	}
	a := &Activities{store: store}
	for _, o := range opts {
		o(a)
	}
	return a, nil
}

// Register registers the activities under their constant names.
func (a *Activities) Register(r worker.ActivityRegistry) {
	r.RegisterActivityWithOptions(a.Get, activity.RegisterOptions{Name: GetName})
	r.RegisterActivityWithOptions(a.SyncWindow, activity.RegisterOptions{Name: SyncWindowName})
}

// GetInput names a project.
type GetInput struct {
	Name string `json:"name"`
}

// Get returns a project.
func (a *Activities) Get(ctx context.Context, in GetInput) (appspec.Project, error) {
	p, err := a.store.Project(ctx, in.Name)
	if err != nil || a.repos == nil {
		return p, failure.Activity(err)
	}
	repos, err := a.repos.Repos(ctx)
	if err != nil {
		return p, failure.Activity(fmt.Errorf("repositories of project %s: %w", in.Name, err))
	}
	p.ForeignRepos = settings.ForeignRepos(repos, p.Name)
	return p, nil
}

// WindowInput asks whether a sync may run at Now.
type WindowInput struct {
	Project   appspec.Project `json:"project"`
	App       string          `json:"app"`
	Namespace string          `json:"namespace,omitempty"`
	Server    string          `json:"server,omitempty"`
	Now       time.Time       `json:"now"`
	Manual    bool            `json:"manual,omitempty"`
}

// SyncWindow judges the project's sync windows.
func (a *Activities) SyncWindow(_ context.Context, in WindowInput) (appspec.WindowDecision, error) {
	d, err := in.Project.SyncAllowed(in.Now, in.App, in.Namespace, in.Server, in.Manual)
	if err != nil {
		return d, failure.Activity(fmt.Errorf("%w: sync windows of %s: %w", ErrInvalid, in.Project.Name, err))
	}
	return d, nil
}

// ErrInvalid marks a project whose windows cannot be evaluated.
var ErrInvalid = failure.Permanent("InvalidProject", "invalid project")
