package worker

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/windlass-cd/windlass/activities/appsets"
	"github.com/windlass-cd/windlass/activities/rollout"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/worker/children"
	"github.com/windlass-cd/windlass/workflows"
)

// rolloutApps reads and syncs a rollout's apps through their workflows.
type rolloutApps struct {
	client client.Client
	apps   *children.TemporalApps
}

var _ rollout.Apps = rolloutApps{}

func (r rolloutApps) State(ctx context.Context, project, name string) (rollout.AppState, bool, error) {
	v, ok, err := r.apps.View(ctx, project, name)
	if err != nil || !ok {
		return rollout.AppState{}, ok, err
	}
	st := rollout.AppState{Sync: v.Status.Sync, Health: v.Status.Health, SHA: v.Status.SHA, Labels: v.Spec.Labels}
	if op := v.Status.Operation; op != nil {
		st.Operation = &rollout.PastSync{ID: op.SyncID, Initiator: op.Initiator}
	}
	for _, h := range v.History {
		st.Syncs = append(st.Syncs, rollout.PastSync{ID: h.ID, Initiator: h.Initiator, SHA: h.SHA, Message: h.Message,
			Done: h.Phase != workflows.PhasePending && h.Phase != workflows.PhaseRunning, Succeeded: h.Phase == workflows.PhaseSucceeded})
	}
	return st, true, nil
}

// SetApps lists the set's running apps with what their search attributes
// say: one list, where State queries each app.
func (r rolloutApps) SetApps(ctx context.Context, set string) (map[rollout.AppRef]rollout.AppState, error) {
	listed, err := r.apps.ChildrenListed(ctx, appsets.Owner(set))
	if err != nil {
		return nil, err
	}
	out := make(map[rollout.AppRef]rollout.AppState, len(listed))
	for _, a := range listed {
		out[rollout.AppRef{Project: a.Project, Name: a.Name}] = rollout.AppState{Sync: appspec.SyncStatus(a.Sync),
			Health: appspec.HealthStatus(a.Health), SHA: a.SHA, Labels: a.Labels}
	}
	return out, nil
}

// Sync runs the app's sync update, as the API does, and waits until the
// app has accepted and started it.
func (r rolloutApps) Sync(ctx context.Context, project, name, initiator, updateID string) (string, error) {
	h, err := r.client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: workflows.AppWorkflowID(project, name), UpdateName: workflows.UpdateSync, UpdateID: updateID,
		Args:         []any{workflows.SyncRequest{Initiator: initiator}},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	var acc workflows.SyncAccepted
	if err == nil {
		err = h.Get(ctx, &acc)
	}
	var appErr *temporal.ApplicationError
	switch {
	case err == nil:
		return acc.ID, nil
	case !errors.As(err, &appErr):
		return "", err
	case appErr.Type() == workflows.ErrTypeOperationInProgress:
		return "", fmt.Errorf("%w: %s", rollout.ErrBusy, appErr.Message())
	case appErr.Type() == workflows.ErrTypeUnavailable:
		return "", err
	}
	return "", fmt.Errorf("%w: %s", rollout.ErrRefused, appErr.Message())
}
