package workflows

// This file holds a sync's wait for the app's dependencies
// (spec.dependsOn): before the SyncWorkflow starts, the app polls its
// dependencies' states with an activity and a durable timer.

import (
	"errors"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/windlass-cd/windlass/activities/depends"
	"github.com/windlass-cd/windlass/internal/appspec"
)

// dependenciesOn says the run waits for dependencies before a sync. The
// wait shares this release's change (changeApp020): a run that started
// before it never waits, whatever its spec says.
func (a *application) dependenciesOn() bool { return a.metadataOn() }

// Bounds of the delay between two reads of the dependencies: it doubles
// from the first to the second.
const (
	dependsPollMin = 2 * time.Second
	dependsPollMax = 15 * time.Second
)

// errDependsHistory ends a wait that filled the run's history: the run
// continues as new, and the sync is asked for again there.
var errDependsHistory = errors.New("the wait for dependencies reached the workflow's history limit")

// awaitDependencies waits until every dependency that the spec names is
// ready (Synced, Healthy, no operation), keeping op.WaitingFor current.
// It reads the spec at each look, so that an edit of dependsOn applies to
// a waiting sync, and a spec change wakes it. announce is called once, when
// the sync first has to wait. It ends with ctx's error when ctx is
// cancelled (terminate, delete), or errDependsHistory, and then with what
// it waited for last.
func (a *application) awaitDependencies(ctx workflow.Context, op *Operation, announce func()) ([]depends.Waiting, error) {
	delay := dependsPollMin
	announced := false
	defer func() { op.WaitingFor = nil }()
	for {
		deps := a.st.Spec.Dependencies()
		if len(deps) == 0 {
			return nil, nil
		}
		out, err := checkDependencies(ctx, depends.CheckInput{Dependencies: deps})
		if ctx.Err() != nil {
			return op.WaitingFor, ctx.Err()
		}
		waiting := out.Waiting
		if err != nil {
			waiting = make([]depends.Waiting, 0, len(deps))
			for _, d := range deps {
				waiting = append(waiting, depends.Waiting{App: d, Reason: "state unknown: " + errorMessage(err)})
			}
		}
		if len(waiting) == 0 {
			return nil, nil
		}
		changed := !sameJSON(waiting, op.WaitingFor)
		op.WaitingFor = waiting
		if !announced {
			announced = true
			op.Phase = PhasePending
			a.event(ctx, EventNormal, "WaitingForDependencies", "sync "+op.SyncID+" waits for "+waitingNames(a.st.Spec.Project, waiting))
			announce()
		}
		if changed {
			a.publish(ctx)
		}
		if workflow.GetInfo(ctx).GetCurrentHistoryLength() >= a.historyThreshold() {
			return waiting, errDependsHistory
		}
		timerCtx, cancel := workflow.WithCancel(ctx)
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(workflow.NewTimer(timerCtx, delay), func(workflow.Future) {})
		sel.AddReceive(a.wake, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); a.otherCause = true })
		sel.Select(ctx)
		cancel()
		if ctx.Err() != nil {
			return waiting, ctx.Err()
		}
		delay = min(2*delay, dependsPollMax)
	}
}

// waitingNames lists the apps waited for, by name when in project.
func waitingNames(project string, ws []depends.Waiting) string {
	names := make([]string, 0, len(ws))
	for _, w := range ws {
		names = append(names, dependencyName(project, w.App))
	}
	return strings.Join(names, ", ")
}

func dependencyName(project string, r appspec.DependencyRef) string {
	if r.Project == project {
		return r.Name
	}
	return r.String()
}

// historyThreshold is the history length at which a run continues as new.
func (a *application) historyThreshold() int {
	if a.cfg.HistoryThreshold > 0 {
		return a.cfg.HistoryThreshold
	}
	return 10000
}

// dependsFailed ends a sync whose wait for dependencies ended before it
// started: err is the wait's error. A manual sync (not a rollback) whose
// wait filled the history is asked for again in the next run; an
// automated one starts again there by itself.
func (a *application) dependsFailed(ctx workflow.Context, p pendingSync, res SyncResult, waiting []depends.Waiting, err error) SyncResult {
	res.Phase, res.FinishedAt = PhaseTerminated, workflow.Now(ctx)
	res.Message = "terminated while waiting for dependencies"
	if len(waiting) > 0 {
		res.Message += " (" + waitingNames(a.st.Spec.Project, waiting) + ")"
	}
	if errors.Is(err, errDependsHistory) {
		res.Message = errDependsHistory.Error() + "; the sync starts again in the workflow's next run"
		switch {
		case p.pinned && p.req.Revision == "": // a rollback
			res.Message = errDependsHistory.Error() + "; run the rollback again"
		case p.req.Initiator != InitiatorAutomated:
			a.st.QueuedSyncs = append(a.st.QueuedSyncs, p.req)
		}
	}
	a.record(res)
	return res
}
