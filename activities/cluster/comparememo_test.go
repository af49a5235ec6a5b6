package cluster

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/windlass-cd/windlass/internal/appspec"
)

// The reconcile loop's compare is answered from the memo, without loading
// the manifests, while the app's live objects keep their versions; a
// change by another writer, a diff request, a hard refresh and an object
// the lists do not find (deleted, found by a GET) are compared again. The steps run in
// order on one app.
func TestCompareMemo(t *testing.T) {
	h := newHarness(t)
	var objs []*unstructured.Unstructured
	for _, o := range h.fixture("guestbook.yaml") {
		if o.GetKind() != "Deployment" { // its status changes on its own
			objs = append(objs, o)
		}
	}
	tg, ref := h.target("memo"), h.put(objs...)
	h.sync(tg, ref, SyncOperation{SyncID: "s1"})
	if first := h.compare(tg, ref, false); first.Sync != appspec.SyncSynced {
		t.Fatalf("first compare = %s: %+v", first.Sync, first.Resources)
	}
	cms := h.dyn.Resource(gvrConfigMaps).Namespace(h.ns)
	for _, step := range []struct {
		name     string
		change   func() error
		withDiff bool
		fresh    bool
		want     appspec.SyncStatus
		memo     bool
	}{
		{name: "unchanged", want: appspec.SyncSynced, memo: true},
		{name: "with a diff", withDiff: true, want: appspec.SyncSynced},
		{name: "a hard refresh", fresh: true, want: appspec.SyncSynced},
		{name: "unchanged after it", want: appspec.SyncSynced, memo: true},
		{name: "another writer changed the ConfigMap", want: appspec.SyncOutOfSync, change: func() error {
			_, err := cms.Patch(t.Context(), "guestbook-config", types.MergePatchType, []byte(`{"data":{"greeting":"changed by hand"}}`),
				metav1.PatchOptions{FieldManager: "kubectl-edit"})
			return err
		}},
		{name: "unchanged since", want: appspec.SyncOutOfSync, memo: true},
		{name: "the ConfigMap deleted", want: appspec.SyncOutOfSync, change: func() error {
			return cms.Delete(t.Context(), "guestbook-config", metav1.DeleteOptions{})
		}},
		{name: "still deleted: a missing object is looked up again", want: appspec.SyncOutOfSync},
	} {
		t.Run(step.name, func(t *testing.T) {
			if step.change != nil {
				if err := step.change(); err != nil {
					t.Fatal(err)
				}
			}
			before := h.loader.loaded()
			got := must[CompareOutput](h, CompareName, CompareInput{Target: tg, Manifests: ref, WithDiff: step.withDiff, Fresh: step.fresh})
			if got.Sync != step.want {
				t.Fatalf("sync = %s, want %s: %+v", got.Sync, step.want, got.Resources)
			}
			if memo := h.loader.loaded() == before; memo != step.memo {
				t.Fatalf("answered from the memo = %v, want %v", memo, step.memo)
			}
		})
	}
}
