package worker

import (
	"context"

	"github.com/windlass-cd/windlass/activities/appsets"
	"github.com/windlass-cd/windlass/activities/source"
	"github.com/windlass-cd/windlass/internal/appset"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/settings"
	"github.com/windlass-cd/windlass/worker/children"
)

// setApps gives the set activities the app workflows, as app of apps
// reads and writes them.
type setApps struct{ apps *children.TemporalApps }

var _ appsets.Apps = setApps{}

func (s setApps) Spec(ctx context.Context, project, name string) (appspec.Application, bool, error) {
	v, ok, err := s.apps.View(ctx, project, name)
	return v.Spec, ok, err
}

func (s setApps) Owned(ctx context.Context, owner string) ([]string, error) {
	return s.apps.Children(ctx, owner)
}

func (s setApps) Upsert(ctx context.Context, spec appspec.Application) error {
	return s.apps.Upsert(ctx, spec)
}

func (s setApps) Delete(ctx context.Context, project, name, cascade, initiator string) error {
	return s.apps.Delete(ctx, project, name, cascade, initiator)
}

// newAppSets makes the set activities: generators read the registered
// clusters, Git through the worker's mirrors, and tokens and plugin
// settings from the settings' secret store.
func newAppSets(cfg Config, src *source.Activities, sets *settings.Store) (*appsets.Activities, error) {
	eval := appset.New(sets, freshTrees{git: src}, sets.Secrets(),
		appset.WithLimit(cfg.AppSetMaxElements), appset.WithAllowedAPIs(cfg.AppSetSCMURLs...))
	apps := &children.TemporalApps{Client: cfg.Client, Namespace: cfg.Namespace, TaskQueue: cfg.TaskQueue, Config: cfg.AppConfig}
	return appsets.New(eval, setApps{apps}, sets, cfg.Logger)
}

// freshTrees reads a set's Git trees at the revision's current commit:
// a pass asks the server (ls-remote) rather than the shared ref cache,
// so that a pass a webhook started sees the pushed commit. A pass reads
// each repository once.
type freshTrees struct{ git *source.Activities }

func (f freshTrees) Tree(ctx context.Context, repoURL, revision string) (string, error) {
	out, err := f.git.ResolveRevision(ctx, source.ResolveInput{RepoURL: repoURL, Revision: revision, Hard: true})
	if err != nil {
		return "", err
	}
	return source.Trees{Git: f.git}.Tree(ctx, repoURL, out.SHA)
}
