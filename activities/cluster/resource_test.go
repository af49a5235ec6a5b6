package cluster

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/windlass-cd/windlass/internal/appspec"
)

var gvrReplicaSets = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}

// One object read, patched (each patch type) and deleted by key, as the
// API's per-resource endpoints do; a patch the API server refuses comes
// back as its status error.
func TestObjectReadPatchDelete(t *testing.T) {
	h := newHarness(t)
	h.synced("objects", "guestbook.yaml", "sync/default/objects/1")
	ctx := t.Context()
	server := appspec.InClusterServer
	dep := appspec.ResourceKey{Group: "apps", Kind: "Deployment", Namespace: h.ns, Name: "guestbook-ui"}
	cm := appspec.ResourceKey{Kind: "ConfigMap", Namespace: h.ns, Name: "guestbook-config"}

	obj, err := h.a.LiveObject(ctx, server, dep)
	if err != nil {
		t.Fatal(err)
	}
	if obj["kind"] != "Deployment" || obj["metadata"].(map[string]any)["managedFields"] != nil {
		t.Errorf("live object: kind %v, managed fields shown: %v", obj["kind"], obj["metadata"])
	}
	if _, err := h.a.LiveObject(ctx, server, appspec.ResourceKey{Kind: "ConfigMap", Namespace: h.ns, Name: "nope"}); !apierrors.IsNotFound(err) {
		t.Errorf("missing object: %v, want not found", err)
	}

	for _, p := range []struct {
		pt    types.PatchType
		patch string
		want  string
	}{
		{types.MergePatchType, `{"data":{"greeting":"merge"}}`, "merge"},
		{types.StrategicMergePatchType, `{"data":{"greeting":"strategic"}}`, "strategic"},
		{types.JSONPatchType, `[{"op":"replace","path":"/data/greeting","value":"json"}]`, "json"},
	} {
		got, err := h.a.PatchObject(ctx, server, cm, p.pt, []byte(p.patch))
		if err != nil {
			t.Fatalf("%s: %v", p.pt, err)
		}
		if v, _, _ := unstructured.NestedString(got, "data", "greeting"); v != p.want {
			t.Errorf("%s: greeting %q, want %q", p.pt, v, p.want)
		}
	}
	managers := map[string]bool{}
	for _, m := range h.get(gvrConfigMaps, "guestbook-config").GetManagedFields() {
		managers[m.Manager] = true
	}
	if !managers[PatchFieldManager] {
		t.Errorf("managers %v, want %s", managers, PatchFieldManager)
	}
	_, err = h.a.PatchObject(ctx, server, dep, types.MergePatchType, []byte(`{"spec":{"replicas":-1}}`))
	if !apierrors.IsInvalid(err) {
		t.Errorf("invalid patch: %v, want the API server's Invalid", err)
	}

	// Orphan leaves the ReplicaSet; a forced delete of a pod is immediate.
	var rsName string
	h.eventually("the Deployment's ReplicaSet", func() bool {
		for _, rs := range h.list(gvrReplicaSets) {
			rsName = rs.GetName()
		}
		return rsName != ""
	})
	if err := h.a.DeleteObject(ctx, server, dep, DeleteOptions{Orphan: true}); err != nil {
		t.Fatal(err)
	}
	h.eventually("the Deployment gone", func() bool { return h.get(gvrDeployments, "guestbook-ui") == nil })
	if h.get(gvrReplicaSets, rsName) == nil {
		t.Error("orphan deleted the ReplicaSet")
	}
	var pod string
	h.eventually("a pod", func() bool {
		for _, p := range h.list(schemaPods) {
			pod = p.GetName()
		}
		return pod != ""
	})
	if err := h.a.DeleteObject(ctx, server, appspec.ResourceKey{Kind: "Pod", Namespace: h.ns, Name: pod}, DeleteOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	h.eventually("the pod gone", func() bool { return h.get(schemaPods, pod) == nil })
}
