package cluster

import (
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/windlass-cd/windlass/internal/appspec"
)

func TestDiffShowsObjectsAndMasksSecrets(t *testing.T) {
	h := newHarness(t)
	secret := yamlObj(t, "{apiVersion: v1, kind: Secret, metadata: {name: db}, stringData: {password: hunter2-desired, user: admin}}")
	extra := yamlObj(t, "{apiVersion: v1, kind: ConfigMap, metadata: {name: old}, data: {k: v}}")
	tg := h.target("inspect")
	h.sync(tg, h.put(secret, extra), SyncOperation{SyncID: "i1"})
	// Someone changes the password in the cluster; the ConfigMap is no
	// longer rendered.
	patch := []byte(`{"stringData":{"password":"hunter2-live"}}`)
	gvrSecrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	if _, err := h.dyn.Resource(gvrSecrets).Namespace(h.ns).Patch(t.Context(), "db", "application/merge-patch+json", patch, metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	ref := h.put(secret)
	out, err := h.a.Diff(t.Context(), CompareInput{Target: tg, Manifests: ref})
	if err != nil {
		t.Fatal(err)
	}
	if out.Sync != appspec.SyncOutOfSync {
		t.Errorf("sync = %s, want OutOfSync", out.Sync)
	}
	byName := map[string]ResourceDiff{}
	for _, r := range out.Resources {
		byName[r.Kind+"/"+r.Name] = r
	}
	db, old := byName["Secret/db"], byName["ConfigMap/old"]
	tests := []struct {
		name string
		ok   bool
	}{
		{"the Secret is OutOfSync with a diff", db.Status == appspec.SyncOutOfSync && strings.Contains(db.Diff, "password: +")},
		{"the Secret's live and desired objects are shown", db.Live["kind"] == "Secret" && db.Desired["kind"] == "Secret"},
		{"the live object has no managed fields", db.Live["metadata"].(map[string]any)["managedFields"] == nil},
		{"the extraneous ConfigMap requires pruning, live only", old.RequiresPruning && old.Live != nil && old.Desired == nil},
	}
	for _, tt := range tests {
		if !tt.ok {
			t.Errorf("%s: %+v", tt.name, byName)
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"hunter2", "aHVudGVyMi"} {
		if strings.Contains(string(b), s) {
			t.Errorf("the diff output shows the secret (%q): %s", s, b)
		}
	}
}

func TestEventsOfTheTree(t *testing.T) {
	h := newHarness(t)
	tg, ref := h.synced("events", "guestbook.yaml", "e1")
	dep := h.get(gvrDeployments, "guestbook-ui")
	event := func(name, uid, reason, last string) {
		t.Helper()
		ev := yamlObj(t, `{apiVersion: v1, kind: Event, metadata: {name: `+name+`}, involvedObject: {kind: Deployment, namespace: `+h.ns+`, name: guestbook-ui, uid: "`+uid+`"},
			reason: `+reason+`, message: "m `+reason+`", type: Normal, count: 2, lastTimestamp: "`+last+`", firstTimestamp: "`+last+`"}`)
		gvr := schema.GroupVersionResource{Version: "v1", Resource: "events"}
		if _, err := h.dyn.Resource(gvr).Namespace(h.ns).Create(t.Context(), ev, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	event("older", string(dep.GetUID()), "Older", "2026-01-01T00:00:00Z")
	event("newer", string(dep.GetUID()), "Newer", "2026-01-02T00:00:00Z")
	event("stranger", "not-an-app-object", "Stranger", "2026-01-03T00:00:00Z")
	evs, err := h.a.Events(t.Context(), ResourceTreeInput{Target: tg, Manifests: &ref})
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, e := range evs {
		if e.Reason == "Older" || e.Reason == "Newer" || e.Reason == "Stranger" {
			reasons = append(reasons, e.Reason)
			if e.Object.Kind != "Deployment" || e.Object.Name != "guestbook-ui" || e.Count != 2 {
				t.Errorf("event %s is of %v (count %d)", e.Reason, e.Object, e.Count)
			}
		}
	}
	if strings.Join(reasons, ",") != "Newer,Older" {
		t.Fatalf("events = %v, want Newer,Older (newest first, none of other objects)", reasons)
	}
}
