package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/internal/appspec"
)

// ActionRequest is the runAction update: run a resource action on one of
// the app's resources, for Initiator. The API has checked that the caller
// may and that the app tracks the resource.
type ActionRequest struct {
	Resource  appspec.ResourceKey `json:"resource"`
	Action    string              `json:"action"`
	Params    map[string]string   `json:"params,omitempty"`
	Initiator string              `json:"initiator,omitempty"`
}

// ActionResult is what the action changed.
type ActionResult struct {
	Changes []cluster.ActionChange `json:"changes"`
}

// Event reasons of resource actions.
const (
	ReasonActionRan    = "ResourceActionRan"
	ReasonActionFailed = "ResourceActionFailed"
)

// Activity error types of a failed action that the update passes on
// (activities/cluster and internal/actions own them).
var actionErrorTypes = []string{ErrTypeUnknownAction, ErrTypeActionDisabled, ErrTypeResourceNotFound}

func (a *application) validateAction(_ workflow.Context, req ActionRequest) error {
	if a.deleting != nil {
		return temporal.NewApplicationError("the application is being deleted", ErrTypeDeleting)
	}
	if a.moving != nil {
		return errMoving(*a.moving)
	}
	if req.Action == "" || req.Resource.Kind == "" || req.Resource.Name == "" {
		return temporal.NewApplicationError("an action needs a name, and a resource with a kind and a name", ErrTypeInvalidSpec, "action")
	}
	return nil
}

// runAction runs the action on the destination cluster's queue and
// records it in the app's events. The pass it wakes shows its effect.
func (a *application) runAction(ctx workflow.Context, req ActionRequest) (ActionResult, error) {
	ctx = withLocalSteps(ctx)
	cctx := a.onCluster(ctx, false)
	if a.project == nil { // a new run before its first pass
		if p, err := getProject(ctx, a.st.Spec.Project); err == nil {
			a.project = &p
		}
	}
	in := cluster.RunActionInput{
		ActionInput: cluster.ActionInput{Target: clusterTarget(a.destSpec()), Resource: req.Resource},
		Action:      req.Action, Params: req.Params,
	}
	if a.project != nil {
		in.Target.ServiceAccount, _ = a.project.ServiceAccountFor(in.Target.Destination)
	}
	what := req.Action + " on " + req.Resource.Label()
	who := req.Initiator
	if who == "" {
		who = "unknown"
	}
	out, err := runResourceAction(cctx, in)
	if err != nil {
		msg := errorMessage(err)
		a.event(ctx, EventWarning, ReasonActionFailed, who+" ran action "+what+": "+msg)
		typ := ErrTypeActionFailed
		var app *temporal.ApplicationError
		if errors.As(err, &app) {
			for _, t := range actionErrorTypes {
				if app.Type() == t {
					typ = t
				}
			}
		}
		return ActionResult{}, temporal.NewApplicationError(msg, unavailableOr(err, typ))
	}
	a.event(ctx, EventNormal, ReasonActionRan, who+" ran action "+what)
	a.wake.SendAsync(true)
	return ActionResult{Changes: out.Changes}, nil
}

// actionOptions runs an action once: a retry of one that created an
// object would create another. The caller sees the error and may retry.
func actionOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           clusterQueue(ctx),
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
}
