package scaleout

import (
	"context"
	"strconv"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"

	"github.com/redis/go-redis/v9"

	"github.com/windlass-cd/windlass/test/bench/harness"
)

// actions counts what one workflow's history shows. Actions are the
// billable kind as Temporal Cloud counts them (a start, each activity
// attempt, timers, signals sent and received, child starts, search
// attribute and memo upserts, accepted updates); activity heartbeats and
// queries do not appear in histories and are not counted. Workflow tasks
// and events measure the load on the history service.
type actions struct {
	Events        int `json:"events"`
	WorkflowTasks int `json:"workflowTasks"`
	Activities    int `json:"activityAttempts"`
	Timers        int `json:"timers"`
	Signals       int `json:"signals"`
	Children      int `json:"childStarts"`
	Upserts       int `json:"upserts"`
	Updates       int `json:"updates"`
	Markers       int `json:"markers"`
}

// Total is the number of actions.
func (a actions) Total() int {
	return 1 + a.Activities + a.Timers + a.Signals + a.Children + a.Upserts + a.Updates
}

// add returns a + sign×b.
func (a actions) add(b actions, sign int) actions {
	return actions{a.Events + sign*b.Events, a.WorkflowTasks + sign*b.WorkflowTasks, a.Activities + sign*b.Activities,
		a.Timers + sign*b.Timers, a.Signals + sign*b.Signals, a.Children + sign*b.Children, a.Upserts + sign*b.Upserts,
		a.Updates + sign*b.Updates, a.Markers + sign*b.Markers}
}

func countActions(events []*historypb.HistoryEvent) actions {
	var a actions
	a.Events = len(events)
	for _, e := range events {
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
			a.WorkflowTasks++
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			a.Activities += int(e.GetActivityTaskStartedEventAttributes().GetAttempt())
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
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			a.Markers++
		}
	}
	return a
}

// redisUsage is Redis's used_memory and key count.
func redisUsage(ctx context.Context, rdb *redis.Client) (mem int64, keys int64, err error) {
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			mem, err = strconv.ParseInt(v, 10, 64)
		}
	}
	if err != nil {
		return 0, 0, err
	}
	keys, err = rdb.DBSize(ctx).Result()
	return mem, keys, err
}

// usage is a process's CPU time so far and its peak resident memory, read
// from /proc while it runs.
type usage struct {
	CPUSeconds float64 `json:"cpuSeconds"`
	PeakRSSMiB float64 `json:"peakRSSMiB"`
}

func usageOf(p *harness.Proc) usage {
	_, peak := p.RSSMiB()
	return usage{CPUSeconds: p.CPUSeconds(), PeakRSSMiB: peak}
}

// since rounds a duration for reports.
func since(t time.Time) time.Duration { return time.Since(t).Round(100 * time.Millisecond) }
