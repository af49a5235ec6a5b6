package scaleout

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/activities/placement"
	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/activities/watch"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/settings"
	"github.com/windlass-cd/windlass/workflows"
)

// Issue 9's per-cluster task queue: a registered cluster with a task
// queue has its cluster activities (compare, plan, apply, wait, hooks,
// watch) run only by the worker polling that queue, while rendering stays
// on the default queue. With that worker dead, its cluster's syncs wait
// and the other apps still sync; a new worker on the queue finishes them.
func TestClusterTaskQueue(t *testing.T) {
	t.Parallel() // with TestKillWorkerDuringWaitWave, after TestScaleOut
	n := time.Now().UnixNano() % 1e9
	queue := fmt.Sprintf("windlass-noisy-%d", n)
	server := registerNoisyCluster(t, fmt.Sprintf("noisy-%d", n), queue)
	// The cluster's drift watch (workers and the API start those of
	// registered clusters; start it here in case they have not yet).
	_, err := bed.temporal.ExecuteWorkflow(t.Context(), client.StartWorkflowOptions{
		ID: workflows.ClusterWatchWorkflowID(server), TaskQueue: workflows.TaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, workflows.ClusterWatchWorkflowName, workflows.ClusterWatchInput{Server: server})
	if err != nil {
		t.Fatal(err)
	}
	noisy, err := startWorker(t.Context(), "--task-queue", queue)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("q-%d", n)
	cleanupNamespaces(t, name)
	repo := newRepo(t, name, appFiles("app", false))
	call(t, http.MethodPost, "/api/v1/applications", appBody(name, repo, "app", server, false), nil)
	var res workflows.SyncResult
	call(t, http.MethodPost, "/api/v1/applications/"+name+"/sync", map[string]any{}, &res)
	if res.Phase != workflows.PhaseSucceeded {
		t.Fatalf("sync: %s %s", res.Phase, res.Message)
	}

	// Where each activity ran.
	onQueue := func(id string, names ...string) {
		t.Helper()
		for _, a := range activityAttempts(history(t, id)) {
			if !slices.Contains(names, a.activity) {
				continue
			}
			if a.queue != queue || workerByIdentity(a.identity) != noisy {
				t.Errorf("%s: %s ran on %s by %s, want %s by %s", id, a.activity, a.queue, a.identity, queue, noisy.Name)
			}
		}
	}
	onDefault := func(id string, names ...string) {
		t.Helper()
		for _, a := range activityAttempts(history(t, id)) {
			if slices.Contains(names, a.activity) && (a.queue != workflows.TaskQueue || workerByIdentity(a.identity) == noisy) {
				t.Errorf("%s: %s ran on %s by %s, want the default queue", id, a.activity, a.queue, a.identity)
			}
		}
	}
	syncID := workflows.SyncWorkflowID("default", name, 1)
	appID := workflows.AppWorkflowID("default", name)
	onQueue(appID, cluster.CompareName)
	onDefault(appID, render.RenderName, placement.TaskQueueName)
	onQueue(syncID, cluster.PlanName, cluster.ApplyWaveName, cluster.WaitWaveName, cluster.DeleteHooksName)
	onDefault(syncID, render.RenderName)
	eventually(t, time.Minute, 250*time.Millisecond, "the cluster's watch on its queue", func() (bool, string) {
		d, err := bed.temporal.DescribeWorkflowExecution(t.Context(), workflows.ClusterWatchWorkflowID(server), "")
		if err != nil {
			return false, err.Error()
		}
		for _, a := range d.GetPendingActivities() {
			if a.GetActivityType().GetName() == watch.WatchName && a.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED {
				return workerByIdentity(a.GetLastWorkerIdentity()) == noisy, "run by " + a.GetLastWorkerIdentity()
			}
		}
		return false, "no watch activity running"
	})

	// Isolation: without a worker on the queue, the cluster's apps wait
	// (a refresh's compare stays scheduled); an in-cluster app syncs
	// meanwhile. A new worker on the queue carries on.
	killWorker(noisy)
	at := appView(t, name).Status.ReconciledAt
	call(t, http.MethodPost, "/api/v1/applications/"+name+"/refresh", nil, nil)
	compareWaits := func() (bool, string) {
		d, err := bed.temporal.DescribeWorkflowExecution(t.Context(), appID, "")
		if err != nil {
			return false, err.Error()
		}
		for _, a := range d.GetPendingActivities() {
			if a.GetActivityType().GetName() == cluster.CompareName {
				return a.GetState() == enumspb.PENDING_ACTIVITY_STATE_SCHEDULED, a.GetState().String()
			}
		}
		return false, "no compare pending"
	}
	eventually(t, time.Minute, 250*time.Millisecond, "the refresh's compare waiting on "+queue, compareWaits)
	other := name + "-other"
	call(t, http.MethodPost, "/api/v1/applications", appBody(other, repo, "app", appspec.InClusterServer, false), nil)
	call(t, http.MethodPost, "/api/v1/applications/"+other+"/sync", map[string]any{}, &res)
	if res.Phase != workflows.PhaseSucceeded {
		t.Fatalf("in-cluster sync while %s has no worker: %s %s", queue, res.Phase, res.Message)
	}
	if ok, state := compareWaits(); !ok {
		t.Fatalf("the compare on %s did not wait for its worker: %s", queue, state)
	}
	again, err := startWorker(t.Context(), "--task-queue", queue)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, 250*time.Millisecond, "the refresh done by the new worker", func() (bool, string) {
		v := appView(t, name)
		return v.Status.ReconciledAt.After(at), v.Status.ReconciledAt.String()
	})
	call(t, http.MethodPost, "/api/v1/applications/"+name+"/sync", map[string]any{}, &res)
	if res.Phase != workflows.PhaseSucceeded {
		t.Fatalf("sync after a worker came back: %s %s", res.Phase, res.Message)
	}
	for _, a := range activityAttempts(history(t, workflows.SyncWorkflowID("default", name, 2))) {
		if a.activity == cluster.ApplyWaveName && workerByIdentity(a.identity) != again {
			t.Errorf("the second sync's apply ran on %s, want %s", a.identity, again.Name)
		}
	}
}

// registerNoisyCluster registers the test bed's API server again, under
// https://localhost:<port> (a name its certificate holds), with a task
// queue, and returns that server URL.
func registerNoisyCluster(t *testing.T, name, queue string) string {
	t.Helper()
	kc, err := os.ReadFile(bed.env.Cluster.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := settings.ClusterFromKubeconfig(kc, "", name)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(c.Server)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = "localhost:" + u.Port()
	c.Server, c.TaskQueue = strings.TrimSuffix(u.String(), "/"), queue
	var view settings.ClusterView
	call(t, http.MethodPost, "/api/v1/clusters", c, &view)
	if view.TaskQueue != queue {
		t.Fatalf("registered %+v, want task queue %s", view, queue)
	}
	return c.Server
}
