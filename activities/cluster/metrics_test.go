package cluster

import (
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// applyCounter counts the apply requests the activities report.
type applyCounter struct {
	mu       sync.Mutex
	wet, dry int
}

func (c *applyCounter) ApplyRequest(dryRun bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if dryRun {
		c.dry++
	} else {
		c.wet++
	}
}

func TestApplyRequestsCounted(t *testing.T) {
	c := &applyCounter{}
	h := newHarness(t, WithMetrics(c))
	tg := h.target("guestbook")
	objs := h.fixture("guestbook.yaml")
	h.sync(tg, h.put(objs...), SyncOperation{})
	if c.wet != 3 {
		t.Fatalf("applies after syncing 3 objects = %d, want 3", c.wet)
	}
	// A changed object is compared with a server-side dry run.
	changed := objs[0].DeepCopy()
	changed.Object["data"] = map[string]any{"greeting": "bonjour"}
	before := c.dry
	h.compare(tg, h.put(changed, objs[1], objs[2]), false)
	if c.dry <= before {
		t.Fatalf("dry-run applies = %d after a compare, want more than %d", c.dry, before)
	}
	if c.wet != 3 {
		t.Fatalf("a compare made %d wet applies", c.wet-3)
	}
}

// A re-sync of objects in sync sends no apply: the dry-run cache knows the
// apply would change nothing. An object changed meanwhile (a new
// resourceVersion) is applied, and restored.
func TestNoOpApplySkipped(t *testing.T) {
	c := &applyCounter{}
	h := newHarness(t, WithMetrics(c))
	tg := h.target("noop")
	cm := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": h.ns}, "data": map[string]any{"k": name}}}
	}
	ref := h.put(cm("one"), cm("two"))
	h.sync(tg, ref, SyncOperation{})
	if c.wet != 2 {
		t.Fatalf("applies after syncing 2 objects = %d, want 2", c.wet)
	}
	actions := func(r syncResult) map[string]Action {
		m := map[string]Action{}
		for _, res := range r.log {
			m[res.Name] = res.Action
		}
		return m
	}
	r := h.sync(tg, ref, SyncOperation{SyncID: "again"})
	if c.wet != 2 {
		t.Fatalf("a re-sync in sync sent %d applies, want none", c.wet-2)
	}
	if got := actions(r); got["one"] != ActionUnchanged || got["two"] != ActionUnchanged {
		t.Fatalf("re-sync actions = %v, want both unchanged", got)
	}
	live := h.get(gvrConfigMaps, "one")
	live.Object["data"] = map[string]any{"k": "drifted"}
	if _, err := h.dyn.Resource(gvrConfigMaps).Namespace(h.ns).Update(t.Context(), live, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	r = h.sync(tg, ref, SyncOperation{SyncID: "heal"})
	if c.wet != 3 {
		t.Fatalf("applies after one object drifted = %d, want 3", c.wet)
	}
	if got := actions(r); got["one"] != ActionConfigured || got["two"] != ActionUnchanged {
		t.Fatalf("heal actions = %v, want one configured, two unchanged", got)
	}
	if v := h.get(gvrConfigMaps, "one").Object["data"].(map[string]any)["k"]; v != "one" {
		t.Fatalf("drifted data = %v after the sync, want restored", v)
	}
}
