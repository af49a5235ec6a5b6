package rollout

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/windlass-cd/windlass/internal/appspec"
)

// Activity names: wire contracts, never rename.
const (
	SyncName  = "rollout.Sync"
	CheckName = "rollout.Check"
	PlanName  = "rollout.Plan"
)

// Error types of Sync's non-retryable failures (wire contracts).
const (
	ErrTypeAppNotFound = "RolloutAppNotFound"
	ErrTypeRefused     = "RolloutSyncRefused"
)

// Errors of Apps.Sync: the app runs another operation (Sync retries), or
// it refused the sync for good (sync windows, a skipped reconcile, a
// deletion). Apps wraps them with the app's message.
var (
	ErrBusy    = errors.New("another operation is in progress")
	ErrRefused = errors.New("sync refused")
)

// PastSync is one of an app's syncs, running or recorded.
type PastSync struct {
	ID        string
	Initiator string
	SHA       string
	Message   string
	// Done is true once the sync has ended, Succeeded when it succeeded.
	Done, Succeeded bool
}

// AppState is what a rollout reads of an app.
type AppState struct {
	Sync   appspec.SyncStatus
	Health appspec.HealthStatus
	// SHA is the revision the app last compared.
	SHA string
	// Operation is its running sync, nil when none.
	Operation *PastSync
	// Syncs are its recent syncs.
	Syncs []PastSync
	// Labels are the app's labels, which steps select by.
	Labels map[string]string
}

// Apps reads and syncs apps through their workflows.
type Apps interface {
	// State reads an app; false when no such app runs.
	State(ctx context.Context, project, name string) (AppState, bool, error)
	// Sync asks the app for a sync with the initiator, sent under
	// updateID, and returns the sync's ID.
	Sync(ctx context.Context, project, name, initiator, updateID string) (string, error)
	// SetApps lists the running apps of a set in one read, with their
	// sync, health, compared revision and labels (no operation or syncs).
	SetApps(ctx context.Context, set string) (map[AppRef]AppState, error)
}

// Activities is the rollout capability.
type Activities struct{ apps Apps }

// New checks its dependencies.
func New(apps Apps) (*Activities, error) {
	if apps == nil {
		return nil, errors.New("rollout: apps are required")
	}
	return &Activities{apps: apps}, nil
}

// Register registers the activities under their constant names.
func (a *Activities) Register(r worker.ActivityRegistry) {
	r.RegisterActivityWithOptions(a.Sync, activity.RegisterOptions{Name: SyncName})
	r.RegisterActivityWithOptions(a.Check, activity.RegisterOptions{Name: CheckName})
	r.RegisterActivityWithOptions(a.Plan, activity.RegisterOptions{Name: PlanName})
}

// AppRef names an app.
type AppRef struct {
	Project string `json:"project"`
	Name    string `json:"name"`
}

func (r AppRef) String() string { return r.Project + "/" + r.Name }

// SyncInput asks for one sync of an app.
type SyncInput struct {
	App AppRef `json:"app"`
	// Key identifies this sync of the rollout; it becomes the sync's
	// initiator and the update's ID, so that asking again finds it.
	Key string `json:"key"`
}

// SyncOutput names the sync.
type SyncOutput struct {
	SyncID string `json:"syncID"`
}

// Sync asks the app for a sync, unless one with the same key is running
// or recorded already: then it answers that one.
func (a *Activities) Sync(ctx context.Context, in SyncInput) (SyncOutput, error) {
	st, ok, err := a.apps.State(ctx, in.App.Project, in.App.Name)
	if err != nil {
		return SyncOutput{}, fmt.Errorf("read %s: %w", in.App, err)
	}
	if !ok {
		return SyncOutput{}, temporal.NewNonRetryableApplicationError("application "+in.App.String()+" does not exist", ErrTypeAppNotFound, nil)
	}
	if p, ok := st.find(func(p PastSync) bool { return p.Initiator == in.Key }); ok {
		return SyncOutput{SyncID: p.ID}, nil
	}
	id, err := a.apps.Sync(ctx, in.App.Project, in.App.Name, in.Key, in.Key)
	switch {
	case errors.Is(err, ErrBusy):
		return SyncOutput{}, fmt.Errorf("sync %s: %w", in.App, err)
	case err != nil && errors.Is(err, ErrRefused):
		return SyncOutput{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("sync %s: %v", in.App, err), ErrTypeRefused, nil)
	case err != nil:
		return SyncOutput{}, fmt.Errorf("sync %s: %w", in.App, err)
	}
	return SyncOutput{SyncID: id}, nil
}

// find returns the running or recorded sync that f picks.
func (s AppState) find(f func(PastSync) bool) (PastSync, bool) {
	if s.Operation != nil && f(*s.Operation) {
		return *s.Operation, true
	}
	for _, p := range s.Syncs {
		if f(p) {
			return p, true
		}
	}
	return PastSync{}, false
}

// Verdicts of Check.
const (
	// Progressing: the sync runs, or the app is not yet Synced and
	// Healthy at its revision.
	Progressing = "Progressing"
	// Healthy: the sync succeeded and the app is Synced and Healthy at
	// the synced revision, with no operation running.
	Healthy = "Healthy"
	// Failed: the sync failed, or the app is Degraded or gone.
	Failed = "Failed"
)

// AppSync is an app and the sync the rollout started on it.
type AppSync struct {
	App    AppRef `json:"app"`
	SyncID string `json:"syncID"`
}

// CheckInput lists the apps to judge.
type CheckInput struct {
	Apps []AppSync `json:"apps"`
}

// Verdict judges one app.
type Verdict struct {
	App     AppRef `json:"app"`
	Verdict string `json:"verdict"`
	Message string `json:"message,omitempty"`
}

// CheckOutput has one verdict per app, in the input's order.
type CheckOutput struct {
	Apps []Verdict `json:"apps"`
}

// Check judges each app's sync.
func (a *Activities) Check(ctx context.Context, in CheckInput) (CheckOutput, error) {
	out := CheckOutput{Apps: make([]Verdict, 0, len(in.Apps))}
	for _, s := range in.Apps {
		st, ok, err := a.apps.State(ctx, s.App.Project, s.App.Name)
		if err != nil {
			return CheckOutput{}, fmt.Errorf("read %s: %w", s.App, err)
		}
		v := Verdict{App: s.App, Verdict: Failed, Message: "the application does not exist"}
		if ok {
			v.Verdict, v.Message = judge(st, s.SyncID)
		}
		out.Apps = append(out.Apps, v)
	}
	return out, nil
}

// judge reads the app's state after its sync id.
func judge(st AppState, id string) (string, string) {
	p, ok := st.find(func(p PastSync) bool { return p.ID == id })
	switch {
	case !ok:
		return Progressing, "sync " + id + " is not recorded yet"
	case !p.Done:
		return Progressing, "sync " + id + " is running"
	case !p.Succeeded:
		msg := "sync " + id + " failed"
		if p.Message != "" {
			msg += ": " + p.Message
		}
		return Failed, msg
	case st.Health == appspec.HealthDegraded:
		return Failed, "is Degraded after sync " + id
	case st.Operation != nil:
		return Progressing, "sync " + st.Operation.ID + " is running"
	case st.Sync != appspec.SyncSynced || st.Health != appspec.HealthHealthy:
		return Progressing, fmt.Sprintf("is %s and %s; waits for Synced and Healthy", st.Sync, st.Health)
	case p.SHA != "" && st.SHA != p.SHA:
		return Progressing, "is at " + st.SHA + ", sync " + id + " applied " + p.SHA
	}
	return Healthy, ""
}
