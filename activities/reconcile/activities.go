package reconcile

import (
	"context"
	"errors"
	"log/slog"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/activities/project"
	"github.com/windlass-cd/windlass/activities/render"
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

// Renders answers a render request from the manifest cache alone
// (render.Renderer): false when the cache does not hold it.
type Renders interface {
	Cached(ctx context.Context, req render.Request) (render.ManifestRef, bool)
	// RenderQuick renders req when that is cheap (render.Renderer).
	RenderQuick(ctx context.Context, req render.Request) (render.ManifestRef, bool)
}

// Comparer compares desired and live state (cluster.Activities).
type Comparer interface {
	Compare(ctx context.Context, in cluster.CompareInput) (cluster.CompareOutput, error)
}

// Activities runs the quick pass over the capabilities' own activities.
type Activities struct {
	projects Projects
	sources  Resolver
	renders  Renders
	cluster  Comparer
	log      *slog.Logger
}

// New checks its dependencies.
func New(projects Projects, sources Resolver, renders Renders, cmp Comparer, log *slog.Logger) (*Activities, error) {
	if projects == nil || sources == nil || renders == nil || cmp == nil {
		return nil, errors.New("reconcile: projects, sources, renders and the comparer are required")
	}
	if log == nil {
		log = slog.Default()
	}
	return &Activities{projects: projects, sources: sources, renders: renders, cluster: cmp, log: log}, nil
}

// Register registers the activity under its constant name.
func (a *Activities) Register(r worker.ActivityRegistry) {
	r.RegisterActivityWithOptions(a.QuickPass, activity.RegisterOptions{Name: QuickPassName})
}

// QuickInput is the quick pass's input.
type QuickInput struct {
	Input
	// Compare lets the quick pass compare: the cluster's activities run
	// in this worker.
	Compare bool `json:"compare,omitempty"`
}

const msgQuickPassStopped = "quick pass stopped; the workflow runs the step on its own"

// QuickPass runs a pass's steps (Run) as far as they are cheap: the
// project, the ls-remote of every Git source, the manifests last rendered
// or the manifest cache's (it never renders), and the compare when in
// lets it. It returns no error for a step's failure: it stops there, and
// the workflow runs that step and the ones after it itself.
func (a *Activities) QuickPass(ctx context.Context, in QuickInput) (Pass, error) {
	var p Pass
	if err := Run(quickSteps{ctx: ctx, a: a, compare: in.Compare}, in.Input, &p); err != nil {
		a.log.Debug(msgQuickPassStopped, "app", in.App.Name, "project", in.App.Project, "step", p.Next.String(), "error", err.Error())
	}
	return p, nil
}

// quickSteps are the steps of the quick pass, over the capabilities'
// own activities.
type quickSteps struct {
	ctx     context.Context
	a       *Activities
	compare bool
}

var (
	errChart      = errors.New("a chart's version is resolved by an activity of its own")
	errNotCached  = errors.New("the manifest cache does not hold the request")
	errNotCompare = errors.New("the compare runs on the cluster's task queue")
)

func (q quickSteps) Project(name string) (appspec.Project, error) {
	return q.a.projects.Get(q.ctx, project.GetInput{Name: name})
}

func (q quickSteps) Resolve(src appspec.Source, rev string, fresh bool) (string, error) {
	if src.Chart != "" {
		return "", errChart
	}
	out, err := q.a.sources.ResolveRevision(q.ctx, source.ResolveInput{RepoURL: src.RepoURL, Revision: rev, Hard: fresh})
	return out.SHA, err
}

// Render answers from the manifest cache, or renders when that is cheap
// (RenderQuick), and only with manifests of req itself.
func (q quickSteps) Render(req render.Request, hard bool) (render.ManifestRef, error) {
	if hard {
		return render.ManifestRef{}, errNotCached
	}
	ref, ok := q.a.renders.Cached(q.ctx, req)
	if !ok {
		ref, ok = q.a.renders.RenderQuick(q.ctx, req)
	}
	if !ok || !SameRequest(ref.Request, req) {
		return render.ManifestRef{}, errNotCached
	}
	return ref, nil
}

func (q quickSteps) Compare(in cluster.CompareInput) (cluster.CompareOutput, error) {
	if !q.compare {
		return cluster.CompareOutput{}, errNotCompare
	}
	return q.a.cluster.Compare(q.ctx, in)
}
