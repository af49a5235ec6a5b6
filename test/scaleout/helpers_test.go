package scaleout

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/manifest"
	"github.com/windlass-cd/windlass/internal/testbed"
	"github.com/windlass-cd/windlass/workflows"
)

// Fixture manifests: a small app with a PreSync hook Job that its sync
// deletes once it succeeded (HookSucceeded).
const (
	configMapYAML = `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  greeting: hello
`
	deploymentYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
`
	// hookJobYAML is the PreSync hook; %s is "true" to create it
	// suspended, which keeps the sync waiting in WaitWave until the test
	// resumes the Job.
	hookJobYAML = `apiVersion: batch/v1
kind: Job
metadata:
  generateName: migrate-
  annotations:
    argocd.argoproj.io/hook: PreSync
    argocd.argoproj.io/hook-delete-policy: HookSucceeded
spec:
  suspend: %s
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: migrate
        image: busybox:1.36
        command: [sh, -c, "echo migrated"]
`
)

// appFiles are the files of the fixture app under path.
func appFiles(path string, suspendHook bool) map[string]string {
	return map[string]string{
		path + "/configmap.yaml":  configMapYAML,
		path + "/deployment.yaml": deploymentYAML,
		path + "/hook.yaml":       fmt.Sprintf(hookJobYAML, fmt.Sprint(suspendHook)),
	}
}

// newRepo creates a Git repository holding files and returns its URL.
func newRepo(t *testing.T, name string, files map[string]string) string {
	t.Helper()
	url, w := newWorkRepo(t, name)
	commitFiles(t, w, files, "fixture")
	return url
}

// newWorkRepo creates an empty Git repository and returns its URL and a
// clone to commit to.
func newWorkRepo(t *testing.T, name string) (string, *testbed.WorkRepo) {
	t.Helper()
	url, err := bed.git.CreateRepo(name)
	if err != nil {
		t.Fatal(err)
	}
	w, err := testbed.NewWorkRepo(t.Context(), t.TempDir(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return url, w
}

// commitFiles writes files to w, commits them with msg, pushes and
// returns the commit's SHA.
func commitFiles(t *testing.T, w *testbed.WorkRepo, files map[string]string, msg string) string {
	t.Helper()
	for _, p := range slices.Sorted(mapKeys(files)) {
		if err := w.WriteFile(p, files[p]); err != nil {
			t.Fatal(err)
		}
	}
	sha, err := w.CommitAndPush(t.Context(), msg)
	if err != nil {
		t.Fatal(err)
	}
	return sha
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// appBody is an application in its own namespace; automated apps heal
// drift. The refresh interval is an hour, so that only the cluster watch
// can notice drift within a test.
func appBody(name, repoURL, path, server string, automated bool) map[string]any {
	policy := map[string]any{"syncOptions": []string{"CreateNamespace=true"}}
	if automated {
		policy["automated"] = map[string]any{"selfHeal": true}
	}
	return map[string]any{
		"name": name, "project": "default", "refreshSeconds": 3600,
		"source":      map[string]any{"repoURL": repoURL, "path": path, "targetRevision": "main"},
		"destination": map[string]any{"server": server, "namespace": name},
		"syncPolicy":  policy,
	}
}

func appView(t *testing.T, name string) workflows.AppView {
	t.Helper()
	var v workflows.AppView
	call(t, http.MethodGet, "/api/v1/applications/"+name, nil, &v)
	return v
}

// syncIDs lists the IDs in an app's sync history, oldest first, with
// their phases.
func syncIDs(v workflows.AppView) []string {
	var out []string
	for i := len(v.History) - 1; i >= 0; i-- {
		out = append(out, v.History[i].ID+"="+v.History[i].Phase)
	}
	return out
}

// cleanupNamespaces deletes, after the test, the namespaces whose names
// start with prefix: the test bed's fake nodes hold 110 pods each, and
// later tests need room.
func cleanupNamespaces(t *testing.T, prefix string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		list, err := bed.kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Logf("list namespaces: %v", err)
			return
		}
		for _, ns := range list.Items {
			if strings.HasPrefix(ns.Name, prefix) {
				_ = bed.kube.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
			}
		}
	})
}

// hookJobs records every hook Job created or deleted in the namespaces
// with a prefix, from a watch started before the syncs (a hook deleted by
// its policy is still counted).
type hookJobs struct {
	mu      sync.Mutex
	created map[string]map[types.UID]string // sync ID → uid → name
	deleted map[string]int
}

func watchHookJobs(t *testing.T, nsPrefix string) *hookJobs {
	t.Helper()
	h := &hookJobs{created: map[string]map[types.UID]string{}, deleted: map[string]int{}}
	f := informers.NewSharedInformerFactoryWithOptions(bed.kube, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = manifest.SyncIDLabel }))
	inf := f.Batch().V1().Jobs().Informer()
	ours := func(obj any) (*batchv1.Job, bool) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		j, ok := obj.(*batchv1.Job)
		return j, ok && strings.HasPrefix(j.Namespace, nsPrefix)
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if j, ok := ours(obj); ok {
				h.mu.Lock()
				defer h.mu.Unlock()
				id := j.Annotations[manifest.SyncIDAnnotation]
				if h.created[id] == nil {
					h.created[id] = map[types.UID]string{}
				}
				h.created[id][j.UID] = j.Name
			}
		},
		DeleteFunc: func(obj any) {
			if j, ok := ours(obj); ok {
				h.mu.Lock()
				defer h.mu.Unlock()
				h.deleted[j.Annotations[manifest.SyncIDAnnotation]]++
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); f.Shutdown() })
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(t.Context().Done(), inf.HasSynced) {
		t.Fatal("job informer did not sync")
	}
	return h
}

// counts returns the hook Jobs created and deleted for syncID.
func (h *hookJobs) counts(syncID string) (created, deleted int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.created[syncID]), h.deleted[syncID]
}

// syncsWithJobs lists the sync IDs that created hook Jobs.
func (h *hookJobs) syncsWithJobs() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Sorted(mapKeys(h.created))
}

// history returns a workflow's events.
func history(t *testing.T, id string) []*historypb.HistoryEvent {
	t.Helper()
	it := bed.temporal.GetWorkflowHistory(t.Context(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var out []*historypb.HistoryEvent
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatalf("history of %s: %v", id, err)
		}
		out = append(out, e)
	}
	return out
}

// attempt is one completed activity of a history: its type and task
// queue, the attempt that ended it and the worker that ran that attempt.
type attempt struct {
	activity, queue string
	attempt         int32
	identity        string
}

func activityAttempts(events []*historypb.HistoryEvent) []attempt {
	scheduled := map[int64]attempt{}
	var out []attempt
	for _, e := range events {
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil {
			scheduled[e.GetEventId()] = attempt{activity: a.GetActivityType().GetName(), queue: a.GetTaskQueue().GetName()}
		}
		if a := e.GetActivityTaskStartedEventAttributes(); a != nil {
			at := scheduled[a.GetScheduledEventId()]
			at.attempt, at.identity = a.GetAttempt(), a.GetIdentity()
			out = append(out, at)
		}
	}
	return out
}

// waitSynced waits until the app is Synced and Healthy with no operation.
func waitSynced(t *testing.T, name string, timeout time.Duration) workflows.AppView {
	t.Helper()
	var v workflows.AppView
	eventually(t, timeout, time.Second, name+" Synced and Healthy", func() (bool, string) {
		v = appView(t, name)
		st := v.Status
		return st.Sync == appspec.SyncSynced && st.Health == appspec.HealthHealthy && st.Operation == nil,
			fmt.Sprintf("%s/%s operation=%v history=%v", st.Sync, st.Health, st.Operation != nil, syncIDs(v))
	})
	return v
}
