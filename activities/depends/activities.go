package depends

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
)

// CheckName is the activity's name: a wire contract, never rename.
const CheckName = "depends.Check"

// State is what readiness reads of a dependency.
type State struct {
	Sync   appspec.SyncStatus
	Health appspec.HealthStatus
	// Operation is the ID of its running or pending sync, "" when none.
	Operation string
}

// Apps reads the apps' states.
type Apps interface {
	// State returns an app's state; false when no such app runs.
	State(ctx context.Context, ref appspec.DependencyRef) (State, bool, error)
}

// Activities is the dependency capability.
type Activities struct{ apps Apps }

// New checks its dependencies.
func New(apps Apps) (*Activities, error) {
	if apps == nil {
		return nil, errors.New("depends: apps are required")
	}
	return &Activities{apps: apps}, nil
}

// Register registers the activity under its constant name.
func (a *Activities) Register(r worker.ActivityRegistry) {
	r.RegisterActivityWithOptions(a.Check, activity.RegisterOptions{Name: CheckName})
}

// CheckInput lists the dependencies to judge.
type CheckInput struct {
	Dependencies []appspec.DependencyRef `json:"dependencies"`
}

// Waiting is one dependency that is not ready, and why.
type Waiting struct {
	App    appspec.DependencyRef `json:"app"`
	Reason string                `json:"reason"`
}

// CheckOutput lists the dependencies not ready, in the input's order:
// none when every one is.
type CheckOutput struct {
	Waiting []Waiting `json:"waiting,omitempty"`
}

// Check judges each dependency.
func (a *Activities) Check(ctx context.Context, in CheckInput) (CheckOutput, error) {
	var out CheckOutput
	for _, d := range in.Dependencies {
		st, ok, err := a.apps.State(ctx, d)
		if err != nil {
			return CheckOutput{}, failure.Activity(fmt.Errorf("read dependency %s: %w", d, err))
		}
		why := "does not exist"
		if ok {
			why = NotReady(st)
		}
		if why != "" {
			out.Waiting = append(out.Waiting, Waiting{App: d, Reason: why})
		}
	}
	return out, nil
}

// NotReady says why a dependency in state st is not ready, or "".
func NotReady(st State) string {
	switch {
	case st.Operation != "":
		return "sync " + st.Operation + " is running"
	case st.Sync != appspec.SyncSynced || st.Health != appspec.HealthHealthy:
		return fmt.Sprintf("is %s and %s; waits for Synced and Healthy", st.Sync, st.Health)
	}
	return ""
}
