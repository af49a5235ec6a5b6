package worker

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/testsuite"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/windlass-cd/windlass/activities/render"
)

// The interceptor heartbeats while a listed activity runs, and not for
// the others.
func TestAutoHeartbeat(t *testing.T) {
	tests := []struct {
		name      string
		activity  string
		wantBeats bool
	}{
		{"listed", render.RenderName, true},
		{"not listed", "cluster.Plan", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ts testsuite.WorkflowTestSuite
			env := ts.NewTestActivityEnvironment()
			var beats atomic.Int32
			hb := newAutoHeartbeat(5*time.Millisecond, autoHeartbeatActivities...)
			hb.beat = func(context.Context) { beats.Add(1) }
			env.SetWorkerOptions(sdkworker.Options{Interceptors: []interceptor.WorkerInterceptor{hb}})
			env.RegisterActivityWithOptions(func(ctx context.Context) error {
				time.Sleep(200 * time.Millisecond) // a render that never heartbeats itself
				return nil
			}, activity.RegisterOptions{Name: tt.activity})
			if _, err := env.ExecuteActivity(tt.activity); err != nil {
				t.Fatal(err)
			}
			if got := beats.Load() >= 3; got != tt.wantBeats {
				t.Fatalf("%d heartbeats; want heartbeats: %v", beats.Load(), tt.wantBeats)
			}
		})
	}
}
