package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/health"
)

// A Lua health check that fails ends the wave's wait at once with the
// script's error, which is also the resource's health message; the wait
// does not run out its timeout.
func TestWaitWaveFailsOnHealthScriptError(t *testing.T) {
	hc, err := health.New(health.Options{Inline: map[string]string{
		"ConfigMap": `error("status.phase is not set")`,
	}})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, WithHealthChecker(hc), WithSettleWait(0))
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings"},
		"data":     map[string]any{"mode": "on"},
	}}
	tg := h.target("lua")
	in := WaveInput{Target: tg, Manifests: h.put(cm), Operation: SyncOperation{SyncID: "s1"}, Step: Step{Phase: PhaseSync}}
	must[WaveOutput](h, ApplyWaveName, in)

	const scriptErr = "lua health script for ConfigMap failed: line 1: status.phase is not set"
	// The deadline only bounds the test on a wait that would not end.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	out, err := h.a.WaitWave(ctx, in)
	if err != nil {
		t.Fatalf("WaitWave: %v; want an output that names the script error", err)
	}
	key := appspec.ResourceKey{Kind: "ConfigMap", Namespace: h.ns, Name: "settings"}
	if out.Failed == nil || *out.Failed != key || out.Health != appspec.HealthDegraded {
		t.Fatalf("failed %v, health %s; want %v failed and the wave Degraded", out.Failed, out.Health, key)
	}
	if want := "ConfigMap " + h.ns + "/settings: " + scriptErr; out.Message != want {
		t.Errorf("message %q, want %q", out.Message, want)
	}
	var got []health.Result
	for _, r := range out.Resources {
		got = append(got, health.Result{Status: r.Health, Message: r.Message})
	}
	if diff := cmp.Diff([]health.Result{{Status: appspec.HealthUnknown, Message: scriptErr}}, got); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}

	cmp2 := h.compare(tg, in.Manifests, false)
	if len(cmp2.Resources) != 1 || cmp2.Resources[0].Health != appspec.HealthUnknown || cmp2.Resources[0].HealthMessage != scriptErr {
		t.Errorf("compared resources %+v; want the ConfigMap Unknown with the script error", cmp2.Resources)
	}
}
