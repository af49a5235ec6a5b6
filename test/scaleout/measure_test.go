package scaleout

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"

	"github.com/redis/go-redis/v9"
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

func (p *proc) usage() usage {
	var u usage
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid()))
	if err != nil {
		return u
	}
	// Fields after the command name (which may hold spaces): utime and
	// stime are the 12th and 13th, in clock ticks (100 per second).
	if i := strings.LastIndexByte(string(stat), ')'); i > 0 {
		f := strings.Fields(string(stat[i+1:]))
		if len(f) > 12 {
			ut, _ := strconv.ParseFloat(f[11], 64)
			st, _ := strconv.ParseFloat(f[12], 64)
			u.CPUSeconds = (ut + st) / 100
		}
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid()))
	if err != nil {
		return u
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			u.PeakRSSMiB = kb / 1024
		}
	}
	return u
}

// since rounds a duration for reports.
func since(t time.Time) time.Duration { return time.Since(t).Round(100 * time.Millisecond) }
