package workflows

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/activities/placement"
	"github.com/windlass-cd/windlass/activities/project"
	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/activities/source"
	"github.com/windlass-cd/windlass/activities/watch"
	"github.com/windlass-cd/windlass/internal/appspec"
)

const noisyQueue = "windlass-noisy"

// queueLog records the task queue of every activity started.
type queueLog struct {
	mu sync.Mutex
	m  map[string][]string
}

func recordQueues(env *testsuite.TestWorkflowEnvironment) *queueLog {
	l := &queueLog{m: map[string][]string{}}
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.m[info.ActivityType.Name] = append(l.m[info.ActivityType.Name], info.TaskQueue)
	})
	return l
}

// queues returns the distinct queues activity ran on.
func (l *queueLog) queues(activity string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, q := range l.m[activity] {
		if len(out) == 0 || out[len(out)-1] != q {
			out = append(out, q)
		}
	}
	return out
}

// An app whose destination cluster has a task queue runs its cluster
// activities there: compare in the app workflow, and plan, apply and wait
// in its sync (the child gets the queue). Resolving, rendering and project
// lookups stay on the workflow's queue. The queue is resolved once, then
// again when it is older than placementTTL.
func (s *appSuite) TestClusterActivitiesRunOnClusterQueue() {
	log := recordQueues(s.env)
	s.env.OnActivity(placement.TaskQueueName, mock.Anything, placement.Input{Server: appspec.InClusterServer}).
		Return(placement.Output{TaskQueue: noisyQueue}, nil).Twice()
	s.expectProject(appspec.DefaultProjectSpec())
	s.expectReconcile(sha1, outOfSync)
	s.expectSync(1, sha1, nil)
	s.expectReconcile(sha1, synced)
	s.expectReconcileF(sha1, synced, true) // the refresh after placementTTL
	var view AppView
	s.at(placementTTL+time.Minute, func() { s.env.SignalWorkflow(SignalRefresh, RefreshRequest{Reason: "test"}) })
	s.at(placementTTL+2*time.Minute, func() { view = s.status(); s.env.CancelWorkflow() })
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(true), Config: AppConfig{RefreshSeconds: 3600}})
	s.Require().Len(view.History, 1)
	s.Equal(PhaseSucceeded, view.History[0].Phase)
	const def = "default-test-taskqueue"
	for _, name := range []string{cluster.CompareName, cluster.PlanName, cluster.ApplyWaveName} {
		s.Equal([]string{noisyQueue}, log.queues(name), name)
	}
	s.Equal([]string{def}, log.queues(render.RenderName))
	// The cheap steps are local activities: they run in the workflow's
	// worker, on no queue.
	for _, name := range []string{source.ResolveRevisionName, project.GetName, placement.TaskQueueName} {
		s.Empty(log.queues(name), name)
	}
}

// The cluster watch runs its watch activity on the cluster's task queue.
func TestClusterWatchRunsOnClusterQueue(t *testing.T) {
	env := syncEnv(t)
	env.RegisterActivityWithOptions(func(context.Context, watch.Input) error { return nil }, activity.RegisterOptions{Name: watch.WatchName})
	log := recordQueues(env)
	server := "https://noisy.example:6443"
	env.OnActivity(placement.TaskQueueName, mock.Anything, placement.Input{Server: server}).Return(placement.Output{TaskQueue: noisyQueue}, nil).Once()
	kinds := []watch.GroupKind{{Group: "apps", Kind: "Deployment"}}
	env.OnActivity(watch.WatchName, mock.Anything, watch.Input{Server: server, Kinds: kinds}).After(time.Hour).Return(nil).Maybe()
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Minute)
	env.ExecuteWorkflow(ClusterWatchWorkflowName, ClusterWatchInput{Server: server, Apps: []WatchRequest{{App: "default/web", Kinds: kinds}}})
	require.Equal(t, []string{noisyQueue}, log.queues(watch.WatchName))
}
