package reconcile

import (
	"context"
	"errors"
	"log/slog"
	"slices"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/activities/project"
	"github.com/windlass-cd/windlass/activities/source"
	"github.com/windlass-cd/windlass/internal/appspec"
)

// QuickPassName is the quick pass's activity name.
const QuickPassName = "reconcile.QuickPass"

// Projects reads a project (project.Activities).
type Projects interface {
	Get(ctx context.Context, in project.GetInput) (appspec.Project, error)
}

// Resolver resolves a revision (source.Activities).
type Resolver interface {
	ResolveRevision(ctx context.Context, in source.ResolveInput) (source.ResolveOutput, error)
}

// Comparer compares desired and live state (cluster.Activities).
type Comparer interface {
	Compare(ctx context.Context, in cluster.CompareInput) (cluster.CompareOutput, error)
}

// Activities runs the quick pass over the capabilities' own activities.
type Activities struct {
	projects Projects
	sources  Resolver
	cluster  Comparer
	log      *slog.Logger
}

// New checks its dependencies.
func New(projects Projects, sources Resolver, cmp Comparer, log *slog.Logger) (*Activities, error) {
	if projects == nil || sources == nil || cmp == nil {
		return nil, errors.New("reconcile: projects, sources and the comparer are required")
	}
	if log == nil {
		log = slog.Default()
	}
	return &Activities{projects: projects, sources: sources, cluster: cmp, log: log}, nil
}

// Register registers the activity under its constant name.
func (a *Activities) Register(r worker.ActivityRegistry) {
	r.RegisterActivityWithOptions(a.QuickPass, activity.RegisterOptions{Name: QuickPassName})
}

// PassInput is one pass's cheap steps.
type PassInput struct {
	// Project is the app's project; App is checked against it before any
	// source is resolved, as the workflow does.
	Project string              `json:"project"`
	App     appspec.Application `json:"app"`
	// Sources are the app's sources to resolve, in order.
	Sources []source.ResolveInput `json:"sources"`
	// Compare, when set, runs only if every source resolves to the SHA
	// at its index in Expect: the SHAs its manifests were rendered at.
	Expect  []string              `json:"expect,omitempty"`
	Compare *cluster.CompareInput `json:"compare,omitempty"`
}

// PassOutput holds the steps that succeeded, in order: a nil Project
// means none did, a nil Resolved that not every source resolved, and a
// nil Compare that the compare did not run or failed.
type PassOutput struct {
	Project  *appspec.Project       `json:"project,omitempty"`
	Resolved []source.ResolveOutput `json:"resolved,omitempty"`
	Compare  *cluster.CompareOutput `json:"compare,omitempty"`
}

const msgQuickPassStopped = "quick pass stopped; the workflow runs the step on its own"

// QuickPass reads the project, checks the app against it, resolves every
// source and, when none moved from Expect, compares. It returns no error
// for a step's failure: it stops there, and the workflow runs that step
// and the ones after it itself.
func (a *Activities) QuickPass(ctx context.Context, in PassInput) (PassOutput, error) {
	var out PassOutput
	proj, err := a.projects.Get(ctx, project.GetInput{Name: in.Project})
	if err != nil {
		a.stopped(in, "project", err)
		return out, nil
	}
	out.Project = &proj
	if err := proj.CheckApp(in.App); err != nil {
		a.stopped(in, "project", err)
		return out, nil
	}
	resolved := make([]source.ResolveOutput, 0, len(in.Sources))
	for _, s := range in.Sources {
		r, err := a.sources.ResolveRevision(ctx, s)
		if err != nil {
			a.stopped(in, "resolve revision", err)
			return out, nil
		}
		resolved = append(resolved, r)
	}
	out.Resolved = resolved
	if in.Compare == nil || !slices.Equal(shas(resolved), in.Expect) {
		return out, nil
	}
	cmp, err := a.cluster.Compare(ctx, *in.Compare)
	if err != nil {
		a.stopped(in, "compare", err)
		return out, nil
	}
	out.Compare = &cmp
	return out, nil
}

// stopped logs why the pass stopped early; the step's own run reports
// the error in the app's status.
func (a *Activities) stopped(in PassInput, step string, err error) {
	a.log.Debug(msgQuickPassStopped, "app", in.App.Name, "project", in.Project, "step", step, "error", err.Error())
}

func shas(rs []source.ResolveOutput) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.SHA
	}
	return out
}
