package api

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/healthlog"
	"github.com/windlass-cd/windlass/workflows"
)

// The health history serves the transitions the compares recorded, newest
// first, bounded by limit; the app's GET and .../resources carry the
// lastTransitionTime of each health the log agrees with, and none where
// the status shows a newer health (a running sync's). Bad input and a
// server without the log are clear errors.
func TestHealthHistory(t *testing.T) {
	w := sdkworker.New(bed.temporal, statusAppQueue, sdkworker.Options{})
	w.RegisterWorkflowWithOptions(statusApplication, workflow.RegisterOptions{Name: workflows.ApplicationWorkflowName})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	rdb := redis.NewClient(&redis.Options{Addr: bed.redisAddr})
	t.Cleanup(func() { _ = rdb.Close() })
	store, err := healthlog.New(rdb)
	if err != nil {
		t.Fatal(err)
	}
	en := newEnv(t, func(o *Options) { o.HealthHistory = store })
	bare := newEnv(t)

	name := fmt.Sprintf("timeline-%d", time.Now().UnixNano()%1e9)
	app := appspec.DefaultProject + "/" + name
	deploy := appspec.ResourceKey{Group: "apps", Kind: "Deployment", Namespace: "web", Name: "web"}
	svc := appspec.ResourceKey{Kind: "Service", Namespace: "web", Name: "web"}
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	for i, st := range []struct {
		app, deploy appspec.HealthStatus
	}{
		{appspec.HealthProgressing, appspec.HealthProgressing},
		{appspec.HealthHealthy, appspec.HealthHealthy},
		{appspec.HealthDegraded, appspec.HealthDegraded},
	} {
		rs := []appspec.ResourceStatus{{ResourceKey: deploy, Health: st.deploy}, {ResourceKey: svc, Health: appspec.HealthHealthy}}
		if _, err := store.Record(t.Context(), app, st.app, rs, t0.Add(time.Duration(i)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}

	// The status: the app and the Deployment Degraded, as recorded; the
	// Service Progressing, newer than the log.
	status := workflows.AppStatus{Sync: appspec.SyncSynced, Health: appspec.HealthDegraded, Resources: []appspec.ResourceStatus{
		{ResourceKey: deploy, Status: appspec.SyncSynced, Health: appspec.HealthDegraded},
		{ResourceKey: svc, Status: appspec.SyncSynced, Health: appspec.HealthProgressing},
	}}
	spec := appspec.Application{Name: name, Project: appspec.DefaultProject,
		Source:      appspec.Source{RepoURL: "https://git.example.com/web.git", Path: "."},
		Destination: appspec.Destination{Server: appspec.InClusterServer, Namespace: "web"}}.Defaulted()
	id := workflows.AppWorkflowID(spec.Project, name)
	if _, err := bed.temporal.ExecuteWorkflow(t.Context(), client.StartWorkflowOptions{ID: id, TaskQueue: statusAppQueue},
		workflows.ApplicationWorkflowName, workflows.AppInput{Spec: spec, State: &workflows.AppState{Spec: spec, Status: status}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bed.temporal.TerminateWorkflow(context.Background(), id, "", "test over") })
	path := "/api/v1/applications/" + name

	res := en.admin(request{method: http.MethodGet, path: path + "/health-history"})
	if res.code != http.StatusOK {
		t.Fatalf("GET health-history: %d %s", res.code, res.body)
	}
	var got healthHistoryView
	res.decode(t, &got)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Minute) }
	want := []healthlog.Transition{
		{Time: at(2), Resource: &deploy, From: appspec.HealthHealthy, To: appspec.HealthDegraded},
		{Time: at(2), From: appspec.HealthHealthy, To: appspec.HealthDegraded},
		{Time: at(1), Resource: &deploy, From: appspec.HealthProgressing, To: appspec.HealthHealthy},
		{Time: at(1), From: appspec.HealthProgressing, To: appspec.HealthHealthy},
		{Time: at(0), Resource: &svc, To: appspec.HealthHealthy},
		{Time: at(0), Resource: &deploy, To: appspec.HealthProgressing},
		{Time: at(0), To: appspec.HealthProgressing},
	}
	if diff := cmp.Diff(want, got.Transitions); diff != "" {
		t.Errorf("health history (-want +got):\n%s", diff)
	}
	res = en.admin(request{method: http.MethodGet, path: path + "/health-history?limit=2"})
	res.decode(t, &got)
	if diff := cmp.Diff(want[:2], got.Transitions); res.code != http.StatusOK || diff != "" {
		t.Errorf("limit=2: %d (-want +got):\n%s", res.code, diff)
	}

	var view workflows.AppView
	res = en.admin(request{method: http.MethodGet, path: path})
	res.decode(t, &view)
	if lt := view.Status.HealthLastTransitionTime; res.code != http.StatusOK || lt == nil || !lt.Equal(at(2)) {
		t.Errorf("app GET: %d, health lastTransitionTime %v; want %s", res.code, lt, at(2))
	}
	var rs []appspec.ResourceStatus
	res = en.admin(request{method: http.MethodGet, path: path + "/resources"})
	res.decode(t, &rs)
	if len(rs) != 2 || rs[0].HealthLastTransitionTime == nil || !rs[0].HealthLastTransitionTime.Equal(at(2)) || rs[1].HealthLastTransitionTime != nil {
		t.Errorf("resources: %+v; want the Deployment's time %s and none for the Service (newer than the log)", rs, at(2))
	}

	for _, tc := range []struct {
		name string
		env  *env
		path string
		code int
	}{
		{name: "limit not a number", env: en, path: path + "/health-history?limit=x", code: http.StatusBadRequest},
		{name: "limit zero", env: en, path: path + "/health-history?limit=0", code: http.StatusBadRequest},
		{name: "no such app", env: en, path: "/api/v1/applications/no-such-app/health-history", code: http.StatusNotFound},
		{name: "no health log", env: bare, path: path + "/health-history", code: http.StatusNotImplemented},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if res := tc.env.admin(request{method: http.MethodGet, path: tc.path}); res.code != tc.code {
				t.Fatalf("GET %s: %d %s, want %d", tc.path, res.code, res.body, tc.code)
			}
		})
	}
}
