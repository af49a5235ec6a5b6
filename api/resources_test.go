package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"k8s.io/client-go/rest"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/kube"
	"github.com/windlass-cd/windlass/internal/testbed"
	"github.com/windlass-cd/windlass/workflows"
)

// statusAppQueue is the task queue of statusApplication.
const statusAppQueue = "api-test-status-app"

// statusApplication stands in for an application workflow that answers
// the status it was started with.
func statusApplication(ctx workflow.Context, in workflows.AppInput) error {
	view := workflows.AppView{Spec: in.Spec, Status: in.State.Status}
	if err := workflow.SetQueryHandler(ctx, workflows.QueryStatus, func() (workflows.AppView, error) { return view, nil }); err != nil {
		return err
	}
	return workflow.Await(ctx, func() bool { return false })
}

// putResourceList stores rs as a compare does (cluster.WithResourceLists)
// and returns its reference.
func putResourceList(t *testing.T, rdb *redis.Client, rs []appspec.ResourceStatus) string {
	t.Helper()
	raw, err := json.Marshal(rs)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	ref := "windlass:resources:v1:" + hex.EncodeToString(sum[:])
	b, err := render.EncodeEntry(raw, len(rs))
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(t.Context(), ref, b, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Del(context.Background(), ref).Err() })
	if _, err := (cluster.ResourceLists{Store: render.RedisStore{Client: rdb}}).LoadResources(t.Context(), ref); err != nil {
		t.Fatalf("the test's list is not one the API reads: %v", err)
	}
	return ref
}

// An app with more resources than its status holds is served with the
// full list from the cache, the status's own entries (which a running
// sync updates) in place of the stored ones; when the cache has lost the
// list, with the bounded list and the count of those left out.
func TestFullResourceList(t *testing.T) {
	w := sdkworker.New(bed.temporal, statusAppQueue, sdkworker.Options{})
	w.RegisterWorkflowWithOptions(statusApplication, workflow.RegisterOptions{Name: workflows.ApplicationWorkflowName})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	rdb := redis.NewClient(&redis.Options{Addr: bed.redisAddr})
	t.Cleanup(func() { _ = rdb.Close() })
	insp, err := NewInspector(render.RedisStore{Client: rdb},
		kube.NewFactory(&rest.Config{Host: "https://" + testbed.ClosedAddr(t)}, kube.Options{}), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	en := newEnv(t, func(o *Options) { o.Inspector = insp })

	const n = cluster.MaxResults + 100
	full := make([]appspec.ResourceStatus, n)
	for i := range full {
		full[i] = appspec.ResourceStatus{ResourceKey: appspec.ResourceKey{Kind: "ConfigMap", Namespace: "big", Name: fmt.Sprintf("cm-%04d", i)},
			Status: appspec.SyncOutOfSync, Health: appspec.HealthMissing}
	}
	ref := putResourceList(t, rdb, full)
	// The status holds the first MaxResults, which a sync has applied since.
	bounded := append([]appspec.ResourceStatus(nil), full[:cluster.MaxResults]...)
	for i := range bounded {
		bounded[i].Status, bounded[i].Health = appspec.SyncSynced, appspec.HealthHealthy
	}
	want := append(append([]appspec.ResourceStatus(nil), bounded...), full[cluster.MaxResults:]...)

	start := func(name, ref string) string {
		st := workflows.AppStatus{Sync: appspec.SyncOutOfSync, Health: appspec.HealthMissing,
			Resources: bounded, OmittedResources: n - cluster.MaxResults, ResourcesRef: ref}
		spec := appspec.Application{Name: name, Project: appspec.DefaultProject,
			Source:      appspec.Source{RepoURL: "https://git.example.com/big.git", Path: "."},
			Destination: appspec.Destination{Server: appspec.InClusterServer, Namespace: "big"}}.Defaulted()
		id := workflows.AppWorkflowID(spec.Project, name)
		_, err := bed.temporal.ExecuteWorkflow(t.Context(), client.StartWorkflowOptions{ID: id, TaskQueue: statusAppQueue},
			workflows.ApplicationWorkflowName, workflows.AppInput{Spec: spec, State: &workflows.AppState{Spec: spec, Status: st}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = bed.temporal.TerminateWorkflow(context.Background(), id, "", "test over") })
		return "/api/v1/applications/" + name
	}
	big := start(fmt.Sprintf("big-%d", time.Now().UnixNano()%1e9), ref)
	gone := start(fmt.Sprintf("gone-%d", time.Now().UnixNano()%1e9), "windlass:resources:v1:0000")

	for _, tc := range []struct {
		name, path    string
		want          []appspec.ResourceStatus
		omitted       int
		ref           string
		resourcesOnly bool
	}{
		{name: "get", path: big, want: want},
		{name: "resources", path: big + "/resources", want: want, resourcesOnly: true},
		{name: "get, list gone", path: gone, want: bounded, omitted: n - cluster.MaxResults, ref: "windlass:resources:v1:0000"},
		{name: "resources, list gone", path: gone + "/resources", want: bounded, resourcesOnly: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := en.admin(request{method: http.MethodGet, path: tc.path})
			if res.code != http.StatusOK {
				t.Fatalf("GET %s: %d %s", tc.path, res.code, res.body)
			}
			var st workflows.AppStatus
			if tc.resourcesOnly {
				res.decode(t, &st.Resources)
			} else {
				var v workflows.AppView
				res.decode(t, &v)
				st = v.Status
			}
			if diff := cmp.Diff(tc.want, st.Resources); diff != "" {
				t.Errorf("resources (-want +got):\n%s", diff)
			}
			if st.OmittedResources != tc.omitted || st.ResourcesRef != tc.ref {
				t.Errorf("omitted %d, ref %q; want %d, %q", st.OmittedResources, st.ResourcesRef, tc.omitted, tc.ref)
			}
		})
	}

	t.Run("stream", func(t *testing.T) {
		events := streamEvents(t, en, "/api/v1/stream"+big[len("/api/v1"):], 2*time.Second)
		if len(events[eventApplication]) == 0 {
			t.Fatalf("no application event: %v", events)
		}
		var v workflows.AppView
		if err := json.Unmarshal([]byte(events[eventApplication][0]), &v); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, v.Status.Resources); diff != "" || v.Status.OmittedResources != 0 {
			t.Errorf("streamed resources, %d omitted (-want +got):\n%s", v.Status.OmittedResources, diff)
		}
	})
}
