package workflows

import (
	"fmt"

	"github.com/windlass-cd/windlass/internal/appset"
	"github.com/windlass-cd/windlass/internal/labelmatch"
)

// Names of the progressive rollout (RollingSync): wire contracts, never
// rename.
const (
	RollingSyncWorkflowName = "windlass.RollingSyncWorkflow"

	// Updates of a rollout; each takes a RolloutControl and answers the
	// RolloutStatus after it.
	UpdateRolloutPause  = "pause"
	UpdateRolloutResume = "resume"
	UpdateRolloutAbort  = "abort"
	// QueryRollout answers the RolloutStatus.
	QueryRollout = "rollout"

	// ErrTypeRolloutState: the update does not apply in the rollout's
	// phase (resume of a running rollout, pause of a finished one).
	ErrTypeRolloutState = "RolloutState"

	// MemoRolloutStep is the memo key holding the step a rollout is at
	// (1-based), upserted as each step starts.
	MemoRolloutStep = "rolloutStep"
)

// Strategy and deletion orders of an ApplicationSet (Argo CD's words).
const (
	StrategyRollingSync    = appset.StrategyRollingSync
	DeletionOrderAllAtOnce = appset.DeletionOrderAllAtOnce
	DeletionOrderReverse   = appset.DeletionOrderReverse
)

// RolloutWorkflowID is the ID of a set's rollout.
func RolloutWorkflowID(set string) string { return "appset/" + set + "/rollout" }

// RolloutInput starts a rollout: the set's steps over its apps, which the
// set has already updated to Target.
type RolloutInput struct {
	Set string `json:"set"`
	// Project is the set's template project, for RBAC.
	Project string `json:"project,omitempty"`
	// Target names what the apps roll to (the set's revision or
	// generation); it is part of each sync's initiator.
	Target        string        `json:"target"`
	Steps         []RolloutStep `json:"steps"`
	DeletionOrder string        `json:"deletionOrder,omitempty"`
	Apps          []RolloutApp  `json:"apps"`
	// PollSeconds bounds the wait between two reads of the syncing apps
	// (default 10; the first read comes after 2 s).
	PollSeconds int `json:"pollSeconds,omitempty"`
	// HistoryThreshold is the history length at which the run continues
	// as new (default 10000).
	HistoryThreshold int `json:"historyThreshold,omitempty"`
	// State is carried by continue-as-new; nil at the start.
	State *RolloutStatus `json:"state,omitempty"`
}

// RolloutStep is one step of a RollingSync strategy.
type RolloutStep struct {
	MatchExpressions []labelmatch.Expression `json:"matchExpressions,omitempty"`
	// MaxUpdate bounds the step's apps syncing at once (nil: all).
	MaxUpdate *MaxUpdate `json:"maxUpdate,omitempty"`
}

// RolloutApp is one app of the set.
type RolloutApp struct {
	Project string            `json:"project"`
	Name    string            `json:"name"`
	Labels  map[string]string `json:"labels,omitempty"`
}

// Ref is "<project>/<name>".
func (a RolloutApp) Ref() string { return a.Project + "/" + a.Name }

// MaxUpdate is a number of apps or a percentage of a step's apps.
type MaxUpdate = appset.MaxUpdate

// Phases of a rollout.
const (
	RolloutProgressing = "Progressing"
	RolloutPaused      = "Paused"
	// RolloutHalted: an app failed or became Degraded; later steps wait
	// for resume (which syncs the failed apps again) or abort.
	RolloutHalted    = "Halted"
	RolloutCompleted = "Completed"
	RolloutAborted   = "Aborted"
)

// Phases of a step.
const (
	StepWaiting     = "Waiting"
	StepProgressing = "Progressing"
	StepHalted      = "Halted"
	StepCompleted   = "Completed"
)

// Phases of an app in a rollout.
const (
	RolloutAppWaiting = "Waiting"
	RolloutAppSyncing = "Syncing"
	RolloutAppHealthy = "Healthy"
	RolloutAppFailed  = "Failed"
)

// RolloutStatus is a rollout step by step: the query's answer, and the
// state continue-as-new carries.
type RolloutStatus struct {
	Set     string `json:"set"`
	Project string `json:"project,omitempty"`
	Target  string `json:"target"`
	Phase   string `json:"phase"`
	Message string `json:"message,omitempty"`
	// Step is the index of the current step; len(Steps) once done.
	Step  int                 `json:"step"`
	Steps []RolloutStepStatus `json:"steps"`
	// HaltedBy is the app ("<project>/<name>") that halted the rollout.
	HaltedBy string `json:"haltedBy,omitempty"`
	// Unmatched are the apps no step selects; the rollout never syncs
	// them.
	Unmatched []string `json:"unmatched,omitempty"`
}

// RolloutStepStatus is one step.
type RolloutStepStatus struct {
	Phase string `json:"phase"`
	// MaxUpdate is how many of its apps may sync at once.
	MaxUpdate int                `json:"maxUpdate"`
	Apps      []RolloutAppStatus `json:"apps"`
}

// RolloutAppStatus is one app of a step.
type RolloutAppStatus struct {
	Project string `json:"project"`
	Name    string `json:"name"`
	Phase   string `json:"phase"`
	// SyncID is the sync the rollout started (the last one after a
	// resume); Attempt counts them.
	SyncID  string `json:"syncID,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
	Message string `json:"message,omitempty"`
}

// Ref is "<project>/<name>".
func (a RolloutAppStatus) Ref() string { return a.Project + "/" + a.Name }

// RolloutControl is the payload of pause, resume and abort.
type RolloutControl struct {
	Initiator string `json:"initiator,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// ValidateRollout checks a rollout's input; the error names the field.
func ValidateRollout(in RolloutInput) error {
	switch {
	case in.Set == "":
		return fmt.Errorf("set: is required")
	case len(in.Steps) == 0:
		return fmt.Errorf("strategy.rollingSync.steps: at least one step is required")
	}
	switch in.DeletionOrder {
	case "", DeletionOrderAllAtOnce, DeletionOrderReverse:
	default:
		return fmt.Errorf("strategy.deletionOrder: %q: want AllAtOnce or Reverse", in.DeletionOrder)
	}
	for i, s := range in.Steps {
		if err := labelmatch.Validate(s.MatchExpressions); err != nil {
			return fmt.Errorf("strategy.rollingSync.steps[%d].%w", i, err)
		}
		if s.MaxUpdate != nil {
			if err := s.MaxUpdate.Validate(); err != nil {
				return fmt.Errorf("strategy.rollingSync.steps[%d].%w", i, err)
			}
		}
	}
	seen := make(map[string]bool, len(in.Apps))
	for i, a := range in.Apps {
		switch {
		case a.Project == "" || a.Name == "":
			return fmt.Errorf("apps[%d]: project and name are required", i)
		case seen[a.Ref()]:
			return fmt.Errorf("apps[%d]: %s is listed twice", i, a.Ref())
		}
		seen[a.Ref()] = true
	}
	return nil
}

// stepOf is the index of the first step whose expressions match the app,
// or -1.
func stepOf(steps []RolloutStep, a RolloutApp) int {
	for i, s := range steps {
		if labelmatch.Matches(s.MatchExpressions, a.Labels) {
			return i
		}
	}
	return -1
}

// DeletionGroups orders a set's apps for its deletion: one group under
// AllAtOnce (the default), and under Reverse the apps no step selects,
// then the last step's, back to the first's. Groups keep the input's
// order and are never empty.
func DeletionGroups(steps []RolloutStep, apps []RolloutApp, order string) [][]RolloutApp {
	if len(apps) == 0 {
		return nil
	}
	if order != DeletionOrderReverse {
		return [][]RolloutApp{apps}
	}
	byStep := make([][]RolloutApp, len(steps)+1)
	for _, a := range apps {
		i := stepOf(steps, a)
		byStep[len(steps)-1-i] = append(byStep[len(steps)-1-i], a)
	}
	// Index len(steps) holds the unmatched (i = -1): they go first.
	out := [][]RolloutApp{}
	if g := byStep[len(steps)]; len(g) > 0 {
		out = append(out, g)
	}
	for _, g := range byStep[:len(steps)] {
		if len(g) > 0 {
			out = append(out, g)
		}
	}
	return out
}
