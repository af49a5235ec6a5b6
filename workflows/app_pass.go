package workflows

// This file holds the reconcile pass: the steps of activities/reconcile
// run as activities, the quick pass, and telling the cluster watch the
// app's kinds.

import (
	"slices"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/activities/reconcile"
	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/activities/source"
	"github.com/windlass-cd/windlass/activities/watch"
	"github.com/windlass-cd/windlass/internal/appspec"
)

// resolveSources resolves every source's revision; override replaces the
// revision of the first source that renders. It returns the revision shown
// for the app.
func (a *application) resolveSources(ctx workflow.Context, spec appspec.Application, override string, hard bool) (string, []render.SourceRequest, error) {
	steps := passSteps{ctx: ctx}
	return reconcile.BuildSources(spec, override, func(_ int, s appspec.Source, rev string) (string, error) {
		return steps.Resolve(s, rev, hard)
	})
}

// passSteps runs a pass's steps as activities: the cheap ones from ctx
// (local, withLocalSteps), the compare from cctx, on the cluster's queue.
type passSteps struct{ ctx, cctx workflow.Context }

func (s passSteps) Project(name string) (appspec.Project, error) { return getProject(s.ctx, name) }

func (s passSteps) Resolve(src appspec.Source, rev string, fresh bool) (string, error) {
	if src.Chart != "" {
		// A chart from a Helm repository: the "SHA" is its version.
		v, err := resolveChart(s.ctx, render.ResolveChartInput{RepoURL: src.RepoURL, Chart: src.Chart, Version: rev})
		return v.Version, err
	}
	r, err := resolveRevision(s.ctx, source.ResolveInput{RepoURL: src.RepoURL, Revision: rev, Hard: fresh})
	return r.SHA, err
}

func (s passSteps) Render(req render.Request, hard bool) (render.ManifestRef, error) {
	return renderManifests(s.ctx, render.RenderInput{Request: req, Hard: hard})
}

func (s passSteps) Compare(in cluster.CompareInput) (cluster.CompareOutput, error) {
	return compareState(s.cctx, in, localCompare(s.cctx))
}

// reconcile checks the project, resolves, renders and compares, then
// publishes the status. Errors make the status Unknown with the message;
// they never fail the workflow.
func (a *application) reconcile(ctx workflow.Context) {
	a.passes++
	hard, fresh := a.hard, a.hard || a.fresh
	now := workflow.Now(ctx)
	drift := a.drifted && !a.otherCause && !a.timerFired && !hard && now.Sub(a.listedAt) < a.refreshBase()
	a.hard, a.fresh, a.drifted, a.otherCause = false, false, false, false
	if !drift {
		a.listedAt = now
	}
	spec := a.st.Spec
	a.passSpec = spec
	st := &a.st.Status
	st.ReconciledAt = now
	st.Revision = spec.AllSources()[0].Revision()
	defer func() { a.unpublished = true }()
	// Replay-safe: the SDK's workflow metrics handler drops what a replay
	// records. No command, so no version marker.
	defer func(start time.Time) {
		workflow.GetMetricsHandler(ctx).Timer(MetricReconcileDuration).Record(workflow.Now(ctx).Sub(start))
	}(st.ReconciledAt)

	// The quick pass, unless a hard refresh asks for a render, runs the
	// steps it can; the pass runs the rest itself, with the same code.
	cctx := a.onCluster(ctx, hard)
	if a.destErr != nil {
		a.unknown(ctx, "destination", a.destErr)
		return
	}
	in := reconcile.Input{App: a.destSpec(), Fresh: fresh, Hard: hard, Drift: drift, Last: a.st.Manifests}
	var p reconcile.Pass
	steps := passSteps{ctx: ctx, cctx: cctx}
	if !hard {
		p = a.quickPass(ctx, cctx, in)
		if p.Next == reconcile.StepResolve {
			// The quick pass could not resolve: a Git server that is slow
			// or silent must not hold the workflow task, and every status
			// query with it, through a local activity's retries.
			steps.ctx = withRegularSteps(ctx)
		}
	}
	err := reconcile.Run(steps, in, &p)
	if p.Project != nil {
		a.project = p.Project
	}
	if err != nil {
		a.unknown(ctx, p.Next.String(), err)
		return
	}
	ref, cmp, sources := *p.Manifests, *p.Compare, p.Sources
	if ref.SHA != st.SHA {
		a.st.SelfHeal = SelfHealState{}
	}
	// A commit's metadata, once known, stays while the SHA does: a
	// worker that has not read the commit renders without it.
	if m := ref.RevisionMetadata; m != nil || ref.SHA != st.SHA {
		st.RevisionMetadata = m
	}
	st.Revision, st.SHA, st.Sync, st.Health, st.Resources, st.Message = p.Revision, ref.SHA, cmp.Sync, cmp.Health, cmp.Resources, ""
	st.OmittedResources, st.ResourcesRef, st.OmittedKinds = cmp.Omitted, cmp.ResourcesRef, cmp.OmittedKinds
	st.Conditions = cmp.Conditions
	a.st.Manifests, a.st.Sources = &ref, sources
	a.checkOrphans(cctx, drift)
	a.reportKinds(ctx)
	if a.timerFired && st.Sync == appspec.SyncSynced {
		a.st.SelfHeal = SelfHealState{} // quiet for a whole interval: drift is over
	}
}

// quickPass runs the pass's cheap steps as one local activity
// (reconcile.QuickPass) and returns how far it got. A quick pass that
// fails as a whole (it is not retried), or whose answer is not whole,
// answers for no step.
func (a *application) quickPass(ctx, cctx workflow.Context, in reconcile.Input) reconcile.Pass {
	var p reconcile.Pass
	qin := reconcile.QuickInput{Input: in, Compare: localCompare(cctx)}
	if err := workflow.ExecuteLocalActivity(quickPassOptions(ctx), reconcile.QuickPassName, qin).Get(ctx, &p); err != nil {
		workflow.GetLogger(ctx).Warn(msgQuickPassFailed, "error", errorMessage(err))
		return reconcile.Pass{}
	}
	if !p.Valid(in) {
		return reconcile.Pass{}
	}
	return p
}

const msgQuickPassFailed = "quick pass failed; the pass runs its steps one by one"

// localCompare says whether a pass's compare, started from ctx, runs as a
// local activity: when the cluster's activities run on the workflow's own
// queue (a worker of that queue reaches the cluster, as for a sync's
// plan). Every pass compares, so this saves an activity task and a
// workflow task per pass: a timer's pass that finds nothing changed is
// one workflow task.
func localCompare(ctx workflow.Context) bool {
	return clusterQueue(ctx) == ""
}

func (a *application) unknown(ctx workflow.Context, step string, err error) {
	st := &a.st.Status
	st.Sync, st.Health = appspec.SyncUnknown, appspec.HealthUnknown
	st.Message = step + ": " + errorMessage(err)
	workflow.GetLogger(ctx).Warn(msgReconcileFailed, "step", step, "error", st.Message)
}

// reportKinds tells the cluster watch which kinds the app manages when
// that set has changed. A failed signal is retried on the next pass.
func (a *application) reportKinds(ctx workflow.Context) {
	if !a.cfg.DriftWatch {
		return
	}
	var kinds []watch.GroupKind
	for _, r := range a.st.Status.Resources {
		if k := (watch.GroupKind{Group: r.Group, Kind: r.Kind}); !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	for _, k := range a.st.Status.OmittedKinds {
		if k := (watch.GroupKind{Group: k.Group, Kind: k.Kind}); !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	kinds = watchKinds([]WatchRequest{{Kinds: kinds}})
	if slices.Equal(kinds, a.st.WatchedKinds) {
		return
	}
	a.signalWatchAsync(ctx, kinds)
}

// signalWatchAsync tells the cluster watch the app's kinds without
// waiting for the signal to land, so the pass (and an automated sync)
// goes on in the same workflow task. The kinds count as watched at once;
// a signal that fails restores the previous kinds, so that the next pass
// sends them again.
func (a *application) signalWatchAsync(ctx workflow.Context, kinds []watch.GroupKind) {
	f := a.sendWatch(ctx, kinds)
	prev := a.st.WatchedKinds
	a.st.WatchedKinds = kinds
	workflow.Go(ctx, func(c workflow.Context) {
		if err := f.Get(c, nil); err != nil {
			workflow.GetLogger(c).Warn(msgWatchSignal, "error", errorMessage(err))
			if slices.Equal(a.st.WatchedKinds, kinds) {
				a.st.WatchedKinds = prev
			}
		}
	})
}

func (a *application) signalWatch(ctx workflow.Context, kinds []watch.GroupKind) {
	if err := a.sendWatch(ctx, kinds).Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn(msgWatchSignal, "error", errorMessage(err))
		return
	}
	a.st.WatchedKinds = kinds
}

// sendWatch signals the cluster watch of the app's destination that the
// app manages kinds (none: it is gone).
func (a *application) sendWatch(ctx workflow.Context, kinds []watch.GroupKind) workflow.Future {
	spec := a.destSpec()
	req := WatchRequest{App: spec.Project + "/" + spec.Name, Kinds: kinds}
	return workflow.SignalExternalWorkflow(ctx, ClusterWatchWorkflowID(spec.Destination.Server), "", SignalWatch, req)
}

const msgWatchSignal = "cannot reach the cluster watch"

// onCluster returns ctx with the destination cluster's task queue for
// its cluster activities (withClusterQueue). The queue is resolved by an
// activity when unknown, older than placementTTL, for another server, or
// when refresh is set; a failed resolution keeps the last queue of the
// same server (none: the default queue) and is retried on the next call.
func (a *application) onCluster(ctx workflow.Context, refresh bool) workflow.Context {
	dest := a.st.Spec.Destination
	p := a.st.Placement
	if p != nil && !p.matches(dest) {
		p = nil
	}
	now := workflow.Now(ctx)
	a.destErr = nil
	if p == nil || refresh || now.Sub(p.ResolvedAt) >= placementTTL {
		np, err := resolvePlacement(ctx, dest, now)
		switch {
		case err == nil:
			p = np
		case isUnknownCluster(err):
			p, a.destErr = nil, err // a name no longer registered is not used
		default:
			workflow.GetLogger(ctx).Warn(msgPlacementFailed, "server", dest.Cluster(), "error", errorMessage(err))
		}
		a.st.Placement = p
	}
	if p == nil {
		return ctx
	}
	return withClusterQueue(ctx, p.TaskQueue)
}

const (
	// placementTTL is how long a resolved task queue is used before it is
	// asked for again: a changed cluster mapping applies within it (or at
	// once with a hard refresh).
	placementTTL       = 10 * time.Minute
	msgPlacementFailed = "cannot resolve the cluster's task queue; using the last known"
)
