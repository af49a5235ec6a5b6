package worker

import (
	"context"
	"time"

	"github.com/windlass-cd/windlass/activities/appsets"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"

	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/activities/source"
)

// autoHeartbeat heartbeats, every beat, while an activity that does not
// heartbeat itself runs (resolving a revision, rendering, resolving a
// chart). Their heartbeat timeout, not their whole start-to-close timeout,
// then moves them to another worker when this one dies: a render in flight
// on a killed worker is retried after seconds, not minutes.
type autoHeartbeat struct {
	interceptor.WorkerInterceptorBase
	names map[string]bool
	every time.Duration
	// beat records one heartbeat (activity.RecordHeartbeat; tests count).
	beat func(ctx context.Context)
}

// autoHeartbeatActivities are the activities autoHeartbeat beats for.
var autoHeartbeatActivities = []string{source.ResolveRevisionName, render.RenderName, render.ResolveChartName, appsets.ReconcileName}

func newAutoHeartbeat(every time.Duration, names ...string) *autoHeartbeat {
	a := &autoHeartbeat{names: map[string]bool{}, every: every, beat: func(ctx context.Context) { activity.RecordHeartbeat(ctx) }}
	for _, n := range names {
		a.names[n] = true
	}
	return a
}

func (a *autoHeartbeat) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &heartbeatInbound{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, a: a}
}

type heartbeatInbound struct {
	interceptor.ActivityInboundInterceptorBase
	a *autoHeartbeat
}

func (h *heartbeatInbound) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	if !h.a.names[activity.GetInfo(ctx).ActivityType.Name] {
		return h.Next.ExecuteActivity(ctx, in)
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := time.NewTicker(h.a.every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				h.a.beat(ctx)
			}
		}
	}()
	return h.Next.ExecuteActivity(ctx, in)
}
