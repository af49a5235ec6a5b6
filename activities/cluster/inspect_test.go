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
