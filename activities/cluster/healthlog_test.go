package cluster

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/healthlog"
)

// timelineDeployment is a Deployment whose pods, with noNode, no node
// takes.
func timelineDeployment(noNode bool, deadline int64) *unstructured.Unstructured {
	pod := map[string]any{"containers": []any{map[string]any{"name": "web", "image": "registry.k8s.io/pause:3.10"}}}
	if noNode {
		pod["nodeSelector"] = map[string]any{"windlass.dev/no-such-node": "true"}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web"},
		"spec": map[string]any{
			"replicas": int64(1), "progressDeadlineSeconds": deadline,
			"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}}, "spec": pod},
		},
	}}
}

// A Deployment on the test bed goes Progressing (its pods find no node),
// Healthy (they do), then Degraded (a new template whose pods find no node
// again, past a one-second progress deadline). The compares record each
// change of the Deployment and of the app, oldest last, each starting
// where the one before ended; the Deployment's lastTransitionTime is its
// last transition's time.
func TestCompareRecordsHealthTransitions(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: bed.RedisAddr})
	t.Cleanup(func() { _ = rdb.Close() })
	store, err := healthlog.New(rdb)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, WithHealthLog(store), WithSettleWait(0))
	// The namespace names the app: the log outlives a run.
	tg := h.target(h.ns)
	app := appName(tg)
	t.Cleanup(func() {
		_ = rdb.Del(context.Background(), "windlass:health:v1:{"+app+"}:state", "windlass:health:v1:{"+app+"}:log").Err()
	})
	deploy := appspec.ResourceKey{Group: "apps", Kind: "Deployment", Namespace: h.ns, Name: "web"}

	apply := func(ref render.ManifestRef) {
		op := SyncOperation{SyncID: "sync/" + app + "/" + t.Name()}
		plan := must[PlanOutput](h, PlanName, PlanInput{Target: tg, Manifests: ref, Operation: op})
		for _, s := range plan.Steps {
			must[WaveOutput](h, ApplyWaveName, WaveInput{Target: tg, Manifests: ref, Operation: op, Step: s})
		}
	}
	reach := func(ref render.ManifestRef, want appspec.HealthStatus) {
		h.eventually("Deployment "+string(want), func() bool {
			out := h.compare(tg, ref, false)
			return len(out.Resources) == 1 && out.Resources[0].Health == want && out.Health == want
		})
	}
	for _, step := range []struct {
		noNode   bool
		deadline int64
		want     appspec.HealthStatus
	}{
		{noNode: true, deadline: 600, want: appspec.HealthProgressing},
		{noNode: false, deadline: 600, want: appspec.HealthHealthy},
		{noNode: true, deadline: 1, want: appspec.HealthDegraded},
	} {
		ref := h.put(timelineDeployment(step.noNode, step.deadline))
		apply(ref)
		reach(ref, step.want)
	}

	got, err := store.History(t.Context(), app, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Oldest first, per subject.
	paths := map[string][]healthlog.Transition{}
	for i := len(got) - 1; i >= 0; i-- {
		subject := "app"
		if r := got[i].Resource; r != nil {
			if *r != deploy {
				t.Fatalf("transition of %v: want only the Deployment's and the app's", *r)
			}
			subject = "deployment"
		}
		paths[subject] = append(paths[subject], got[i])
	}
	for subject, path := range paths {
		var seen []appspec.HealthStatus
		from := appspec.HealthStatus("")
		for i, tr := range path {
			if tr.From != from || tr.To == tr.From {
				t.Fatalf("%s transition %d: %s -> %s after %s", subject, i, tr.From, tr.To, from)
			}
			if i > 0 && tr.Time.Before(path[i-1].Time) {
				t.Fatalf("%s transition %d is older than the one before", subject, i)
			}
			from = tr.To
			seen = append(seen, tr.To)
		}
		// Between the steps a compare may see the new rollout in
		// progress; the steps themselves come in order.
		if !subsequence([]appspec.HealthStatus{appspec.HealthProgressing, appspec.HealthHealthy, appspec.HealthDegraded}, seen) ||
			seen[0] != appspec.HealthProgressing || seen[len(seen)-1] != appspec.HealthDegraded {
			t.Fatalf("%s went %v; want Progressing, Healthy, then Degraded", subject, seen)
		}
	}
	if len(paths) != 2 {
		t.Fatalf("transitions of %d subjects, want the app's and the Deployment's", len(paths))
	}
	if last := paths["deployment"][len(paths["deployment"])-1]; last.Message == "" {
		t.Error("Degraded transition without the health message")
	}
	cur, err := store.Current(t.Context(), app)
	if err != nil {
		t.Fatal(err)
	}
	dep := paths["deployment"]
	want := healthlog.State{Health: appspec.HealthDegraded, Message: dep[len(dep)-1].Message, LastTransitionTime: dep[len(dep)-1].Time}
	if diff := cmp.Diff(want, cur[deploy.String()]); diff != "" {
		t.Errorf("Deployment's state (-want +got):\n%s", diff)
	}
}

// subsequence reports whether want appears in got in order.
func subsequence[T comparable](want, got []T) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}
