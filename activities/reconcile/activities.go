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

// PassInput is one pass's cheap steps.
type PassInput struct {
	// Project is the app's project; App is checked against it before any
	// source is resolved, as the workflow does.
	Project string              `json:"project"`
	App     appspec.Application `json:"app"`
	// Sources are the app's sources to resolve, in order.
	Sources []source.ResolveInput `json:"sources"`
	// Expect are the SHAs the app's manifests were last rendered at, by
	// source, if rendering them again would be the same request.
	Expect []string `json:"expect,omitempty"`
	// Render, when set, is the app's render request without SHAs, one
	// source for each of Sources: when a source moved from Expect, the
	// pass fills in the resolved SHAs and looks the request up in the
	// manifest cache (it never renders).
	Render *render.Request `json:"render,omitempty"`
	// Compare, when set, compares its Manifests if no source moved from
	// Expect, else the manifests the cache held for Render; without
	// either, it does not run.
	Compare *cluster.CompareInput `json:"compare,omitempty"`
}

// PassOutput holds the steps that succeeded, in order: a nil Project
// means none did, a nil Resolved that not every source resolved, a nil
// Rendered that the cache was not asked or did not hold the request, and
// a nil Compare that the compare did not run or failed. A Compare with a
// Rendered is of the Rendered manifests.
type PassOutput struct {
	Project  *appspec.Project       `json:"project,omitempty"`
	Resolved []source.ResolveOutput `json:"resolved,omitempty"`
	Rendered *render.ManifestRef    `json:"rendered,omitempty"`
	Compare  *cluster.CompareOutput `json:"compare,omitempty"`
}

const msgQuickPassStopped = "quick pass stopped; the workflow runs the step on its own"

// QuickPass reads the project, checks the app against it, resolves every
// source and, when none moved from Expect, compares; when one moved, it
// looks the new request up in the manifest cache and compares what it
// holds. It returns no error for a step's failure: it stops there, and
// the workflow runs that step and the ones after it itself.
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
	var compare cluster.CompareInput
	if in.Compare != nil {
		compare = *in.Compare
	}
	if in.Expect == nil || !slices.Equal(shas(resolved), in.Expect) {
		req, ok := atSHAs(in.Render, resolved)
		if !ok {
			return out, nil
		}
		ref, ok := a.renders.Cached(ctx, req)
		if !ok {
			a.stopped(in, "render", errNotCached)
			return out, nil
		}
		out.Rendered, compare.Manifests = &ref, ref
	}
	if in.Compare == nil {
		return out, nil
	}
	cmp, err := a.cluster.Compare(ctx, compare)
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

var errNotCached = errors.New("the manifest cache does not hold the request")

// atSHAs is req with each source at its resolved SHA; false without a
// request, or one whose sources do not match the resolved ones.
func atSHAs(req *render.Request, resolved []source.ResolveOutput) (render.Request, bool) {
	if req == nil || len(req.Sources) != len(resolved) {
		return render.Request{}, false
	}
	out := *req
	out.Sources = slices.Clone(req.Sources)
	for i := range out.Sources {
		out.Sources[i].SHA = resolved[i].SHA
	}
	return out, true
}

func shas(rs []source.ResolveOutput) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.SHA
	}
	return out
}
