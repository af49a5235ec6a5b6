package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/windlass-cd/windlass/activities/source"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/customizations"
	"github.com/windlass-cd/windlass/internal/health"
	"github.com/windlass-cd/windlass/internal/resourcefilter"
	"github.com/windlass-cd/windlass/internal/settings"
)

// CustomizationsConfig configures the resource customizations: Lua health
// checks (and action scripts, for the resource actions) in Argo CD's
// resource_customizations layout, from a directory or a Git repository,
// and argocd-cm's inline scripts and system-wide ignoreDifferences.
type CustomizationsConfig struct {
	// Dir is a local tree. RepoURL, Revision (default HEAD) and Path (a
	// folder of the repository) name a tree in Git, read with the
	// worker's Git credentials. At most one of the two.
	Dir      string
	RepoURL  string
	Revision string
	Path     string
	// Every is how often the tree is read again, and reloaded when its
	// revision moved (default DefaultCustomizationsEvery).
	Every time.Duration
	// Health holds the limits of one script run and the inline health
	// scripts, which win over the tree's.
	Health health.Options
	// Actions are inline action scripts by "group/Kind".
	Actions map[string]customizations.ActionScripts
	// IgnoreDifferences apply to every app, next to its own.
	IgnoreDifferences []appspec.ResourceIgnoreDifferences
	// Resources are the kinds left alone per cluster (resource.exclusions
	// and resource.inclusions; nil: none).
	Resources *resourcefilter.Filter
}

// DefaultCustomizationsEvery is how often the customizations are read
// again by default.
const DefaultCustomizationsEvery = 3 * time.Minute

// customizationsLoadTimeout bounds the first load, when the worker starts.
const customizationsLoadTimeout = time.Minute

func (c CustomizationsConfig) scripted() bool {
	return c.Dir != "" || c.RepoURL != "" || len(c.Health.Inline) > 0 || len(c.Actions) > 0
}

// CustomizationsSettings reads the source set through the settings API
// (settings.Store).
type CustomizationsSettings interface {
	Customizations(ctx context.Context) (settings.CustomizationsSource, error)
}

// newLibrary builds the library and loads it once. Without a directory or
// repository flag, and with set, the source is read from set before every
// load, so that a change through the API needs no restart. A tree in Git that does
// not load yet is not fatal: the worker starts with the built-in checks,
// the status says why, and the next load tries again. A directory or an
// inline script that does not load is a configuration error.
func newLibrary(c CustomizationsConfig, src *source.Activities, set CustomizationsSettings, rdb redis.UniversalClient, rec customizations.Recorder, log *slog.Logger) (*customizations.Library, error) {
	if c.Dir != "" && c.RepoURL != "" {
		return nil, errors.New("worker: resource customizations come from a directory or a repository, not both")
	}
	opts := []customizations.Option{customizations.WithLogger(log)}
	if rec != nil {
		opts = append(opts, customizations.WithRecorder(rec))
	}
	if rdb != nil {
		opts = append(opts, customizations.WithReport(publishStatus(customizations.RedisStatuses{Client: rdb}, c.every(), log)))
	}
	switch {
	case c.Dir != "":
		opts = append(opts, customizations.WithSource(customizations.Dir(c.Dir), c.Dir))
	case c.RepoURL != "":
		rev := c.Revision
		if rev == "" {
			rev = "HEAD"
		}
		tree := source.Tree{Git: src, RepoURL: c.RepoURL, Revision: rev, Path: c.Path}
		opts = append(opts, customizations.WithSource(tree, tree.String()))
	case set != nil:
		opts = append(opts, customizations.WithResolver(settingsResolver(set, src)))
	}
	lib := customizations.NewLibrary(c.Health, c.Actions, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), customizationsLoadTimeout)
	defer cancel()
	if err := lib.Load(ctx); err != nil && c.RepoURL == "" && (c.Dir != "" || set == nil) {
		return nil, err
	}
	return lib, nil
}

// settingsResolver reads the source from the settings on each load.
func settingsResolver(set CustomizationsSettings, src *source.Activities) customizations.Resolver {
	return func(ctx context.Context) (customizations.Source, string, error) {
		cs, err := set.Customizations(ctx)
		if err != nil || cs.RepoURL == "" {
			return nil, "", err
		}
		rev := cs.Revision
		if rev == "" {
			rev = "HEAD"
		}
		tree := source.Tree{Git: src, RepoURL: cs.RepoURL, Revision: rev, Path: cs.Path}
		return tree, tree.String(), nil
	}
}

func (c CustomizationsConfig) every() time.Duration {
	if c.Every <= 0 {
		return DefaultCustomizationsEvery
	}
	return c.Every
}

const msgStatusNotPublished = "resource customizations status not published"

// publishStatus publishes each load's status and the set in use under this
// process's identity (the Temporal SDK's default), for the API, which
// shows the status and assesses health with the set; both expire after
// three intervals without a load.
func publishStatus(store customizations.RedisStatuses, every time.Duration, log *slog.Logger) func(context.Context, customizations.Status, *customizations.Set) {
	host, _ := os.Hostname()
	identity := fmt.Sprintf("%d@%s", os.Getpid(), host)
	return func(ctx context.Context, st customizations.Status, set *customizations.Set) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := store.Publish(ctx, identity, st, set, 3*every+time.Minute); err != nil {
			log.Warn(msgStatusNotPublished, "err", err)
		}
	}
}

// Customizations returns the worker's resource customizations, or nil
// when it has none configured.
func (w *Worker) Customizations() *customizations.Library { return w.lib }
