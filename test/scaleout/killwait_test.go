package scaleout

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/manifest"
	"github.com/windlass-cd/windlass/workflows"
)

// Issue 9, e2e 4: the worker running a sync's WaitWave is killed with
// SIGKILL; a new worker is started. The same sync (same ID) completes
// exactly once: one hook Job, created once and deleted once by its
// HookSucceeded policy, and one sync in the app's history.
func TestKillWorkerDuringWaitWave(t *testing.T) {
	t.Parallel() // with TestClusterTaskQueue, after TestScaleOut
	name := fmt.Sprintf("kill-%d", time.Now().UnixNano()%1e9)
	cleanupNamespaces(t, name)
	jobs := watchHookJobs(t, name)
	repo := newRepo(t, name, appFiles("gated", true))
	call(t, http.MethodPost, "/api/v1/applications", appBody(name, repo, "gated", appspec.InClusterServer, false), nil)
	var acc workflows.SyncAccepted
	call(t, http.MethodPost, "/api/v1/applications/"+name+"/sync?wait=false", map[string]any{}, &acc)
	syncID := workflows.SyncWorkflowID("default", name, 1)
	if acc.ID != syncID {
		t.Fatalf("sync ID %q, want %q", acc.ID, syncID)
	}

	// The suspended PreSync hook keeps the sync in WaitWave: find the
	// worker running it.
	var identity string
	eventually(t, 90*time.Second, 250*time.Millisecond, "the sync waiting in WaitWave", func() (bool, string) {
		d, err := bed.temporal.DescribeWorkflowExecution(t.Context(), syncID, "")
		if err != nil {
			return false, err.Error()
		}
		for _, a := range d.GetPendingActivities() {
			if a.GetActivityType().GetName() == cluster.WaitWaveName && a.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED {
				identity = a.GetLastWorkerIdentity()
				return workerByIdentity(identity) != nil, "started by " + identity
			}
		}
		return false, fmt.Sprintf("%d pending activities", len(d.GetPendingActivities()))
	})
	victim := workerByIdentity(identity)
	killWorker(victim)
	t.Logf("killed %s (pid %d) while it ran WaitWave of %s", victim.Name, victim.PID(), syncID)
	if _, err := startWorker(t.Context()); err != nil {
		t.Fatal(err)
	}
	if c, _ := jobs.counts(syncID); c != 1 {
		t.Fatalf("%d hook Jobs before the resume, want 1", c)
	}

	// Let the hook run: the sync carries on from its wait.
	list, err := bed.kube.BatchV1().Jobs(name).List(t.Context(), metav1.ListOptions{LabelSelector: manifest.SyncIDLabel + "=" + manifest.SyncIDHash(syncID)})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("hook jobs of %s: %v, %v", syncID, list, err)
	}
	_, err = bed.kube.BatchV1().Jobs(name).Patch(t.Context(), list.Items[0].Name, k8stypes.MergePatchType,
		[]byte(`{"spec":{"suspend":false}}`), metav1.PatchOptions{FieldManager: "scaleout-test"})
	if err != nil {
		t.Fatal(err)
	}
	var res workflows.SyncResult
	if err := bed.temporal.GetWorkflow(t.Context(), syncID, "").Get(t.Context(), &res); err != nil {
		t.Fatalf("sync %s: %v", syncID, err)
	}
	if res.Phase != workflows.PhaseSucceeded || res.ID != syncID {
		t.Fatalf("sync %s ended %s: %s", res.ID, res.Phase, res.Message)
	}
	v := waitSynced(t, name, time.Minute)
	if got, want := syncIDs(v), []string{syncID + "=" + workflows.PhaseSucceeded}; !slices.Equal(got, want) {
		t.Fatalf("history %v, want %v", got, want)
	}
	// The wait was retried after the kill, by another worker.
	var waits []attempt
	for _, a := range activityAttempts(history(t, syncID)) {
		if a.activity == cluster.WaitWaveName {
			waits = append(waits, a)
		}
	}
	if len(waits) == 0 || waits[0].attempt != 2 || waits[0].identity == identity {
		t.Fatalf("PreSync WaitWave attempts %+v: want attempt 2 on a worker other than %s", waits, identity)
	}
	eventually(t, 30*time.Second, 250*time.Millisecond, "the hook Job deleted by its policy", func() (bool, string) {
		c, d := jobs.counts(syncID)
		return c == 1 && d == 1, fmt.Sprintf("created %d, deleted %d", c, d)
	})
	if got := jobs.syncsWithJobs(); !slices.Equal(got, []string{syncID}) {
		t.Fatalf("hook Jobs made by syncs %v, want only %s", got, syncID)
	}
}
