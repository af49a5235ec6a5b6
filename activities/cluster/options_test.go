package cluster

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/manifest"
)

// applyStep runs ApplyWave for the Sync step of wave 0.
func (h *harness) applyStep(tg Target, objs []*unstructured.Unstructured, syncID string) (WaveOutput, error) {
	h.t.Helper()
	return run[WaveOutput](h, ApplyWaveName, WaveInput{Target: tg, Manifests: h.put(objs...), Operation: SyncOperation{SyncID: syncID}, Step: Step{Phase: PhaseSync}})
}

func TestSyncOptions(t *testing.T) {
	configMap := func(h *harness, opts string, extra map[string]any) *unstructured.Unstructured {
		cm := h.fixture("guestbook.yaml")[0]
		if opts != "" {
			cm.SetAnnotations(map[string]string{manifest.SyncOptionsAnnotation: opts})
		}
		for k, v := range extra {
			cm.Object[k] = v
		}
		return cm
	}
	t.Run("Validate=false accepts unknown fields", func(t *testing.T) {
		h := newHarness(t)
		tg := h.target("validate")
		_, err := h.applyStep(tg, []*unstructured.Unstructured{configMap(h, "", map[string]any{"bogus": "x"})}, "v1")
		if typ, nonRetryable := errorType(err); typ != "ApplyFailed" || !nonRetryable || !strings.Contains(err.Error(), "bogus") {
			t.Fatalf("strict apply error = %v", err)
		}
		if _, err := h.applyStep(tg, []*unstructured.Unstructured{configMap(h, "Validate=false", map[string]any{"bogus": "x"})}, "v2"); err != nil {
			t.Fatalf("Validate=false: %v", err)
		}
	})
	t.Run("Replace=true replaces", func(t *testing.T) {
		h := newHarness(t)
		tg := h.target("replace")
		for i, want := range []Action{ActionCreated, ActionConfigured} {
			cm := configMap(h, "Replace=true", map[string]any{"data": map[string]any{"n": string(rune('a' + i))}})
			out, err := h.applyStep(tg, []*unstructured.Unstructured{cm}, "r")
			if err != nil || out.Resources[0].Action != want {
				t.Fatalf("replace %d: %+v, %v", i, out.Resources, err)
			}
		}
		for _, mf := range h.get(gvrConfigMaps, "guestbook-config").GetManagedFields() {
			if mf.Manager == FieldManager && mf.Operation != metav1.ManagedFieldsOperationUpdate {
				t.Fatalf("Replace=true used %s", mf.Operation)
			}
		}
	})
	t.Run("Force=true recreates on an immutable change", func(t *testing.T) {
		h := newHarness(t)
		tg := h.target("force")
		dep := h.fixture("guestbook.yaml")[2]
		if _, err := h.applyStep(tg, []*unstructured.Unstructured{dep}, "f1"); err != nil {
			t.Fatal(err)
		}
		uid := h.get(gvrDeployments, "guestbook-ui").GetUID()
		moved := dep.DeepCopy()
		_ = unstructured.SetNestedStringMap(moved.Object, map[string]string{"app": "moved"}, "spec", "selector", "matchLabels")
		_ = unstructured.SetNestedStringMap(moved.Object, map[string]string{"app": "moved"}, "spec", "template", "metadata", "labels")
		_, err := h.applyStep(tg, []*unstructured.Unstructured{moved}, "f2")
		if typ, _ := errorType(err); typ != "ApplyFailed" || !strings.Contains(err.Error(), "immutable") {
			t.Fatalf("immutable change without Force: %v", err)
		}
		moved.SetAnnotations(map[string]string{manifest.SyncOptionsAnnotation: "Force=true"})
		out, err := h.applyStep(tg, []*unstructured.Unstructured{moved}, "f3")
		if err != nil || out.Resources[0].Action != ActionCreated || !strings.Contains(out.Resources[0].Message, "recreated") {
			t.Fatalf("Force=true: %+v, %v", out.Resources, err)
		}
		if h.get(gvrDeployments, "guestbook-ui").GetUID() == uid {
			t.Fatal("deployment not recreated")
		}
	})
	t.Run("ApplyOutOfSyncOnly skips synced resources", func(t *testing.T) {
		h := newHarness(t)
		tg := h.target("oos", "ApplyOutOfSyncOnly=true")
		objs := h.fixture("guestbook.yaml")
		if _, err := h.applyStep(tg, objs, "o1"); err != nil {
			t.Fatal(err)
		}
		changed := h.fixture("guestbook.yaml")
		changed[0].Object["data"] = map[string]any{"greeting": "changed"}
		out, err := h.applyStep(tg, changed, "o2")
		if err != nil {
			t.Fatal(err)
		}
		got := actions(out.Resources)
		want := "ConfigMap/guestbook-config=configured Service/guestbook-ui=unchanged Deployment/guestbook-ui=unchanged"
		if strings.Join(got, " ") != want || !strings.Contains(out.Resources[1].Message, "ApplyOutOfSyncOnly") {
			t.Fatalf("got %v %+v", got, out.Resources[1])
		}
	})
	t.Run("dry run changes nothing", func(t *testing.T) {
		h := newHarness(t)
		tg := h.target("dry")
		r := h.sync(tg, h.put(h.fixture("hooks.yaml")...), SyncOperation{SyncID: "dry", DryRun: true})
		if len(r.log) != 3 || !strings.Contains(r.log[1].Message, "dry run") {
			t.Fatalf("dry run log = %+v", r.log)
		}
		if len(h.list(gvrJobs))+len(h.list(gvrDeployments)) != 0 {
			t.Fatal("dry run created objects")
		}
	})
	gone := func(h *harness, name string) bool {
		cm := h.get(gvrConfigMaps, name)
		return cm == nil || cm.GetDeletionTimestamp() != nil
	}
	t.Run("Prune=confirm waits for approval", func(t *testing.T) {
		h := newHarness(t)
		tg := h.target("confirm")
		h.sync(tg, h.put(configMap(h, "Prune=confirm", nil)), SyncOperation{SyncID: "c1"})
		empty := h.put()
		r := h.sync(tg, empty, SyncOperation{SyncID: "c2", Prune: true})
		key := appspec.ResourceKey{Kind: "ConfigMap", Namespace: h.ns, Name: "guestbook-config"}
		if len(r.pruned) != 1 || r.pruned[0].Action != ActionPruneSkipped || !strings.Contains(r.pruned[0].Message, "awaiting approval") {
			t.Fatalf("prune = %+v", r.pruned)
		}
		if diff := cmp.Diff([]appspec.ResourceKey{key}, r.awaiting); diff != "" || gone(h, "guestbook-config") {
			t.Fatalf("awaiting approval (-want +got):\n%s", diff)
		}
		op := SyncOperation{SyncID: "c2", Prune: true, Resources: r.awaiting}
		out := must[PruneOutput](h, PruneName, PruneInput{Target: tg, Manifests: empty, Operation: op, Approved: true})
		if len(out.Resources) != 1 || out.Resources[0].Action != ActionPruned || len(out.AwaitingApproval) != 0 || !gone(h, "guestbook-config") {
			t.Fatalf("approved prune = %+v", out)
		}
	})
	t.Run("Delete=confirm waits for approval, Delete=false keeps", func(t *testing.T) {
		h := newHarness(t)
		tg := h.target("delconfirm")
		objs := h.fixture("guestbook.yaml")
		objs[0].SetAnnotations(map[string]string{manifest.SyncOptionsAnnotation: "Delete=confirm"})
		objs[1].SetAnnotations(map[string]string{manifest.SyncOptionsAnnotation: "Delete=false"})
		h.sync(tg, h.put(objs[:2]...), SyncOperation{SyncID: "d1"})
		out := must[DeleteAppOutput](h, DeleteAppName, DeleteAppInput{Target: tg, Cascade: CascadeBackground})
		if got := actions(out.Resources); strings.Join(got, " ") != "Service/guestbook-ui=delete-skipped ConfigMap/guestbook-config=delete-skipped" ||
			len(out.AwaitingApproval) != 1 || out.AwaitingApproval[0].Kind != "ConfigMap" || gone(h, "guestbook-config") {
			t.Fatalf("delete = %v %+v", got, out)
		}
		out = must[DeleteAppOutput](h, DeleteAppName, DeleteAppInput{Target: tg, Cascade: CascadeBackground, Approved: true})
		if got := actions(out.Resources); strings.Join(got, " ") != "Service/guestbook-ui=delete-skipped ConfigMap/guestbook-config=deleted" || len(out.AwaitingApproval) != 0 {
			t.Fatalf("approved delete = %v %+v", got, out)
		}
		if !gone(h, "guestbook-config") || h.get(gvrServices, "guestbook-ui") == nil {
			t.Fatal("approved delete: the ConfigMap must be gone and the Service kept")
		}
	})
	t.Run("PruneLast on a resource prunes it after the others", func(t *testing.T) {
		h := newHarness(t)
		tg := h.target("prunelast")
		objs := h.fixture("guestbook.yaml")
		objs[0].SetAnnotations(map[string]string{manifest.SyncOptionsAnnotation: "PruneLast=true"})
		h.sync(tg, h.put(objs...), SyncOperation{SyncID: "p1"})
		r := h.sync(tg, h.put(), SyncOperation{SyncID: "p2", Prune: true})
		want := "Deployment/guestbook-ui=pruned Service/guestbook-ui=pruned ConfigMap/guestbook-config=pruned"
		if got := actions(r.pruned); strings.Join(got, " ") != want || r.plan.PruneLastResources != 1 {
			t.Fatalf("prune order = %v (plan %+v), want %s", got, r.plan, want)
		}
	})
	t.Run("PostDelete hook failure is reported", func(t *testing.T) {
		h := newHarness(t)
		tg := h.target("postfail")
		hook := h.fixture("failing-hook.yaml")[0]
		hook.SetAnnotations(map[string]string{manifest.HookAnnotation: "PostDelete"})
		ref := h.put(hook)
		out := must[DeleteAppOutput](h, DeleteAppName, DeleteAppInput{Target: tg, Cascade: CascadeForeground, Manifests: &ref})
		if out.Failed == nil || out.Failed.Name != "broken-migration" || !strings.Contains(strings.ToLower(out.Message), "backoff limit") {
			t.Fatalf("delete = %+v", out)
		}
		if h.get(gvrJobs, "broken-migration") == nil {
			t.Fatal("a failed hook without HookFailed was deleted")
		}
	})
}
