package harness

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// Actions is what histories show: Temporal actions in the sense of the
// issue (workflow tasks, activity attempts, timers) and the billable kind
// (a start, activity attempts, timers, signals, child starts, upserts,
// updates).
type Actions struct {
	Events        int `json:"events"`
	WorkflowTasks int `json:"workflowTasks"`
	Activities    int `json:"activityAttempts"`
	LocalActs     int `json:"localActivityMarkers"`
	Timers        int `json:"timers"`
	Signals       int `json:"signals"`
	Children      int `json:"childStarts"`
	Upserts       int `json:"upserts"`
	Updates       int `json:"updates"`
}

// Steps is workflow tasks + activities (local ones included) + timers.
func (a Actions) Steps() int { return a.WorkflowTasks + a.Activities + a.LocalActs + a.Timers }

// Billable is the count Temporal Cloud bills.
func (a Actions) Billable() int {
	return 1 + a.Activities + a.LocalActs + a.Timers + a.Signals + a.Children + a.Upserts + a.Updates
}

// CountActions reads a workflow's history (its latest run) and counts it.
func CountActions(ctx context.Context, tc client.Client, workflowID string) (Actions, error) {
	return countRun(ctx, tc, workflowID, "", time.Time{}, time.Time{})
}

// countRun counts the events of one run (runID "" is the latest) whose
// time is in [from, to); a zero time does not bound.
func countRun(ctx context.Context, tc client.Client, workflowID, runID string, from, to time.Time) (Actions, error) {
	var a Actions
	it := tc.GetWorkflowHistory(ctx, workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return a, fmt.Errorf("history of %s: %w", workflowID, err)
		}
		if at := ev.GetEventTime().AsTime(); (!from.IsZero() && at.Before(from)) || (!to.IsZero() && !at.Before(to)) {
			continue
		}
		a.Events++
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
			a.WorkflowTasks++
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			a.Activities += int(ev.GetActivityTaskStartedEventAttributes().GetAttempt())
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			if ev.GetMarkerRecordedEventAttributes().GetMarkerName() == "LocalActivity" {
				a.LocalActs++
			}
		case enumspb.EVENT_TYPE_TIMER_STARTED:
			a.Timers++
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, enumspb.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED:
			a.Signals++
		case enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
			a.Children++
		case enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES, enumspb.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED:
			a.Upserts++
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
			a.Updates++
		}
	}
	return a, nil
}

// CountWindow counts the history events written in [from, to) by every
// execution of namespace that ListWorkflow shows running or closed since
// from (each run of a continue-as-new chain is its own execution), reading
// the histories with parallel requests in flight. Temporal's internal
// workflows (schedulers) are not listed, so not counted. It returns the
// sum and how many executions it read.
func CountWindow(ctx context.Context, tc client.Client, namespace string, from, to time.Time, parallel int) (Actions, int, error) {
	q := fmt.Sprintf("StartTime < '%s' AND (ExecutionStatus = 'Running' OR CloseTime >= '%s')",
		to.UTC().Format(time.RFC3339Nano), from.UTC().Format(time.RFC3339Nano))
	type run struct{ id, runID string }
	var runs []run
	for token := []byte(nil); ; {
		resp, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: namespace, PageSize: 1000, NextPageToken: token, Query: q})
		if err != nil {
			return Actions{}, 0, fmt.Errorf("list the executions of the window: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			runs = append(runs, run{e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId()})
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	var (
		mu    sync.Mutex
		wg    sync.WaitGroup
		sum   Actions
		first error
	)
	sem := make(chan struct{}, max(parallel, 1))
	for _, r := range runs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			a, err := countRun(ctx, tc, r.id, r.runID, from, to)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				first = cmp.Or(first, err)
				return
			}
			sum = sum.Plus(a)
		})
	}
	wg.Wait()
	return sum, len(runs), first
}

// Plus is a + b.
func (a Actions) Plus(b Actions) Actions {
	return Actions{a.Events + b.Events, a.WorkflowTasks + b.WorkflowTasks, a.Activities + b.Activities, a.LocalActs + b.LocalActs,
		a.Timers + b.Timers, a.Signals + b.Signals, a.Children + b.Children, a.Upserts + b.Upserts, a.Updates + b.Updates}
}

// Div is a / n, rounded: a a per-app average.
func (a Actions) Div(n int) Actions {
	d := func(v int) int { return (v + n/2) / n }
	return Actions{d(a.Events), d(a.WorkflowTasks), d(a.Activities), d(a.LocalActs), d(a.Timers), d(a.Signals), d(a.Children), d(a.Upserts), d(a.Updates)}
}

// WriteHistory writes a workflow's history (its latest run) to path as
// JSON, in the form `temporal workflow show --output json` writes, so
// that a benchmark's sample can be read event by event.
func WriteHistory(ctx context.Context, tc client.Client, workflowID, path string) error {
	var hist historypb.History
	it := tc.GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return fmt.Errorf("history of %s: %w", workflowID, err)
		}
		hist.Events = append(hist.Events, ev)
	}
	b, err := temporalproto.CustomJSONMarshalOptions{Indent: " "}.Marshal(&hist)
	if err != nil {
		return fmt.Errorf("history of %s: %w", workflowID, err)
	}
	return os.WriteFile(path, b, 0o644)
}
