package scaleout

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-cd/windlass/activities/watch"
	"github.com/windlass-cd/windlass/api"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/test/bench/harness"
	"github.com/windlass-cd/windlass/workflows"
)

// Environment of TestScaleOut.
const (
	// EnvApps is the number of apps (default 40).
	EnvApps = "WINDLASS_SCALE_APPS"
	// EnvReport names a file for the measurements, as JSON.
	EnvReport = "WINDLASS_SCALE_REPORT"
)

// report is what TestScaleOut measured.
type report struct {
	Apps    int `json:"apps"`
	Workers int `json:"workers"`
	// CreateSeconds is how long the burst of creates took; SyncedSeconds
	// how long from the first create until every app was Synced and
	// Healthy.
	CreateSeconds float64 `json:"createSeconds"`
	SyncedSeconds float64 `json:"syncedSeconds"`
	AppsPerSecond float64 `json:"appsPerSecond"`
	// KilledAfter is how many apps were Synced when the worker holding the
	// cluster watch was killed; KilledInFlight the activities of the apps
	// and their syncs it was running then.
	Killed         string `json:"killed"`
	KilledAfter    int    `json:"killedAfter"`
	KilledInFlight int    `json:"killedInFlight"`
	// HookJobs counts the hook Jobs created (one per sync expected).
	HookJobs int `json:"hookJobs"`
	Syncs    int `json:"syncs"`
	// HealSeconds is how long the watch, on the surviving worker, took to
	// heal a scaled Deployment.
	HealSeconds float64 `json:"healSeconds"`
	// Per app, over its creation and first sync: the app workflow's and
	// the sync workflow's history.
	AppWorkflow  actions `json:"appWorkflowPerApp"`
	SyncWorkflow actions `json:"syncWorkflowPerApp"`
	// RefreshActions is what one refresh of a synced app adds to its
	// history (the steady state: one per refresh interval).
	RefreshActions actions `json:"refreshActions"`
	// Redis growth per app.
	RedisBytesPerApp float64 `json:"redisBytesPerApp"`
	RedisKeysPerApp  float64 `json:"redisKeysPerApp"`
	// Process usage at the end (the killed worker: when it was killed).
	Usage map[string]usage `json:"usage"`
}

func scaleApps(t *testing.T) int {
	n := 40
	if v := os.Getenv(EnvApps); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 2 {
			t.Fatalf("%s=%q: want a number of at least 2", EnvApps, v)
		}
	}
	return n
}

// Issue 7's proof of scale-out, and issue 9's watch failover: apps
// created in a burst sync on two workers; halfway, the worker holding the
// cluster watch is killed with SIGKILL. Every app ends Synced and Healthy
// with exactly one sync and one hook Job; a Deployment scaled afterwards is
// healed through the watch, which moved to the surviving worker.
func TestScaleOut(t *testing.T) {
	n := scaleApps(t)
	rep := report{Apps: n, Workers: len(bed.workers), Usage: map[string]usage{}}
	prefix := fmt.Sprintf("s%d", time.Now().UnixNano()%1e6)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	cleanupNamespaces(t, prefix+"-")
	jobs := watchHookJobs(t, prefix)
	repo := newRepo(t, prefix, appFiles("app", false))
	rdb := redis.NewClient(&redis.Options{Addr: bed.env.RedisAddr})
	defer rdb.Close()
	mem0, keys0, err := redisUsage(t.Context(), rdb)
	if err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	createAll(t, names, repo)
	rep.CreateSeconds = since(start).Seconds()
	var victim *harness.Proc
	eventually(t, 3*time.Minute+time.Duration(n)*3*time.Second, time.Second, "every app Synced and Healthy", func() (bool, string) {
		synced := countApps(t, prefix, "&sync=Synced&health=Healthy")
		if victim == nil && synced >= n/2 {
			// Kill once the victim runs sync activities (or, failing that,
			// at three quarters).
			if victim = killWatchWorker(t, &rep, prefix, synced >= 3*n/4); victim != nil {
				rep.KilledAfter = synced
			}
		}
		return synced == n, fmt.Sprintf("%d of %d", synced, n)
	})
	rep.SyncedSeconds = since(start).Seconds()
	rep.AppsPerSecond = float64(n) / rep.SyncedSeconds
	t.Logf("%d apps Synced and Healthy in %.1fs (%.2f apps/s); %s killed after %d", n, rep.SyncedSeconds, rep.AppsPerSecond, rep.Killed, rep.KilledAfter)
	mem1, keys1, err := redisUsage(t.Context(), rdb)
	if err != nil {
		t.Fatal(err)
	}
	rep.RedisBytesPerApp = float64(mem1-mem0) / float64(n)
	rep.RedisKeysPerApp = float64(keys1-keys0) / float64(n)

	// No sync lost or duplicated.
	want := map[string][]string{}
	for _, name := range names {
		want[name] = []string{workflows.SyncWorkflowID("default", name, 1)}
	}
	checkSyncs(t, jobs, prefix, names, want)

	// Drift after the kill is healed by the watch on the surviving worker.
	rep.HealSeconds = healDrift(t, names[0], victim)
	want[names[0]] = append(want[names[0]], workflows.SyncWorkflowID("default", names[0], 2))
	rep.Syncs = checkSyncs(t, jobs, prefix, names[:1], want)
	rep.Syncs += n - 1
	for _, ids := range want {
		for _, id := range ids {
			c, _ := jobs.counts(id)
			rep.HookJobs += c
		}
	}

	// Temporal actions per app: its workflow up to the first sync, and
	// that sync.
	for _, name := range names[1:] {
		rep.AppWorkflow = rep.AppWorkflow.add(countActions(history(t, workflows.AppWorkflowID("default", name))), 1)
		rep.SyncWorkflow = rep.SyncWorkflow.add(countActions(history(t, want[name][0])), 1)
	}
	rep.AppWorkflow, rep.SyncWorkflow = perApp(rep.AppWorkflow, n-1), perApp(rep.SyncWorkflow, n-1)
	rep.RefreshActions = refreshActions(t, names[1])
	bed.mu.Lock()
	procs := append([]*harness.Proc{bed.temporalProc, bed.server}, bed.members...)
	for _, p := range append(procs, bed.workers...) {
		rep.Usage[p.Name] = usageOf(p)
	}
	bed.mu.Unlock()
	js, _ := json.MarshalIndent(rep, "", "  ")
	t.Logf("report:\n%s", js)
	if f := os.Getenv(EnvReport); f != "" {
		if err := os.WriteFile(f, js, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Two workers again, for the tests that follow.
	if _, err := startWorker(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func perApp(a actions, n int) actions {
	d := func(v int) int { return (v + n/2) / n }
	return actions{d(a.Events), d(a.WorkflowTasks), d(a.Activities), d(a.Timers), d(a.Signals), d(a.Children), d(a.Upserts), d(a.Updates), d(a.Markers)}
}

// createAll creates the apps through the API, 16 requests at a time.
func createAll(t *testing.T, names []string, repo string) {
	t.Helper()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	sem := make(chan struct{}, 16)
	for _, name := range names {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			_, err := request(t.Context(), bed.token, http.MethodPost, "/api/v1/applications", appBody(name, repo, "app", appspec.InClusterServer, true), nil)
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d creates failed, first: %v", len(errs), errs[0])
	}
}

// countApps counts the apps named prefix-* that the list (with filter
// parameters) shows.
func countApps(t *testing.T, prefix, filter string) int {
	t.Helper()
	total := 0
	for cursor := ""; ; {
		var page api.AppList
		call(t, http.MethodGet, "/api/v1/applications?limit=1000&search="+url.QueryEscape(prefix+"-")+filter+"&cursor="+cursor, nil, &page)
		total += len(page.Items)
		if page.Next == "" {
			return total
		}
		cursor = page.Next
	}
}

// inClusterWatch is the ID of the in-cluster destination's watch.
var inClusterWatch = workflows.ClusterWatchWorkflowID(appspec.InClusterServer)

// watchWorker returns the worker running the in-cluster watch activity.
func watchWorker(t *testing.T) (*harness.Proc, string) {
	t.Helper()
	d, err := bed.temporal.DescribeWorkflowExecution(t.Context(), inClusterWatch, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range d.GetPendingActivities() {
		if a.GetActivityType().GetName() == watch.WatchName && a.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED {
			return workerByIdentity(a.GetLastWorkerIdentity()), a.GetLastWorkerIdentity()
		}
	}
	return nil, ""
}

// killWatchWorker kills the worker running the cluster watch (the first
// worker if the watch is between attempts) if it runs sync activities or
// anyway is set, noting in rep what it was running. It returns the worker
// killed, or nil.
func killWatchWorker(t *testing.T, rep *report, prefix string, anyway bool) *harness.Proc {
	t.Helper()
	victim, identity := watchWorker(t)
	if victim == nil {
		bed.mu.Lock()
		victim = bed.workers[0]
		bed.mu.Unlock()
		identity = strconv.Itoa(victim.PID()) + "@"
	}
	rep.KilledInFlight = inFlight(t, prefix, identity)
	if rep.KilledInFlight == 0 && !anyway {
		return nil
	}
	rep.Usage[victim.Name+" (killed)"] = usageOf(victim)
	killWorker(victim)
	rep.Killed = victim.Name
	t.Logf("killed %s (pid %d), holding the cluster watch and running %d activities of the apps", victim.Name, victim.PID(), rep.KilledInFlight)
	return victim
}

// inFlight counts the started activities of the apps named prefix-* and
// their syncs on the worker whose identity starts with identity.
func inFlight(t *testing.T, prefix, identity string) int {
	t.Helper()
	pid, _, _ := strings.Cut(identity, "@")
	resp, err := bed.temporal.ListWorkflow(t.Context(), &workflowservice.ListWorkflowExecutionsRequest{
		Query: fmt.Sprintf("ExecutionStatus = 'Running' AND %s STARTS_WITH 'default/%s-'", workflows.SearchAttrApp, prefix), PageSize: 1000,
	})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range resp.GetExecutions() {
		d, err := bed.temporal.DescribeWorkflowExecution(t.Context(), e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId())
		if err != nil {
			continue
		}
		for _, a := range d.GetPendingActivities() {
			if a.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED && strings.HasPrefix(a.GetLastWorkerIdentity(), pid+"@") {
				n++
			}
		}
	}
	return n
}

// checkSyncs checks that each app's history holds exactly the syncs in
// want, all succeeded, that visibility has exactly one execution of each,
// and that each sync created one hook Job, deleted by its policy. It
// returns the number of syncs checked.
func checkSyncs(t *testing.T, jobs *hookJobs, prefix string, names []string, want map[string][]string) int {
	t.Helper()
	syncs := 0
	for _, name := range names {
		v := waitSynced(t, name, time.Minute)
		var exp []string
		for _, id := range want[name] {
			exp = append(exp, id+"="+workflows.PhaseSucceeded)
		}
		if got := syncIDs(v); !slices.Equal(got, exp) {
			t.Errorf("%s: syncs %v, want %v", name, got, exp)
		}
		for _, id := range want[name] {
			syncs++
			eventually(t, 30*time.Second, 250*time.Millisecond, "one hook Job of "+id+", deleted", func() (bool, string) {
				c, d := jobs.counts(id)
				return c == 1 && d == 1, fmt.Sprintf("created %d, deleted %d", c, d)
			})
		}
	}
	// Visibility: one execution per expected sync ID, none other.
	runs := map[string]int{}
	var token []byte
	for {
		resp, err := bed.temporal.ListWorkflow(t.Context(), &workflowservice.ListWorkflowExecutionsRequest{
			Query:    fmt.Sprintf("WorkflowType = '%s' AND %s STARTS_WITH 'default/%s-'", workflows.SyncWorkflowName, workflows.SearchAttrApp, prefix),
			PageSize: 1000, NextPageToken: token,
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range resp.GetExecutions() {
			runs[e.GetExecution().GetWorkflowId()]++
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	for _, name := range names {
		for _, id := range want[name] {
			if runs[id] != 1 {
				t.Errorf("%s: %d executions, want 1", id, runs[id])
			}
		}
	}
	all := 0
	for _, ids := range want {
		all += len(ids)
	}
	if len(runs) != all {
		extra := slices.DeleteFunc(slices.Sorted(maps.Keys(runs)), func(id string) bool {
			for _, ids := range want {
				if slices.Contains(ids, id) {
					return true
				}
			}
			return false
		})
		t.Errorf("sync executions not expected: %v", extra)
	}
	return syncs
}

// healDrift scales the app's Deployment as `kubectl scale` does once the
// watch runs again on a live worker, waits until it is healed and checks
// that a drift refresh from the watch caused it. It returns how long the
// heal took.
func healDrift(t *testing.T, name string, killed *harness.Proc) float64 {
	t.Helper()
	eventually(t, 2*time.Minute, time.Second, "the cluster watch running on a live worker", func() (bool, string) {
		w, id := watchWorker(t)
		return w != nil && w != killed, "watch activity on " + id
	})
	w, _ := watchWorker(t)
	t.Logf("the cluster watch now runs on %s", w.Name)
	start := time.Now()
	_, err := bed.kube.AppsV1().Deployments(name).UpdateScale(t.Context(), "web",
		&autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: name}, Spec: autoscalingv1.ScaleSpec{Replicas: 3}},
		metav1.UpdateOptions{FieldManager: "kubectl"})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 90*time.Second, 250*time.Millisecond, "drift healed back to 1 replica", func() (bool, string) {
		d, err := bed.kube.AppsV1().Deployments(name).Get(t.Context(), "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return *d.Spec.Replicas == 1, fmt.Sprintf("%d replicas", *d.Spec.Replicas)
	})
	took := since(start).Seconds()
	drift := 0
	for _, e := range history(t, workflows.AppWorkflowID("default", name)) {
		if a := e.GetWorkflowExecutionSignaledEventAttributes(); a != nil && a.GetSignalName() == workflows.SignalRefresh {
			for _, p := range a.GetInput().GetPayloads() {
				if strings.Contains(string(p.GetData()), "drift: Deployment "+name+"/web") {
					drift++
				}
			}
		}
	}
	if drift == 0 {
		t.Fatal("no drift refresh from the cluster watch in the app's history")
	}
	return took
}

// refreshActions refreshes a synced app once and counts what that added to
// its history.
func refreshActions(t *testing.T, name string) actions {
	t.Helper()
	id := workflows.AppWorkflowID("default", name)
	before := countActions(history(t, id))
	at := appView(t, name).Status.ReconciledAt
	call(t, http.MethodPost, "/api/v1/applications/"+name+"/refresh", nil, nil)
	eventually(t, time.Minute, 250*time.Millisecond, "the refresh of "+name, func() (bool, string) {
		v := appView(t, name)
		return v.Status.ReconciledAt.After(at) && v.Status.Sync == appspec.SyncSynced, string(v.Status.Sync)
	})
	var after actions
	// The pass ends with its last workflow task: wait until the history
	// stops growing.
	eventually(t, 30*time.Second, time.Second, "the refresh's history complete", func() (bool, string) {
		a := countActions(history(t, id))
		done := a.Events == after.Events
		after = a
		return done, strconv.Itoa(a.Events) + " events"
	})
	return after.add(before, -1)
}
