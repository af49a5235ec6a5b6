package worker

import (
	"context"

	"github.com/windlass-cd/windlass/activities/depends"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/worker/children"
)

// dependencyStates reads an app's dependencies from their app workflows.
type dependencyStates struct{ apps *children.TemporalApps }

var _ depends.Apps = dependencyStates{}

func (d dependencyStates) State(ctx context.Context, ref appspec.DependencyRef) (depends.State, bool, error) {
	v, ok, err := d.apps.View(ctx, ref.Project, ref.Name)
	if err != nil || !ok {
		return depends.State{}, ok, err
	}
	st := depends.State{Sync: v.Status.Sync, Health: v.Status.Health}
	if op := v.Status.Operation; op != nil {
		st.Operation = op.SyncID
	}
	return st, true, nil
}
