package workflows

// This file holds RollingSyncWorkflow, a set's progressive rollout: its
// steps run in order, each syncing its apps (at most maxUpdate at once)
// through the apps' own workflows and waiting until every one is Synced
// and Healthy at the synced revision. A failed or Degraded app halts it.

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/windlass-cd/windlass/activities/rollout"
)

// Bounds of the wait between two reads of a step's syncing apps: it
// doubles from the first while nothing changes.
const (
	rolloutPollMin     = 2 * time.Second
	rolloutPollDefault = 10 * time.Second
)

// Log messages of the rollout.
const (
	msgRolloutStep   = "rollout step"
	msgRolloutHalted = "rollout halted"
	msgRolloutCheck  = "rollout check failed"
)

type rolloutRun struct {
	in   RolloutInput
	st   RolloutStatus
	wake workflow.Channel
	// cancelStep cancels the step's activities (abort).
	cancelStep workflow.CancelFunc
}

// RollingSyncWorkflow runs a set's rollout (ID RolloutWorkflowID(set)).
// Invalid input fails it with an InvalidSpec error naming the field.
func RollingSyncWorkflow(ctx workflow.Context, in RolloutInput) (RolloutStatus, error) {
	r, err := newRollout(ctx, in)
	if err != nil {
		return RolloutStatus{}, err
	}
	return r.run(ctx)
}

func newRollout(ctx workflow.Context, in RolloutInput) (*rolloutRun, error) {
	r := &rolloutRun{in: in, wake: workflow.NewBufferedChannel(ctx, 1), cancelStep: func() {}}
	if in.State != nil {
		r.st = *in.State
		r.in.State = nil
	} else {
		if err := ValidateRollout(in); err != nil {
			return nil, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeInvalidSpec, nil)
		}
		r.st = planRollout(in)
	}
	if err := workflow.SetQueryHandler(ctx, QueryRollout, func() (RolloutStatus, error) { return r.st, nil }); err != nil {
		return nil, err
	}
	for _, h := range []struct {
		name     string
		validate func(RolloutControl) error
		apply    func(workflow.Context, RolloutControl)
	}{
		{UpdateRolloutPause, r.validatePause, r.pause},
		{UpdateRolloutResume, r.validateResume, r.resume},
		{UpdateRolloutAbort, r.validateAbort, r.abort},
	} {
		apply, validate := h.apply, h.validate
		err := workflow.SetUpdateHandlerWithOptions(ctx, h.name,
			func(ctx workflow.Context, c RolloutControl) (RolloutStatus, error) {
				apply(ctx, c)
				r.wake.SendAsync(true)
				return r.st, nil
			},
			workflow.UpdateHandlerOptions{Validator: func(_ workflow.Context, c RolloutControl) error { return validate(c) }})
		if err != nil {
			return nil, err
		}
	}
	return r, nil
}

// planRollout puts each app (sorted by project and name) in the first
// step that selects it.
func planRollout(in RolloutInput) RolloutStatus {
	st := RolloutStatus{Set: in.Set, Project: in.Project, Target: in.Target, Phase: RolloutProgressing,
		Steps: make([]RolloutStepStatus, len(in.Steps))}
	apps := slices.Clone(in.Apps)
	slices.SortFunc(apps, func(a, b RolloutApp) int {
		if a.Project != b.Project {
			return compareStrings(a.Project, b.Project)
		}
		return compareStrings(a.Name, b.Name)
	})
	for _, a := range apps {
		i := stepOf(in.Steps, a)
		if i < 0 {
			st.Unmatched = append(st.Unmatched, a.Ref())
			continue
		}
		st.Steps[i].Apps = append(st.Steps[i].Apps, RolloutAppStatus{Project: a.Project, Name: a.Name, Phase: RolloutAppWaiting})
	}
	for i := range st.Steps {
		st.Steps[i].Phase = StepWaiting
		st.Steps[i].MaxUpdate = in.Steps[i].MaxUpdate.Of(len(st.Steps[i].Apps))
	}
	return st
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (r *rolloutRun) done() bool {
	return r.st.Phase == RolloutCompleted || r.st.Phase == RolloutAborted
}

func (r *rolloutRun) refuse(what string) error {
	return temporal.NewApplicationError("cannot "+what+" a rollout that is "+r.st.Phase, ErrTypeRolloutState)
}

func (r *rolloutRun) validatePause(RolloutControl) error {
	if r.st.Phase != RolloutProgressing {
		return r.refuse("pause")
	}
	return nil
}

func (r *rolloutRun) validateResume(RolloutControl) error {
	if r.st.Phase != RolloutPaused && r.st.Phase != RolloutHalted {
		return r.refuse("resume")
	}
	return nil
}

func (r *rolloutRun) validateAbort(RolloutControl) error {
	if r.done() {
		return r.refuse("abort")
	}
	return nil
}

func controlMessage(verb string, c RolloutControl) string {
	msg := verb
	if c.Initiator != "" {
		msg += " by " + c.Initiator
	}
	if c.Reason != "" {
		msg += ": " + c.Reason
	}
	return msg
}

func (r *rolloutRun) pause(_ workflow.Context, c RolloutControl) {
	r.st.Phase, r.st.Message = RolloutPaused, controlMessage("paused", c)
}

// resume continues a paused rollout, or a halted one: the failed apps of
// the step sync again.
func (r *rolloutRun) resume(_ workflow.Context, c RolloutControl) {
	if r.st.Phase == RolloutHalted && r.st.Step < len(r.st.Steps) {
		s := &r.st.Steps[r.st.Step]
		for i := range s.Apps {
			if a := &s.Apps[i]; a.Phase == RolloutAppFailed {
				a.Phase = RolloutAppWaiting
			}
		}
		s.Phase = StepProgressing
		r.st.HaltedBy = ""
	}
	r.st.Phase, r.st.Message = RolloutProgressing, controlMessage("resumed", c)
}

func (r *rolloutRun) abort(_ workflow.Context, c RolloutControl) {
	r.st.Phase, r.st.Message = RolloutAborted, controlMessage("aborted", c)
	r.cancelStep()
}

func (r *rolloutRun) run(ctx workflow.Context) (RolloutStatus, error) {
	for r.st.Step < len(r.st.Steps) && r.st.Phase != RolloutAborted {
		if err := r.runStep(ctx); err != nil {
			return r.st, err
		}
		if r.st.Phase == RolloutAborted {
			break
		}
		r.st.Step++
	}
	if r.st.Phase != RolloutAborted {
		r.st.Phase, r.st.Message = RolloutCompleted, fmt.Sprintf("%d steps completed", len(r.st.Steps))
	}
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return r.st, err
	}
	return r.st, nil
}

// runStep syncs the current step's apps and waits until each is Healthy.
// It returns with the step completed, the rollout aborted, or a
// continue-as-new error.
func (r *rolloutRun) runStep(ctx workflow.Context) error {
	i := r.st.Step
	s := &r.st.Steps[i]
	if s.Phase == StepWaiting {
		s.Phase = StepProgressing
	}
	// The memo upsert puts the step's start in the history.
	if err := workflow.UpsertMemo(ctx, map[string]any{MemoRolloutStep: i + 1}); err != nil {
		return err
	}
	workflow.GetLogger(ctx).Info(msgRolloutStep, "set", r.st.Set, "step", i+1, "apps", len(s.Apps))
	stepCtx, cancel := workflow.WithCancel(ctx)
	r.cancelStep = cancel
	defer func() { cancel(); r.cancelStep = func() {} }()
	delay := rolloutPollMin
	for {
		// Await answers at once when its condition holds, even when the
		// set has canceled the rollout: stop here.
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := workflow.Await(ctx, func() bool {
			return r.st.Phase == RolloutProgressing || r.st.Phase == RolloutAborted
		}); err != nil {
			return err
		}
		if r.st.Phase == RolloutAborted {
			return nil
		}
		r.startSyncs(stepCtx, i)
		if r.st.Phase != RolloutProgressing {
			continue
		}
		if allHealthy(s.Apps) {
			s.Phase = StepCompleted
			return nil
		}
		if r.shouldContinueAsNew(ctx) {
			return r.continueAsNew(ctx)
		}
		r.sleep(ctx, delay)
		if r.st.Phase != RolloutProgressing {
			continue
		}
		if r.check(stepCtx, i) {
			delay = rolloutPollMin
		} else {
			delay = min(2*delay, r.pollMax())
		}
	}
}

func allHealthy(apps []RolloutAppStatus) bool {
	for _, a := range apps {
		if a.Phase != RolloutAppHealthy {
			return false
		}
	}
	return true
}

func (r *rolloutRun) pollMax() time.Duration {
	if r.in.PollSeconds > 0 {
		return max(rolloutPollMin, time.Duration(r.in.PollSeconds)*time.Second)
	}
	return rolloutPollDefault
}

// syncKey identifies one sync of an app by this rollout: the sync's
// initiator, by which a retried activity finds it.
func (r *rolloutRun) syncKey(a RolloutAppStatus) string {
	return "rollout " + RolloutWorkflowID(r.st.Set) + "@" + r.st.Target + " try " + strconv.Itoa(a.Attempt)
}

// startSyncs starts syncs of step i's waiting apps while fewer than
// maxUpdate sync; a refused sync halts the rollout.
func (r *rolloutRun) startSyncs(ctx workflow.Context, i int) {
	s := &r.st.Steps[i]
	syncing := 0
	for _, a := range s.Apps {
		if a.Phase == RolloutAppSyncing {
			syncing++
		}
	}
	for j := range s.Apps {
		a := &s.Apps[j]
		if a.Phase != RolloutAppWaiting || syncing >= s.MaxUpdate {
			continue
		}
		if r.st.Phase != RolloutProgressing {
			return
		}
		a.Attempt++
		out, err := rolloutSync(ctx, rollout.SyncInput{App: rollout.AppRef{Project: a.Project, Name: a.Name}, Key: r.syncKey(*a)},
			fmt.Sprintf("step %d: sync %s", i+1, a.Ref()))
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			a.Phase, a.Message = RolloutAppFailed, errorMessage(err)
			r.halt(ctx, i, *a)
			return
		}
		a.Phase, a.SyncID, a.Message = RolloutAppSyncing, out.SyncID, ""
		syncing++
	}
}

// check reads step i's syncing apps; it says whether any changed.
func (r *rolloutRun) check(ctx workflow.Context, i int) bool {
	s := &r.st.Steps[i]
	var in rollout.CheckInput
	var idx []int
	for j, a := range s.Apps {
		if a.Phase == RolloutAppSyncing {
			in.Apps = append(in.Apps, rollout.AppSync{App: rollout.AppRef{Project: a.Project, Name: a.Name}, SyncID: a.SyncID})
			idx = append(idx, j)
		}
	}
	if len(in.Apps) == 0 {
		return false
	}
	out, err := checkRollout(ctx, in)
	if err != nil || len(out.Apps) != len(idx) {
		if ctx.Err() == nil {
			workflow.GetLogger(ctx).Warn(msgRolloutCheck, "set", r.st.Set, "error", err)
		}
		return false
	}
	changed := false
	for k, v := range out.Apps {
		a := &s.Apps[idx[k]]
		phase := a.Phase
		switch v.Verdict {
		case rollout.Healthy:
			phase = RolloutAppHealthy
		case rollout.Failed:
			phase = RolloutAppFailed
		}
		if phase != a.Phase || v.Message != a.Message {
			changed = true
		}
		a.Phase, a.Message = phase, v.Message
	}
	for _, a := range s.Apps {
		if a.Phase == RolloutAppFailed && r.st.Phase == RolloutProgressing {
			r.halt(ctx, i, a)
		}
	}
	return changed
}

// halt stops the rollout at step i because of app a.
func (r *rolloutRun) halt(ctx workflow.Context, i int, a RolloutAppStatus) {
	r.st.Phase, r.st.HaltedBy = RolloutHalted, a.Ref()
	r.st.Steps[i].Phase = StepHalted
	r.st.Message = fmt.Sprintf("halted at step %d: %s: %s", i+1, a.Ref(), a.Message)
	workflow.GetLogger(ctx).Warn(msgRolloutHalted, "set", r.st.Set, "step", i+1, "app", a.Ref(), "reason", a.Message)
}

// sleep waits for d, or until an update wakes the rollout.
func (r *rolloutRun) sleep(ctx workflow.Context, d time.Duration) {
	timerCtx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(workflow.NewTimer(timerCtx, d), func(workflow.Future) {})
	sel.AddReceive(r.wake, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
	sel.Select(ctx)
}

func (r *rolloutRun) shouldContinueAsNew(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	limit := r.in.HistoryThreshold
	if limit <= 0 {
		limit = 10000
	}
	return info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() >= limit
}

// continueAsNew carries the state into a new run once the handlers have
// finished.
func (r *rolloutRun) continueAsNew(ctx workflow.Context) error {
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	next := r.in
	st := r.st
	next.State = &st
	return workflow.NewContinueAsNewError(ctx, RollingSyncWorkflowName, next)
}
