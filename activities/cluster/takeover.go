package cluster

import (
	"context"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/csaupgrade"
)

// Field ownership after client-side apply. A client-side apply (kubectl
// apply without --server-side, Argo CD without ServerSideApply=true)
// records its fields as an Update by its manager. A server-side apply
// removes only the fields its own manager owned and no longer sends, so
// a field that Git dropped would stay live under such a manager. Before
// applying, Windlass therefore moves these managers' fields to its own
// (csaupgrade): the apply then removes what it no longer sends, the
// last-applied-configuration annotation included, which the client-side
// manager wrote. Fields other writers set (kubectl edit, controllers)
// stay theirs.

// lastAppliedAnnotation is kubectl's record of a client-side apply.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// csaManagerNames are the field managers of client-side apply: kubectl's
// and Argo CD's.
var csaManagerNames = []string{"kubectl-client-side-apply", argoManager}

// argoManager is Argo CD's field manager. An app Argo CD synced with
// ServerSideApply=true holds its fields in an Apply entry of this manager,
// which a migrated app takes over too.
const argoManager = "argocd-controller"

// csaManagers returns the client-side-apply managers of live's fields:
// those of csaManagerNames with an Update entry, and any other Update
// manager that wrote the last-applied-configuration annotation (kubectl
// with --field-manager); and argoManager with an Apply entry. Without such entries, as for every object only
// Windlass applied, it costs a pass over the managed fields.
func csaManagers(live *unstructured.Unstructured) []string {
	// The raw entries, not GetManagedFields, which converts every entry.
	raw, _, _ := unstructured.NestedFieldNoCopy(live.Object, "metadata", "managedFields")
	entries, _ := raw.([]any)
	var out []string
	_, annotated, _ := unstructured.NestedString(live.Object, "metadata", "annotations", lastAppliedAnnotation)
	for _, entry := range entries {
		e, _ := entry.(map[string]any)
		manager, _ := e["manager"].(string)
		sub, _ := e["subresource"].(string)
		if sub != "" || manager == FieldManager || slices.Contains(out, manager) {
			continue
		}
		if e["operation"] == string(metav1.ManagedFieldsOperationApply) && manager == argoManager {
			out = append(out, manager)
			continue
		}
		if e["operation"] != string(metav1.ManagedFieldsOperationUpdate) {
			continue
		}
		if slices.Contains(csaManagerNames, manager) || (annotated && ownsLastApplied(e)) {
			out = append(out, manager)
		}
	}
	slices.Sort(out)
	return out
}

// takeOverNote says, for a compare, that the next sync moves fields of
// client-side apply to windlass ("" when it does not). The dry run cannot
// show what that removes, yet the object is not in sync: Argo CD's
// three-way diff would drop those fields too.
func takeOverNote(o *object, live *unstructured.Unstructured) string {
	if o.opts.True(optReplace) {
		return ""
	}
	if managers := csaManagers(live); len(managers) > 0 {
		return "fields of client-side apply (" + strings.Join(managers, ", ") + ") move to " + FieldManager + " at the next sync"
	}
	return ""
}

// ownsLastApplied reports whether a managed-fields entry holds the
// last-applied-configuration annotation.
func ownsLastApplied(e map[string]any) bool {
	_, ok, _ := unstructured.NestedFieldNoCopy(e, "fieldsV1", "f:metadata", "f:annotations", "f:"+lastAppliedAnnotation)
	return ok
}

// takeOverFields moves the fields of the client-side-apply managers of
// live (and Argo CD's server-side apply) to Windlass's manager, with a JSON patch of the managed fields that
// fails with a conflict if live changed meanwhile. It returns the object
// as patched, or live when there was nothing to move.
func takeOverFields(ctx context.Context, rc dynamic.ResourceInterface, live *unstructured.Unstructured, managers []string) (*unstructured.Unstructured, error) {
	// csaupgrade moves Update entries: Argo CD's Apply entries are handed
	// to it as such, which yields the same union of fields.
	entries := live.GetManagedFields()
	for i, e := range entries {
		if e.Manager == argoManager && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == "" {
			entries[i].Operation = metav1.ManagedFieldsOperationUpdate
		}
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{}}}
	obj.SetResourceVersion(live.GetResourceVersion())
	obj.SetManagedFields(entries)
	patch, err := csaupgrade.UpgradeManagedFieldsPatch(obj, sets.New(managers...), FieldManager)
	if err != nil || patch == nil {
		return live, err
	}
	return rc.Patch(ctx, live.GetName(), types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
}
