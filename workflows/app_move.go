package workflows

// This file holds moving an app to another project. The workflow ID holds
// the project, so a move is a handover: the old run starts the app's
// workflow under its new ID as a child it abandons, carrying its whole
// state, then completes with MovedTo set. The new run first retracks the
// live objects (their tracking names the project), then goes on as the
// old one would have.

import (
	"errors"
	"slices"
	"strconv"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/internal/appspec"
)

// move is the app's move to another project, once asked for.
type move struct {
	moving   *MoveRequest
	moveDone bool
	moveErr  error
}

// Event reasons of a move.
const (
	ReasonMoved         = "Moved"
	ReasonMoveFailed    = "MoveFailed"
	ReasonRetracked     = "Retracked"
	ReasonRetrackFailed = "RetrackFailed"
)

func errMoving(req MoveRequest) error {
	return temporal.NewApplicationError("the application is moving to project "+req.Spec.Project, ErrTypeMoving)
}

func (a *application) validateMove(_ workflow.Context, req MoveRequest) error {
	switch {
	case a.deleting != nil:
		return temporal.NewApplicationError("the application is being deleted", ErrTypeDeleting)
	case a.moving != nil:
		return errMoving(*a.moving)
	case a.st.Status.Operation != nil || len(a.pending) > 0 || a.admitting > 0:
		return temporal.NewApplicationError("an operation is in progress; move the application when it has ended", ErrTypeOperationInProgress)
	}
	spec := req.Spec.Defaulted()
	if err := spec.Validate(); err != nil {
		var fe *appspec.FieldError
		if errors.As(err, &fe) {
			return temporal.NewApplicationError(err.Error(), ErrTypeInvalidSpec, fe.Field)
		}
		return temporal.NewApplicationError(err.Error(), ErrTypeInvalidSpec)
	}
	if spec.Name != a.st.Spec.Name {
		return temporal.NewApplicationError("a move cannot rename the application", ErrTypeInvalidSpec, "name")
	}
	if spec.Project == a.st.Spec.Project {
		return temporal.NewApplicationError("the application is already in project "+spec.Project, ErrTypeInvalidSpec, "project")
	}
	return nil
}

// moveUpdate checks the new project, lets the loop hand the app over and
// waits for the outcome. The app takes no operation meanwhile.
func (a *application) moveUpdate(ctx workflow.Context, req MoveRequest) (MoveResult, error) {
	// Validators of updates delivered together may all run first.
	if err := a.validateMove(ctx, req); err != nil {
		return MoveResult{}, err
	}
	req.Spec = req.Spec.Defaulted()
	a.moving, a.moveDone, a.moveErr = &req, false, nil
	if _, err := a.checkProject(ctx, req.Spec); err != nil {
		a.moving = nil
		return MoveResult{}, err
	}
	a.wake.SendAsync(true)
	if err := workflow.Await(ctx, func() bool { return a.moveDone }); err != nil {
		return MoveResult{}, err
	}
	if err := a.moveErr; err != nil {
		a.moving, a.moveErr = nil, nil
		return MoveResult{}, err
	}
	return MoveResult{ID: AppWorkflowID(req.Spec.Project, req.Spec.Name)}, nil
}

// runMove starts the app's workflow in its new project with this run's
// state; it reports whether this run is done, and its result.
func (a *application) runMove(ctx workflow.Context) (bool, error) {
	req := *a.moving
	spec := req.Spec
	from := a.st.Spec.Project
	if a.cfg.DriftWatch && len(a.st.WatchedKinds) > 0 {
		a.signalWatch(ctx, nil) // the new run tells the watch its new name
	}
	who := req.Initiator
	if who == "" {
		who = "unknown"
	}
	a.event(ctx, EventNormal, ReasonMoved, "moved from project "+from+" to "+spec.Project+" by "+who+
		" (syncs up to "+strconv.Itoa(a.st.SyncSeq)+" ran in "+from+")")
	st := a.st
	st.Spec = spec
	st.Moves = append(slices.Clone(a.st.Moves), ProjectMove{Project: from, LastSeq: a.st.SyncSeq, At: workflow.Now(ctx), Initiator: req.Initiator})
	st.Retrack, st.WatchedKinds, st.MovedTo = from, nil, ""
	st.Status.Operation = nil
	id := AppWorkflowID(spec.Project, spec.Name)
	// The list and a parent's children find the app before its first pass.
	sa := []temporal.SearchAttributeUpdate{saProject.ValueSet(spec.Project), saApp.ValueSet(spec.Project + "/" + spec.Name), saName.ValueSet(spec.Name)}
	if spec.ManagedBy != nil {
		sa = append(sa, saParent.ValueSet(spec.ManagedBy.App))
	}
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:            id,
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_ABANDON,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		TypedSearchAttributes: temporal.NewSearchAttributes(sa...),
	})
	fut := workflow.ExecuteChildWorkflow(cctx, ApplicationWorkflowName, AppInput{Spec: spec, Config: a.cfg, State: &st})
	if err := fut.GetChildWorkflowExecution().Get(ctx, nil); err != nil {
		var exists *temporal.ChildWorkflowExecutionAlreadyStartedError
		if errors.As(err, &exists) {
			a.moveErr = temporal.NewApplicationError("project "+spec.Project+" already has an application named "+spec.Name, ErrTypeAppExists, "project")
		} else {
			a.moveErr = temporal.NewApplicationError("move to project "+spec.Project+": "+errorMessage(err), ErrTypeMoving)
		}
		a.event(ctx, EventWarning, ReasonMoveFailed, errorMessage(a.moveErr))
		a.moveDone = true
		a.otherCause = true
		return false, nil
	}
	a.st.MovedTo = spec.Project
	a.moveDone = true
	err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) && a.inFlight == 0 })
	a.drainSignals()
	return true, err
}

// retrack points the tracking of the app's live objects, which still name
// the project it moved out of, at its project. It reports whether that is
// done; until then the app runs no pass, so that nothing it would sync or
// prune sees the objects as another app's.
func (a *application) retrack(ctx workflow.Context) bool {
	t := clusterTarget(a.destSpec())
	t.Project = a.st.Retrack
	cctx := a.onCluster(ctx, false)
	out, err := retrackApp(cctx, cluster.RetrackInput{Target: t, Project: a.st.Spec.Project, Manifests: a.st.Manifests})
	if err != nil {
		a.st.Status.Message = "the move from project " + a.st.Retrack + " waits: retracking the resources failed: " + errorMessage(err)
		a.event(ctx, EventWarning, ReasonRetrackFailed, a.st.Status.Message)
		return false
	}
	a.event(ctx, EventNormal, ReasonRetracked, strconv.Itoa(out.Retracked)+" resources now tracked in project "+a.st.Spec.Project)
	a.st.Retrack, a.st.Status.Message = "", ""
	return true
}
