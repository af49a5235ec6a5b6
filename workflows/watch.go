package workflows

import (
	"cmp"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/windlass-cd/windlass/activities/watch"
)

// Names of the watch and sweep workflows and the watch signal: wire
// contracts, never rename.
const (
	ClusterWatchWorkflowName  = "windlass.ClusterWatchWorkflow"
	SelfHealSweepWorkflowName = "windlass.SelfHealSweepWorkflow"
	// SignalWatch tells a cluster's watch which kinds an app manages.
	SignalWatch = "watch"
	// SelfHealSweepScheduleID is the Temporal Schedule that starts sweeps.
	SelfHealSweepScheduleID = "windlass-selfheal-sweep"
	// SelfHealQuery selects the running apps with selfHeal.
	SelfHealQuery = SearchAttrSyncPolicy + ` = "` + PolicySelfHeal + `" AND ExecutionStatus = "Running" AND WorkflowType = "` + ApplicationWorkflowName + `"`
)

// ClusterWatchWorkflowID is the ID of a destination cluster's watch.
func ClusterWatchWorkflowID(server string) string { return "watch/" + server }

// WatchRequest is the payload of the watch signal: the kinds App manages
// (none: the app is gone).
type WatchRequest struct {
	App   string            `json:"app"`
	Kinds []watch.GroupKind `json:"kinds,omitempty"`
}

// ClusterWatchInput starts (or continues) a ClusterWatchWorkflow.
type ClusterWatchInput struct {
	Server         string         `json:"server"`
	Apps           []WatchRequest `json:"apps,omitempty"`
	DebounceMillis int            `json:"debounceMillis,omitempty"`
}

// ClusterWatchWorkflow keeps one long watch activity running over the
// union of the kinds its apps manage, restarting it when that set changes
// and whenever it ends. A dead worker's activity times out on its
// heartbeat and Temporal retries it on another worker.
func ClusterWatchWorkflow(ctx workflow.Context, in ClusterWatchInput) error {
	st := in
	sig := workflow.GetSignalChannel(ctx, SignalWatch)
	apply := func(r WatchRequest) bool {
		before := watchKinds(st.Apps)
		i := slices.IndexFunc(st.Apps, func(a WatchRequest) bool { return a.App == r.App })
		switch {
		case i >= 0 && len(r.Kinds) == 0:
			st.Apps = slices.Delete(st.Apps, i, i+1)
		case i >= 0:
			st.Apps[i] = r
		case len(r.Kinds) > 0:
			st.Apps = append(st.Apps, r)
			slices.SortFunc(st.Apps, func(a, b WatchRequest) int { return cmp.Compare(a.App, b.App) })
		}
		return !slices.Equal(before, watchKinds(st.Apps))
	}
	for runs := 0; ; runs++ {
		kinds := watchKinds(st.Apps)
		actCtx, cancel := workflow.WithCancel(ctx)
		var fut workflow.Future
		if len(kinds) > 0 {
			actCtx = withClusterQueue(actCtx, watchQueue(ctx, st.Server))
			fut = workflow.ExecuteActivity(watchOptions(actCtx), watch.WatchName,
				watch.Input{Server: st.Server, Kinds: kinds, DebounceMillis: st.DebounceMillis})
		}
		restart := false
		for !restart {
			sel := workflow.NewSelector(ctx)
			if fut != nil {
				sel.AddFuture(fut, func(f workflow.Future) {
					if err := f.Get(ctx, nil); err != nil {
						workflow.GetLogger(ctx).Warn(msgWatchEnded, "error", err.Error())
					}
					fut, restart = nil, true
				})
			}
			sel.AddReceive(sig, func(c workflow.ReceiveChannel, _ bool) {
				var r WatchRequest
				c.Receive(ctx, &r)
				if apply(r) {
					restart = true
				}
			})
			sel.Select(ctx)
			if err := ctx.Err(); err != nil {
				cancel()
				return err
			}
		}
		cancel()
		if fut != nil {
			_ = fut.Get(ctx, nil) // wait for the cancelled watch to stop
		}
		info := workflow.GetInfo(ctx)
		if info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() > 5000 {
			for {
				var r WatchRequest
				if !sig.ReceiveAsync(&r) {
					break
				}
				apply(r)
			}
			return workflow.NewContinueAsNewError(ctx, ClusterWatchWorkflowName, st)
		}
	}
}

const msgWatchEnded = "cluster watch ended, restarting"

// watchQueue is the task queue of server's watch activity, resolved each
// time the watch (re)starts ("" on a failure: the default queue).
func watchQueue(ctx workflow.Context, server string) string {
	q, err := clusterTaskQueue(ctx, server)
	if err != nil {
		workflow.GetLogger(ctx).Warn(msgPlacementFailed, "server", server, "error", errorMessage(err))
	}
	return q
}

// watchKinds is the sorted union of the apps' kinds.
func watchKinds(apps []WatchRequest) []watch.GroupKind {
	var out []watch.GroupKind
	for _, a := range apps {
		for _, k := range a.Kinds {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	slices.SortFunc(out, func(a, b watch.GroupKind) int {
		if c := cmp.Compare(a.Group, b.Group); c != 0 {
			return c
		}
		return cmp.Compare(a.Kind, b.Kind)
	})
	return out
}

// watchOptions runs the watch for up to an hour at a time; its heartbeat
// timeout moves it to another worker when its worker dies.
func watchOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           clusterQueue(ctx),
		StartToCloseTimeout: time.Hour,
		HeartbeatTimeout:    20 * time.Second,
		WaitForCancellation: true,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second},
	})
}

// SelfHealSweepInput starts a SelfHealSweepWorkflow.
type SelfHealSweepInput struct {
	// Query overrides SelfHealQuery.
	Query string `json:"query,omitempty"`
}

// SelfHealSweepWorkflow refreshes every running app with selfHeal: the
// safety net for drift events the watch missed. A Temporal Schedule starts
// it every few minutes, skipping a run while the last one is still going.
func SelfHealSweepWorkflow(ctx workflow.Context, in SelfHealSweepInput) (watch.SweepOutput, error) {
	q := in.Query
	if q == "" {
		q = SelfHealQuery
	}
	var out watch.SweepOutput
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 3},
	}), watch.SweepSelfHealName, watch.SweepInput{Query: q}).Get(ctx, &out)
	return out, err
}
