package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/internal/appspec"
)

// ErrTypeSyncFailed is the error type of a failed SyncWorkflow. Its details
// hold the SyncResult.
const ErrTypeSyncFailed = "SyncFailed"

// SyncWorkflow runs one sync: render at the target SHA (a cache hit in the
// common case), apply in sync order, then wait until the resources are
// healthy. A failed sync fails the workflow with an error of type
// ErrTypeSyncFailed whose details carry the SyncResult, so the Temporal UI
// shows it as failed and the parent still gets the per-resource log.
func SyncWorkflow(ctx workflow.Context, in SyncInput) (SyncResult, error) {
	res := SyncResult{SyncSummary: SyncSummary{ID: in.ID, Revision: in.Revision, SHA: in.SHA, Initiator: in.Initiator,
		Phase: PhaseRunning, StartedAt: workflow.Now(ctx)}}
	fail := func(msg string, err error) (SyncResult, error) {
		res.Phase, res.FinishedAt = PhaseFailed, workflow.Now(ctx)
		res.Message = msg
		if err != nil {
			res.Message = msg + ": " + errorMessage(err)
		}
		return res, temporal.NewNonRetryableApplicationError(res.Message, ErrTypeSyncFailed, nil, res)
	}
	spec := in.Spec
	ref, err := renderManifests(ctx, render.RenderInput{Request: renderRequest(spec, in.SHA)})
	if err != nil {
		return fail("render failed", err)
	}
	if ref.Count == 0 && !(spec.SyncPolicy != nil && spec.SyncPolicy.Automated != nil && spec.SyncPolicy.Automated.AllowEmpty) && in.Initiator == InitiatorAutomated {
		return fail("render produced no resources and allowEmpty is off", nil)
	}
	target := clusterTarget(spec)
	applied, err := applyManifests(ctx, cluster.ApplyInput{Target: target, Manifests: ref, DryRun: in.DryRun})
	res.Resources = applied.Resources
	if err != nil {
		return fail("apply failed", err)
	}
	if in.DryRun {
		res.Phase, res.FinishedAt, res.Message = PhaseSucceeded, workflow.Now(ctx), "dry run"
		return res, nil
	}
	wait := time.Duration(in.WaitSeconds) * time.Second
	if wait <= 0 {
		wait = 5 * time.Minute
	}
	state, err := waitHealthy(ctx, cluster.WaitInput{CompareInput: cluster.CompareInput{Target: target, Manifests: ref}}, wait)
	res.Health = state.Health
	if err != nil {
		return fail("waiting for health failed", err)
	}
	if state.Health == appspec.HealthDegraded {
		return fail("resources are degraded", nil)
	}
	res.Phase, res.FinishedAt, res.Message = PhaseSucceeded, workflow.Now(ctx), "successfully synced"
	return res, nil
}

// Initiators of a sync.
const (
	InitiatorAutomated = "automated"
)

func renderRequest(spec appspec.Application, sha string) render.Request {
	return render.SingleSource(spec.Name, spec.Destination.Namespace, spec.Source, sha)
}

func clusterTarget(spec appspec.Application) cluster.Target {
	t := cluster.Target{Project: spec.Project, App: spec.Name, Destination: spec.Destination}
	if spec.SyncPolicy != nil {
		t.SyncOptions = spec.SyncPolicy.SyncOptions
	}
	return t
}

// errorMessage unwraps Temporal's activity and child errors to the message
// of the cause, which is what a user needs to read.
func errorMessage(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Message()
	}
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) {
		return "timed out (" + timeout.TimeoutType().String() + ")"
	}
	var canceled *temporal.CanceledError
	if errors.As(err, &canceled) {
		return "canceled"
	}
	return err.Error()
}
