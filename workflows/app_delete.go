package workflows

// This file holds terminating an operation, deleting the app, and
// approving deletions.

import (
	"slices"
	"strconv"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/internal/appspec"
)

func (a *application) validateTerminate(_ workflow.Context, _ TerminateRequest) error {
	if a.cancelSync == nil {
		return temporal.NewApplicationError("no operation is running", ErrTypeNoOperation)
	}
	return nil
}

func (a *application) terminate(ctx workflow.Context, req TerminateRequest) error {
	if a.cancelSync == nil {
		return temporal.NewApplicationError("no operation is running", ErrTypeNoOperation)
	}
	a.cancelSync()
	msg := "operation " + a.st.Status.Operation.SyncID + " terminated"
	if req.Initiator != "" {
		msg += " by " + req.Initiator
	}
	if req.Reason != "" {
		msg += ": " + req.Reason
	}
	a.event(ctx, EventNormal, "OperationTerminated", msg)
	return nil
}

func (a *application) validateDelete(_ workflow.Context, req DeleteRequest) error {
	if a.deleting != nil {
		return temporal.NewApplicationError("the application is already being deleted", ErrTypeDeleting)
	}
	if a.moving != nil {
		return errMoving(*a.moving)
	}
	switch req.Cascade {
	case "", cluster.CascadeForeground, cluster.CascadeBackground, cluster.CascadeOrphan:
		return nil
	}
	return temporal.NewApplicationError("cascade must be foreground, background or orphan", ErrTypeInvalidSpec, "cascade")
}

// deleteUpdate stops any operation, lets the loop delete the app's
// resources and waits for the outcome. On success the workflow completes.
func (a *application) deleteUpdate(ctx workflow.Context, req DeleteRequest) (DeleteResult, error) {
	if req.Cascade == "" {
		req.Cascade = cluster.CascadeForeground
	}
	a.deleting, a.deleted, a.deleteApproved = &req, false, false
	if a.cancelSync != nil {
		a.cancelSync()
	}
	a.wake.SendAsync(true)
	awaiting := func() bool { return len(a.st.Status.AwaitingDeletionApproval) > 0 && !a.deleteApproved }
	if err := workflow.Await(ctx, func() bool { return a.deleted || awaiting() }); err != nil {
		return DeleteResult{}, err
	}
	if !a.deleted {
		// The deletion goes on once approveDeletion approves these.
		return DeleteResult{AwaitingApproval: a.st.Status.AwaitingDeletionApproval}, nil
	}
	return a.deleteRes, a.deleteErr
}

// runDelete deletes the app's resources; it reports whether the app is
// gone.
func (a *application) runDelete(ctx workflow.Context) bool {
	req := *a.deleting
	for _, p := range a.pending {
		a.started[p.id] = temporal.NewApplicationError("the application is being deleted", ErrTypeDeleting)
	}
	a.pending = nil
	a.st.Status.Operation = nil
	// The drift watch stops first: the deletion's own events are no drift,
	// and a stream of refresh signals could keep the workflow from closing.
	if a.cfg.DriftWatch && len(a.st.WatchedKinds) > 0 {
		a.signalWatch(ctx, nil)
	}
	cctx := a.onCluster(ctx, false)
	in := cluster.DeleteAppInput{Target: clusterTarget(a.destSpec()), Cascade: req.Cascade, Manifests: a.st.Manifests}
	out, err := deleteApp(cctx, in)
	if err == nil && len(out.AwaitingApproval) > 0 {
		out, err = a.awaitDeleteApproval(ctx, in, out)
	}
	a.deleteRes, a.deleted = DeleteResult{Resources: out.Resources, Omitted: out.Omitted}, true
	if err != nil {
		a.deleteErr = temporal.NewApplicationError("delete: "+errorMessage(err), ErrTypeDeleting)
		a.event(ctx, EventWarning, "DeleteFailed", errorMessage(err))
		a.deleting = nil
		return false
	}
	a.deleteErr = nil
	return true
}

// drainSignals takes the signals that arrived for a workflow about to
// close: a refresh, a sync progress report or a sync request has nothing
// left to act on.
func (a *application) drainSignals() {
	for _, c := range []workflow.ReceiveChannel{a.refresh, a.progress, a.syncSig, a.rollbackSig} {
		for c.ReceiveAsync(nil) {
		}
	}
}

// awaitDeleteApproval answers the delete update with the resources that
// wait for approval, waits for approveDeletion, then deletes again with
// the approval; it returns the combined log.
func (a *application) awaitDeleteApproval(ctx workflow.Context, in cluster.DeleteAppInput, first cluster.DeleteAppOutput) (cluster.DeleteAppOutput, error) {
	a.st.Status.AwaitingDeletionApproval = first.AwaitingApproval
	a.event(ctx, EventNormal, "DeletionAwaitsApproval", strconv.Itoa(len(first.AwaitingApproval))+" resources marked Delete=confirm wait for approval")
	a.publish(ctx)
	if err := workflow.Await(ctx, func() bool { return a.deleteApproved }); err != nil {
		return first, err
	}
	a.st.Status.AwaitingDeletionApproval = nil
	in.Approved = true
	out, err := deleteApp(ctx, in)
	kept := slices.DeleteFunc(first.Resources, func(r cluster.ResourceResult) bool {
		return slices.Contains(first.AwaitingApproval, r.ResourceKey)
	})
	out.Resources = append(kept, out.Resources...)
	return out, err
}

// validateApproveDeletion accepts an approval only while a sync's prune
// or the app's deletion waits for one.
func (a *application) validateApproveDeletion(_ workflow.Context, _ ApproveDeletionRequest) error {
	if len(a.st.Status.AwaitingDeletionApproval) > 0 && !a.deleteApproved {
		return nil
	}
	if op := a.st.Status.Operation; op != nil && len(op.AwaitingApproval) > 0 {
		return nil
	}
	return temporal.NewApplicationError("no resource is waiting for deletion approval", ErrTypeNoOperation)
}

// approveDeletion lets the waiting deletion or sync delete the resources
// marked Prune=confirm or Delete=confirm; it answers with their keys.
func (a *application) approveDeletion(ctx workflow.Context, req ApproveDeletionRequest) ([]appspec.ResourceKey, error) {
	if err := a.validateApproveDeletion(ctx, req); err != nil {
		return nil, err
	}
	who := req.Initiator
	if who == "" {
		who = "unknown"
	}
	if keys := a.st.Status.AwaitingDeletionApproval; len(keys) > 0 {
		a.deleteApproved = true
		a.event(ctx, EventNormal, "DeletionApproved", "deletion of "+strconv.Itoa(len(keys))+" resources approved by "+who)
		return keys, nil
	}
	op := a.st.Status.Operation
	keys := op.AwaitingApproval
	if err := workflow.SignalExternalWorkflow(ctx, op.SyncID, "", SignalApproveDeletion, req).Get(ctx, nil); err != nil {
		return nil, err
	}
	if a.st.Status.Operation == op {
		op.AwaitingApproval = nil
	}
	a.event(ctx, EventNormal, "PruneApproved", "pruning of "+strconv.Itoa(len(keys))+" resources approved by "+who)
	return keys, nil
}
