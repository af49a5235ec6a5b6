package workflows

// This file holds the set's side of a RollingSync strategy: after each
// pass the set reads its apps (rollout.Plan), and when their revisions
// or the set's own changes move, it replaces its rollout child
// (RollingSyncWorkflow) with one rolling to the new target. On deletion
// with deletionOrder Reverse it deletes its apps a step at a time.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/windlass-cd/windlass/activities/appsets"
	"github.com/windlass-cd/windlass/activities/rollout"
	"github.com/windlass-cd/windlass/internal/appset"
)

// A set waits for its new apps' first compare before it plans their
// rollout: it reads them again every replanDelay, at most maxReplans
// times, then starts anyway.
const (
	replanDelay = 5 * time.Second
	maxReplans  = 24
)

// Log messages of the set's rollout.
const (
	msgSetRolloutStarted = "set rollout started"
	msgSetRolloutPlan    = "set rollout plan failed"
)

// AppSetRollout is the set's view of its rollout; its progress step by
// step is the rollout workflow's (QueryRollout).
type AppSetRollout struct {
	// ID is the rollout's workflow ID, RolloutWorkflowID(set).
	ID string `json:"id"`
	// Target names what the apps roll to: "g<changes>-<revisions>", the
	// set's count of passes that changed apps and a digest of its apps'
	// compared revisions.
	Target string `json:"target"`
	// Started counts the rollouts the set has started.
	Started   int       `json:"started"`
	StartedAt time.Time `json:"startedAt,omitzero"`
	// Message says why no rollout runs for the latest change (the plan
	// failed, the steps are invalid) or what the set waits for.
	Message string `json:"message,omitempty"`
}

// rolloutState is the run's hold on its rollout child.
type rolloutState struct {
	child  workflow.ChildWorkflowFuture
	cancel workflow.CancelFunc
	// replans counts the plans that waited for apps to compare.
	replans int
	// replanAt is set while a plan waits for apps to compare.
	replanAt bool
}

// rolloutSteps are the workflow's steps of the set's strategy.
func rolloutSteps(s *appset.Strategy) []RolloutStep {
	if !s.IsRollingSync() {
		return nil
	}
	out := make([]RolloutStep, 0, len(s.RollingSync.Steps))
	for _, st := range s.RollingSync.Steps {
		out = append(out, RolloutStep{MatchExpressions: st.MatchExpressions, MaxUpdate: st.MaxUpdate})
	}
	return out
}

// appRefs are the set's apps, "<project>/<name>", as activity refs.
func appRefs(ids []string) []rollout.AppRef {
	out := make([]rollout.AppRef, 0, len(ids))
	for _, id := range ids {
		if proj, name, ok := strings.Cut(id, "/"); ok {
			out = append(out, rollout.AppRef{Project: proj, Name: name})
		}
	}
	return out
}

func plannedApps(p rollout.PlanOutput) []RolloutApp {
	out := make([]RolloutApp, 0, len(p.Apps))
	for _, a := range p.Apps {
		out = append(out, RolloutApp{Project: a.Project, Name: a.Name, Labels: a.Labels})
	}
	return out
}

// roll plans the set's rollout after a pass (or a replan), and starts a
// new one when the target moved and an app needs a sync.
func (r *appSetRun) roll(ctx workflow.Context) {
	r.ro.replanAt = false
	if !r.set.Spec.Strategy.IsRollingSync() {
		// The strategy was dropped: its rollout goes too.
		if r.status.Rollout != nil {
			if err := r.stopRollout(ctx); err != nil {
				workflow.GetLogger(ctx).Warn(msgSetRolloutPlan, "set", r.set.Metadata.Name, "error", err)
			}
			r.status.Rollout = nil
		}
		return
	}
	if r.status.Error != "" {
		return
	}
	plan, err := planSetRollout(ctx, rollout.PlanInput{Set: r.set.Metadata.Name, Apps: appRefs(r.status.Apps)})
	cur := r.status.Rollout
	if cur == nil {
		cur = &AppSetRollout{ID: RolloutWorkflowID(r.set.Metadata.Name)}
		r.status.Rollout = cur
	}
	if err != nil {
		cur.Message = "cannot read the apps: " + errorMessage(err)
		workflow.GetLogger(ctx).Warn(msgSetRolloutPlan, "set", r.set.Metadata.Name, "error", err)
		return
	}
	if plan.Uncompared > 0 && r.ro.replans < maxReplans {
		r.ro.replans++
		r.ro.replanAt = true
		cur.Message = strconv.Itoa(plan.Uncompared) + " apps have not compared yet"
		return
	}
	r.ro.replans = 0
	target := "g" + strconv.Itoa(r.status.Changes) + "-" + plan.Revisions
	switch {
	case target == cur.Target:
		cur.Message = ""
		return
	case plan.OutOfSync == 0 && r.status.Changes == r.status.RolledChanges:
		// Synced already (by hand, or nothing changed): nothing to roll.
		cur.Target, cur.Message = target, ""
		return
	}
	in := RolloutInput{Set: r.set.Metadata.Name, Project: AppSetProject(r.set), Target: target,
		Steps: rolloutSteps(r.set.Spec.Strategy), DeletionOrder: r.set.Spec.Strategy.DeletionOrder, Apps: plannedApps(plan)}
	if err := ValidateRollout(in); err != nil {
		cur.Message = "invalid rollout: " + err.Error()
		return
	}
	if err := r.stopRollout(ctx); err != nil {
		cur.Message = "cannot stop the last rollout: " + errorMessage(err)
		return
	}
	if err := r.startRollout(ctx, in); err != nil {
		cur.Message = "cannot start the rollout: " + errorMessage(err)
		return
	}
	cur.Target, cur.Message = target, ""
	cur.Started++
	cur.StartedAt = workflow.Now(ctx)
	r.status.RolledChanges = r.status.Changes
	workflow.GetLogger(ctx).Info(msgSetRolloutStarted, "set", r.set.Metadata.Name, "target", target, "apps", len(in.Apps))
}

// startRollout starts the rollout child. A rollout the last run left
// (continue-as-new abandons it) may still be closing: the start is tried
// again for a while.
func (r *appSetRun) startRollout(ctx workflow.Context, in RolloutInput) error {
	var err error
	for try := 0; try < 10; try++ {
		cctx, cancel := workflow.WithCancel(ctx)
		cctx = workflow.WithChildOptions(cctx, workflow.ChildWorkflowOptions{
			WorkflowID: RolloutWorkflowID(in.Set),
			// The rollout outlives a continue-as-new of the set; the set
			// cancels it itself.
			ParentClosePolicy:   enumspb.PARENT_CLOSE_POLICY_ABANDON,
			WaitForCancellation: true,
		})
		f := workflow.ExecuteChildWorkflow(cctx, RollingSyncWorkflowName, in)
		if err = f.GetChildWorkflowExecution().Get(ctx, nil); err == nil {
			r.ro.child, r.ro.cancel = f, cancel
			return nil
		}
		cancel()
		var started *temporal.ChildWorkflowExecutionAlreadyStartedError
		if !errors.As(err, &started) {
			return err
		}
		if err := workflow.Sleep(ctx, time.Duration(try+1)*time.Second); err != nil {
			return err
		}
	}
	return fmt.Errorf("rollout %s still runs: %w", RolloutWorkflowID(in.Set), err)
}

// stopRollout cancels the set's rollout and, when this run started it,
// waits until it has closed.
func (r *appSetRun) stopRollout(ctx workflow.Context) error {
	if r.ro.child != nil {
		r.ro.cancel()
		_ = r.ro.child.Get(ctx, nil) // canceled, or it had ended
		r.ro.child, r.ro.cancel = nil, nil
		return nil
	}
	if r.status.Rollout == nil || r.status.Rollout.Started == 0 {
		return nil
	}
	// Started by an earlier run: ask it to stop; it may have ended.
	err := workflow.RequestCancelExternalWorkflow(ctx, r.status.Rollout.ID, "").Get(ctx, nil)
	var unknown *temporal.UnknownExternalWorkflowExecutionError
	if err != nil && !errors.As(err, &unknown) {
		return err
	}
	return nil
}

// removeApps deletes the set's apps: all at once, or under deletionOrder
// Reverse a group at a time (DeletionGroups), each deleted and gone
// before the next.
func (r *appSetRun) removeApps(ctx workflow.Context) ([]string, error) {
	name := r.set.Metadata.Name
	s := r.set.Spec.Strategy
	if !s.IsRollingSync() || s.DeletionOrder != DeletionOrderReverse {
		out, err := deleteAppSetApps(ctx, appsets.DeleteAppsInput{Set: name, Owned: r.status.Apps})
		return out.Deleted, err
	}
	plan, err := planSetRollout(ctx, rollout.PlanInput{Set: r.set.Metadata.Name, Apps: appRefs(r.status.Apps)})
	if err != nil {
		return nil, err
	}
	var deleted []string
	for i, g := range DeletionGroups(rolloutSteps(s), plannedApps(plan), DeletionOrderReverse) {
		ids := make([]string, 0, len(g))
		for _, a := range g {
			ids = append(ids, a.Ref())
		}
		out, err := deleteAppSetApps(ctx, appsets.DeleteAppsInput{Set: name, Owned: ids, Exact: true, Group: i + 1})
		deleted = append(deleted, out.Deleted...)
		if err != nil {
			return deleted, err
		}
	}
	// Apps the plan missed (started since) go last.
	out, err := deleteAppSetApps(ctx, appsets.DeleteAppsInput{Set: name})
	return append(deleted, out.Deleted...), err
}
