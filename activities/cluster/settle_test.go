package cluster

import (
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/windlass-cd/windlass/internal/appspec"
)

// A wave's settle wait does not take an object's state from before its
// apply for its state now. The API server's watch cache serves a watch
// opened without a version at whatever version it has reached, which can
// be before the apply that just returned: here the Deployment's watch
// starts, as a lagging cache would start it, with the Deployment as it was
// before the apply (its rollout done: healthy), and catches up half a
// second later, while the new pods have no node to run on. The wave must
// not settle; before notBefore it settled on the old state.
func TestApplyWaveSettlesOnTheAppliedState(t *testing.T) {
	h := newHarness(t, WithSettleWait(time.Minute))
	direct := h.a.clusters.(clusters)
	var (
		mu     sync.Mutex
		stale  *unstructured.Unstructured
		served bool
	)
	h.a.clusters = &watchRecorder{clusters: direct, wrap: func(w watch.Interface) watch.Interface {
		mu.Lock()
		defer mu.Unlock()
		if stale == nil {
			return w
		}
		old := stale
		stale, served = nil, true
		return lagging(w, old, 500*time.Millisecond)
	}}
	tg := h.target("stale")
	objs := h.fixture("guestbook.yaml")
	in := WaveInput{Target: tg, Manifests: h.put(objs...), Operation: SyncOperation{SyncID: "s1"}, Step: Step{Phase: PhaseSync}}
	if out := must[WaveOutput](h, ApplyWaveName, in); !out.Settled {
		t.Fatalf("the first apply did not settle: %+v", out)
	}
	c, err := direct.For(tg.Destination.Server)
	if err != nil {
		t.Fatal(err)
	}
	old, err := c.Dynamic.Resource(gvrDeployments).Namespace(h.ns).Get(t.Context(), "guestbook-ui", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			if err := unstructured.SetNestedStringMap(o.Object, map[string]string{"windlass.dev/no-such-node": "true"}, "spec", "template", "spec", "nodeSelector"); err != nil {
				t.Fatal(err)
			}
		}
	}
	mu.Lock()
	stale = old
	mu.Unlock()
	// Only the Deployment is left unhealthy by this apply, so the settle
	// wait opens one watch: the Deployments'.
	in = WaveInput{Target: tg, Manifests: h.put(objs...), Operation: SyncOperation{SyncID: "s2"}, Step: Step{Phase: PhaseSync}, SettleMillis: 2000}
	out := must[WaveOutput](h, ApplyWaveName, in)
	mu.Lock()
	defer mu.Unlock()
	if !served {
		t.Fatal("no watch started with the Deployment's old state: the case did not happen")
	}
	if out.Settled || out.Health == appspec.HealthHealthy {
		t.Fatalf("the wave settled on the Deployment's state from before its apply: %+v", out)
	}
}

// lagging is w as a watch cache that lags behind a write serves it: it
// sends old first, then, after lag, w's own events.
func lagging(w watch.Interface, old *unstructured.Unstructured, lag time.Duration) watch.Interface {
	return relay(w, func(send func(watch.Event) bool, stop <-chan struct{}) {
		if !send(watch.Event{Type: watch.Added, Object: old.DeepCopy()}) {
			return
		}
		select {
		case <-time.After(lag):
		case <-stop:
			return
		}
		for ev := range w.ResultChan() {
			if !send(ev) {
				return
			}
		}
	})
}

// A plan run as a local activity (the sync's own worker) applies its lone
// Sync wave and returns it settled, so that the sync runs no ApplyWave; run
// as a regular activity, or in a dry run, it applies nothing.
func TestPlanAppliesItsLoneWaveWhenLocal(t *testing.T) {
	h := newHarness(t, WithSettleWait(time.Minute))
	tg := h.target("lone")
	in := PlanInput{Target: tg, Manifests: h.put(h.fixture("guestbook.yaml")...), Operation: SyncOperation{SyncID: "s1"}}
	live := func() bool {
		t.Helper()
		_, err := h.dyn.Resource(gvrDeployments).Namespace(h.ns).Get(t.Context(), "guestbook-ui", metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	local := func(in PlanInput) PlanOutput {
		t.Helper()
		v, err := h.env.ExecuteLocalActivity(h.a.Plan, in)
		if err != nil {
			t.Fatal(err)
		}
		var out PlanOutput
		if err := v.Get(&out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if out := must[PlanOutput](h, PlanName, in); out.Applied != nil || live() {
		t.Fatalf("a regular plan applied its wave: %+v", out.Applied)
	}
	dry := in
	dry.Operation.DryRun = true
	if out := local(dry); out.Applied != nil || live() {
		t.Fatalf("a dry run's plan applied its wave: %+v", out.Applied)
	}
	out := local(in)
	if out.Applied == nil || !out.Applied.Settled || out.Applied.Health != appspec.HealthHealthy || len(out.Applied.Resources) != 3 {
		t.Fatalf("the local plan's wave = %+v, want it applied and settled", out.Applied)
	}
	if !live() {
		t.Fatal("the local plan's wave is not in the cluster")
	}
}
