package cluster

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/manifest"
)

// argoTarget is the test's target for app, taking over the objects Argo CD
// tracked for it with method.
func (h *harness) argoTarget(app string, method manifest.ArgoTrackingMethod, syncOptions ...string) Target {
	t := h.target(app, syncOptions...)
	t.ArgoCD = &manifest.ArgoTracking{Method: method, LabelKey: manifest.ArgoDefaultInstanceLabel, App: app}
	return t
}

func argoConfigMap(name string, data map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": data}}
	u.SetName(name)
	return u
}

// argoTrack stamps the tracking Argo CD writes with method for its app
// argoApp on u (in namespace ns).
func argoTrack(u *unstructured.Unstructured, method manifest.ArgoTrackingMethod, argoApp, ns string) {
	gk := u.GroupVersionKind().GroupKind()
	if method != manifest.ArgoTrackLabel {
		ann := u.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[manifest.ArgoTrackingIDAnnotation] = argoApp + ":" + gk.Group + "/" + gk.Kind + ":" + ns + "/" + u.GetName()
		u.SetAnnotations(ann)
	}
	if method != manifest.ArgoTrackAnnotation {
		l := u.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		l[manifest.ArgoDefaultInstanceLabel] = argoApp
		u.SetLabels(l)
	}
}

// clientSideApply creates u in the test namespace as a client-side apply
// by manager leaves it: the last-applied-configuration annotation holds
// the object as sent, and the managed fields an Update by manager.
func (h *harness) clientSideApply(gvr schema.GroupVersionResource, u *unstructured.Unstructured, manager string) *unstructured.Unstructured {
	h.t.Helper()
	u = u.DeepCopy()
	u.SetNamespace(h.ns)
	body, err := u.MarshalJSON()
	if err != nil {
		h.t.Fatal(err)
	}
	ann := u.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[lastAppliedAnnotation] = string(body)
	u.SetAnnotations(ann)
	out, err := h.dyn.Resource(gvr).Namespace(h.ns).Create(h.t.Context(), u, metav1.CreateOptions{FieldManager: manager})
	if err != nil {
		h.t.Fatal(err)
	}
	return out
}

func managers(u *unstructured.Unstructured) []string {
	var out []string
	for _, e := range u.GetManagedFields() {
		out = append(out, e.Manager+"/"+string(e.Operation))
	}
	slices.Sort(out)
	return out
}

func requiresPruning(c CompareOutput) []string {
	var out []string
	for _, rs := range c.Resources {
		if rs.RequiresPruning {
			out = append(out, rs.Kind+"/"+rs.Name)
		}
	}
	return out
}

// TestArgoTakeover makes the cluster look as Argo CD leaves it, with each
// tracking method, and syncs the same app with Windlass: nothing is
// recreated, a field Git dropped goes, a leftover Argo CD tracked for the
// app is pruned, and what Argo CD tracked for another app, or what the
// method does not read, stays.
func TestArgoTakeover(t *testing.T) {
	for _, method := range []manifest.ArgoTrackingMethod{manifest.ArgoTrackAnnotation, manifest.ArgoTrackLabel, manifest.ArgoTrackAnnotationAndLabel} {
		t.Run(string(method), func(t *testing.T) {
			h := newHarness(t)
			// One app per method: Windlass's own tracking is found in
			// every namespace.
			app := "guestbook-" + strings.ReplaceAll(string(method), "+", "-")
			tg := h.argoTarget(app, method)
			cfg := argoConfigMap("cfg", map[string]any{"a": "1", "dropped": "2"})
			cfg.SetLabels(map[string]string{"dropped-label": "x"})
			argoTrack(cfg, method, app, h.ns)
			old := argoConfigMap("old", map[string]any{"a": "1"})
			argoTrack(old, method, app, h.ns)
			theirs := argoConfigMap("theirs", map[string]any{"a": "1"})
			argoTrack(theirs, method, "other", h.ns)
			// Tracked the other way: not the app's with this method.
			otherWay := argoConfigMap("other-way", map[string]any{"a": "1"})
			if method == manifest.ArgoTrackLabel {
				argoTrack(otherWay, manifest.ArgoTrackAnnotation, app, h.ns)
			} else {
				otherWay.SetLabels(map[string]string{manifest.ArgoDefaultInstanceLabel: app})
			}
			// An annotation copied from another object proves nothing.
			copied := argoConfigMap("copied", nil)
			copied.SetAnnotations(map[string]string{manifest.ArgoTrackingIDAnnotation: app + ":/ConfigMap:" + h.ns + "/cfg"})
			// Argo CD tracks the namespace it manages (CreateNamespace=true
			// with managedNamespaceMetadata), but never prunes it.
			ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace"}}
			ns.SetName(h.ns)
			argoTrack(ns, method, app, "")
			nsPatch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": ns.GetLabels(), "annotations": ns.GetAnnotations()}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := h.dyn.Resource(namespacesGVR).Patch(t.Context(), h.ns, types.MergePatchType, nsPatch, metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			uids := map[string]types.UID{}
			for _, u := range []*unstructured.Unstructured{cfg, old, theirs, otherWay, copied} {
				uids[u.GetName()] = h.clientSideApply(gvrConfigMaps, u, "argocd-controller").GetUID()
			}
			svc := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Service",
				"spec": map[string]any{"ports": []any{map[string]any{"name": "http", "port": int64(80)}}, "sessionAffinity": "ClientIP"}}}
			svc.SetName("web")
			argoTrack(svc, method, app, h.ns)
			uids["web"] = h.clientSideApply(gvrServices, svc, "kubectl-client-side-apply").GetUID()

			// Git now has cfg without the dropped key and label, and web
			// without sessionAffinity.
			wantSvc := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Service",
				"spec": map[string]any{"ports": []any{map[string]any{"name": "http", "port": int64(80)}}}}}
			wantSvc.SetName("web")
			ref := h.put(argoConfigMap("cfg", map[string]any{"a": "1"}), wantSvc)

			c := h.compare(tg, ref, false)
			if d := cmp.Diff([]string{"ConfigMap/old"}, requiresPruning(c)); d != "" || c.Sync != appspec.SyncOutOfSync {
				t.Fatalf("before the sync, requires pruning (-want +got):\n%s (sync %s) %+v", d, c.Sync, c.Resources)
			}

			tree := must[ResourceTreeOutput](h, ResourceTreeName, ResourceTreeInput{Target: tg, Manifests: &ref})
			var nodes []string
			for _, n := range tree.Nodes {
				nodes = append(nodes, n.Kind+"/"+n.Name)
			}
			slices.Sort(nodes)
			if d := cmp.Diff([]string{"ConfigMap/cfg", "ConfigMap/old", "Service/web"}, nodes); d != "" {
				t.Fatalf("tree before the sync (-want +got):\n%s", d)
			}

			r := h.sync(tg, ref, SyncOperation{SyncID: "take-over", Prune: true})
			if d := cmp.Diff([]string{"ConfigMap/old=pruned"}, actions(r.pruned)); d != "" {
				t.Fatalf("prune (-want +got):\n%s", d)
			}
			for _, res := range r.log {
				if !strings.Contains(res.Message, "fields of client-side apply") {
					t.Errorf("%s: message %q does not say the fields moved", res.Name, res.Message)
				}
			}
			h.eventually("old pruned", func() bool { return h.get(gvrConfigMaps, "old") == nil })
			for _, name := range []string{"cfg", "theirs", "other-way", "copied"} {
				if u := h.get(gvrConfigMaps, name); u == nil || u.GetUID() != uids[name] {
					t.Fatalf("%s recreated or deleted: %v", name, u)
				}
			}
			live := h.get(gvrConfigMaps, "cfg")
			if d := cmp.Diff(map[string]any{"a": "1"}, live.Object["data"]); d != "" {
				t.Errorf("cfg data (-want +got):\n%s", d)
			}
			if _, ok := live.GetLabels()["dropped-label"]; ok {
				t.Errorf("cfg keeps the label Git dropped: %v", live.GetLabels())
			}
			if _, ok := live.GetAnnotations()[lastAppliedAnnotation]; ok {
				t.Errorf("cfg keeps %s", lastAppliedAnnotation)
			}
			// Argo CD's apply wrote its tracking: it went with its fields.
			if _, ok := live.GetAnnotations()[manifest.ArgoTrackingIDAnnotation]; ok {
				t.Errorf("cfg keeps Argo CD's tracking annotation: %v", live.GetAnnotations())
			}
			if _, ok := live.GetLabels()[manifest.ArgoDefaultInstanceLabel]; ok {
				t.Errorf("cfg keeps Argo CD's instance label: %v", live.GetLabels())
			}
			if !manifest.OwnedBy("default", app, live) {
				t.Errorf("cfg without Windlass's tracking: %v", live.GetAnnotations())
			}
			if d := cmp.Diff([]string{"windlass/Apply"}, managers(live)); d != "" {
				t.Errorf("cfg managers (-want +got):\n%s", d)
			}
			web := h.get(gvrServices, "web")
			if web.GetUID() != uids["web"] {
				t.Fatal("web recreated")
			}
			if v, ok, _ := unstructured.NestedString(web.Object, "spec", "sessionAffinity"); ok && v != "None" {
				t.Errorf("web sessionAffinity = %q, want the default again", v)
			}

			if c := h.compare(tg, ref, false); c.Sync != appspec.SyncSynced || len(c.Resources) != 2 {
				t.Fatalf("after the sync: %s %+v", c.Sync, c.Resources)
			}
		})
	}
}

// TestArgoTrackedForAnotherApp: an object in Git that Argo CD tracked for
// another app is a shared resource: with FailOnSharedResource=true the
// sync fails, else it is applied with a note; it is never pruned.
func TestArgoTrackedForAnotherApp(t *testing.T) {
	h := newHarness(t)
	cm := argoConfigMap("shared", map[string]any{"a": "1"})
	argoTrack(cm, manifest.ArgoTrackAnnotation, "apps_other", h.ns)
	uid := h.clientSideApply(gvrConfigMaps, cm, "argocd-controller").GetUID()
	ref := h.put(argoConfigMap("shared", map[string]any{"a": "2"}))

	strict := h.argoTarget("mine", manifest.ArgoTrackAnnotation, "FailOnSharedResource=true")
	_, err := run[WaveOutput](h, ApplyWaveName, WaveInput{Target: strict, Manifests: ref, Operation: SyncOperation{SyncID: "a"}, Step: Step{Phase: PhaseSync}})
	if typ, nonRetryable := errorType(err); typ != "SharedResource" || !nonRetryable ||
		!strings.Contains(err.Error(), "ConfigMap "+h.ns+"/shared is tracked by Argo CD app apps_other (FailOnSharedResource=true)") {
		t.Fatalf("error = %v (type %q)", err, typ)
	}
	c := h.compare(strict, ref, false)
	if len(c.Resources) != 1 || !strings.Contains(c.Resources[0].Message, "shared resource: also tracked by Argo CD app apps_other") {
		t.Fatalf("compare = %+v", c.Resources)
	}
	// Not in Git any more: not the app's to prune.
	if r := h.sync(strict, h.put(), SyncOperation{SyncID: "b", Prune: true}); len(r.pruned) != 0 {
		t.Fatalf("pruned another app's object: %+v", r.pruned)
	}

	lax := h.argoTarget("mine", manifest.ArgoTrackAnnotation)
	out := must[WaveOutput](h, ApplyWaveName, WaveInput{Target: lax, Manifests: ref, Operation: SyncOperation{SyncID: "c"}, Step: Step{Phase: PhaseSync}})
	if !strings.Contains(out.Resources[0].Message, "shared resource: was tracked by Argo CD app apps_other") {
		t.Fatalf("result = %+v", out.Resources[0])
	}
	if live := h.get(gvrConfigMaps, "shared"); live.GetUID() != uid || !manifest.OwnedBy("default", "mine", live) {
		t.Fatalf("shared after the apply: %v", live)
	}
}

// TestDeleteArgoTrackedApp: deleting a migrated app before its first sync
// cascades to what Argo CD tracked for it, and only to that.
func TestDeleteArgoTrackedApp(t *testing.T) {
	h := newHarness(t)
	tg := h.argoTarget("doomed-argo", manifest.ArgoTrackLabel)
	mine := argoConfigMap("mine", map[string]any{"a": "1"})
	argoTrack(mine, manifest.ArgoTrackLabel, "doomed-argo", h.ns)
	theirs := argoConfigMap("theirs", map[string]any{"a": "1"})
	argoTrack(theirs, manifest.ArgoTrackLabel, "other", h.ns)
	h.clientSideApply(gvrConfigMaps, mine, "argocd-controller")
	h.clientSideApply(gvrConfigMaps, theirs, "argocd-controller")
	ref := h.put(argoConfigMap("mine", map[string]any{"a": "1"}))
	out := must[DeleteAppOutput](h, DeleteAppName, DeleteAppInput{Target: tg, Cascade: CascadeForeground, Manifests: &ref})
	if d := cmp.Diff([]string{"ConfigMap/mine=deleted"}, actions(out.Resources)); d != "" {
		t.Fatalf("delete (-want +got):\n%s", d)
	}
	if h.get(gvrConfigMaps, "mine") != nil { // foreground: gone when DeleteApp returns
		t.Fatal("mine left after a foreground delete")
	}
	if h.get(gvrConfigMaps, "theirs") == nil {
		t.Fatal("another app's object deleted")
	}
}

// TestTakeOverFieldsWithoutArgoTracking: the field takeover is not tied to
// Argo CD's tracking: an object kubectl applied client-side (here with its
// own --field-manager) is taken over by any app's sync, while what kubectl
// edit changed stays.
func TestTakeOverFieldsWithoutArgoTracking(t *testing.T) {
	h := newHarness(t)
	tg := h.target("plain")
	h.clientSideApply(gvrConfigMaps, argoConfigMap("cfg", map[string]any{"a": "1", "dropped": "2"}), "deploy-script")
	patch := []byte(`{"data":{"edited":"3"}}`)
	if _, err := h.dyn.Resource(gvrConfigMaps).Namespace(h.ns).Patch(t.Context(), "cfg", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	r := h.sync(tg, h.put(argoConfigMap("cfg", map[string]any{"a": "1"})), SyncOperation{SyncID: "s"})
	if len(r.log) != 1 || !strings.Contains(r.log[0].Message, "fields of client-side apply (deploy-script) moved to windlass") {
		t.Fatalf("log = %+v", r.log)
	}
	live := h.get(gvrConfigMaps, "cfg")
	if d := cmp.Diff(map[string]any{"a": "1", "edited": "3"}, live.Object["data"]); d != "" {
		t.Errorf("data (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"kubectl-edit/Update", "windlass/Apply"}, managers(live)); d != "" {
		t.Errorf("managers (-want +got):\n%s", d)
	}
}

// TestTakeOverArgoServerSideApply: the fields Argo CD applied server-side
// (ServerSideApply=true) are taken over too.
func TestTakeOverArgoServerSideApply(t *testing.T) {
	h := newHarness(t)
	tg := h.target("ssa")
	cm := argoConfigMap("cfg", map[string]any{"a": "1", "dropped": "2"})
	body, err := cm.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	force := true
	if _, err := h.dyn.Resource(gvrConfigMaps).Namespace(h.ns).Patch(t.Context(), "cfg", types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "argocd-controller", Force: &force}); err != nil {
		t.Fatal(err)
	}
	r := h.sync(tg, h.put(argoConfigMap("cfg", map[string]any{"a": "1"})), SyncOperation{SyncID: "s"})
	if len(r.log) != 1 || !strings.Contains(r.log[0].Message, "(argocd-controller) moved to windlass") {
		t.Fatalf("log = %+v", r.log)
	}
	live := h.get(gvrConfigMaps, "cfg")
	if d := cmp.Diff(map[string]any{"a": "1"}, live.Object["data"]); d != "" {
		t.Errorf("data (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"windlass/Apply"}, managers(live)); d != "" {
		t.Errorf("managers (-want +got):\n%s", d)
	}
}

// TestCompareAfterClientSideApply: a client-side apply onto an object
// Windlass synced makes it OutOfSync even when it only added fields (the
// dry run keeps fields of other managers): the next sync drops them.
func TestCompareAfterClientSideApply(t *testing.T) {
	h := newHarness(t)
	tg := h.target("csa")
	ref := h.put(argoConfigMap("cfg", map[string]any{"a": "1"}))
	h.sync(tg, ref, SyncOperation{SyncID: "s1"})
	if c := h.compare(tg, ref, false); c.Sync != appspec.SyncSynced {
		t.Fatalf("after the sync: %s %+v", c.Sync, c.Resources)
	}
	patch := []byte(`{"metadata":{"annotations":{"` + lastAppliedAnnotation + `":"{}"}},"data":{"added":"2"}}`)
	if _, err := h.dyn.Resource(gvrConfigMaps).Namespace(h.ns).Patch(t.Context(), "cfg", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-client-side-apply"}); err != nil {
		t.Fatal(err)
	}
	c := h.compare(tg, ref, false)
	if c.Sync != appspec.SyncOutOfSync || !strings.Contains(c.Resources[0].Message, "fields of client-side apply (kubectl-client-side-apply) move to windlass at the next sync") {
		t.Fatalf("after kubectl apply: %s %+v", c.Sync, c.Resources)
	}
	h.sync(tg, ref, SyncOperation{SyncID: "s2"})
	if d := cmp.Diff(map[string]any{"a": "1"}, h.get(gvrConfigMaps, "cfg").Object["data"]); d != "" {
		t.Errorf("data (-want +got):\n%s", d)
	}
	if c := h.compare(tg, ref, false); c.Sync != appspec.SyncSynced {
		t.Fatalf("after the second sync: %s %+v", c.Sync, c.Resources)
	}
}

func TestCSAManagers(t *testing.T) {
	fields := func(v any) *metav1.FieldsV1 {
		b, _ := json.Marshal(v)
		return metav1.NewFieldsV1(string(b))
	}
	lastApplied := fields(map[string]any{"f:metadata": map[string]any{"f:annotations": map[string]any{"f:" + lastAppliedAnnotation: map[string]any{}}}})
	data := fields(map[string]any{"f:data": map[string]any{"f:a": map[string]any{}}})
	entry := func(manager string, op metav1.ManagedFieldsOperationType, f *metav1.FieldsV1) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: f}
	}
	update, apply := metav1.ManagedFieldsOperationUpdate, metav1.ManagedFieldsOperationApply
	tests := []struct {
		name      string
		annotated bool
		entries   []metav1.ManagedFieldsEntry
		want      []string
	}{
		{name: "Windlass alone", entries: []metav1.ManagedFieldsEntry{entry("windlass", apply, data)}},
		{name: "kubectl and Argo CD client-side", entries: []metav1.ManagedFieldsEntry{
			entry("argocd-controller", update, data), entry("kubectl-client-side-apply", update, data), entry("windlass", apply, data)},
			want: []string{"argocd-controller", "kubectl-client-side-apply"}},
		{name: "Argo CD server-side apply", entries: []metav1.ManagedFieldsEntry{entry("argocd-controller", apply, data)}, want: []string{"argocd-controller"}},
		{name: "another server-side apply", entries: []metav1.ManagedFieldsEntry{entry("flux", apply, data)}},
		{name: "kubectl edit and controllers stay", annotated: true, entries: []metav1.ManagedFieldsEntry{
			entry("kubectl-edit", update, data), entry("kube-controller-manager", update, data)}},
		{name: "the writer of last-applied", annotated: true, entries: []metav1.ManagedFieldsEntry{
			entry("deploy-script", update, lastApplied), entry("kubectl-edit", update, data)}, want: []string{"deploy-script"}},
		{name: "last-applied owned but not on the object", entries: []metav1.ManagedFieldsEntry{entry("deploy-script", update, lastApplied)}},
		{name: "status subresource", entries: []metav1.ManagedFieldsEntry{{Manager: "argocd-controller", Operation: update, Subresource: "status", FieldsV1: data}}},
	}
	for _, tt := range tests {
		u := argoConfigMap("x", nil)
		if tt.annotated {
			u.SetAnnotations(map[string]string{lastAppliedAnnotation: "{}"})
		}
		u.SetManagedFields(tt.entries)
		if d := cmp.Diff(tt.want, csaManagers(u)); d != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, d)
		}
	}
}

// BenchmarkCompareArgoTracking measures a reconcile-loop Compare of a
// synced 500-object app without Argo CD tracking (memoised, as every
// ordinary app's) and with each method (which lists every kind).
func BenchmarkCompareArgoTracking(b *testing.B) {
	h := newHarness(b)
	plain := h.target("bench-argo")
	ref := h.put(app500(0)...)
	if _, err := h.a.ApplyWave(b.Context(), WaveInput{Target: plain, Manifests: ref, Operation: SyncOperation{SyncID: "create"}, Step: Step{Phase: PhaseSync}}); err != nil {
		b.Fatal(err)
	}
	for _, method := range []manifest.ArgoTrackingMethod{"", manifest.ArgoTrackLabel, manifest.ArgoTrackAnnotation} {
		tg := plain
		if method != "" {
			tg.ArgoCD = &manifest.ArgoTracking{Method: method, LabelKey: manifest.ArgoDefaultInstanceLabel, App: "bench-argo"}
		}
		b.Run("method="+string(method), func(b *testing.B) {
			for b.Loop() {
				c, err := h.a.Compare(b.Context(), CompareInput{Target: tg, Manifests: ref})
				if err != nil || c.Sync != appspec.SyncSynced {
					b.Fatalf("compare: %s, %v", c.Sync, err)
				}
			}
		})
	}
}

// BenchmarkCSAManagers is the field-takeover check on an object only
// Windlass applied, which every apply of an object that exists pays.
func BenchmarkCSAManagers(b *testing.B) {
	u := argoConfigMap("x", nil)
	u.SetManagedFields([]metav1.ManagedFieldsEntry{
		{Manager: "windlass", Operation: metav1.ManagedFieldsOperationApply},
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status"},
	})
	for b.Loop() {
		if csaManagers(u) != nil {
			b.Fatal("managers found")
		}
	}
}

func TestTargetForArgoTracking(t *testing.T) {
	spec := appspec.Application{Name: "guestbook", Project: "default"}
	if got := TargetFor(spec).ArgoCD; got != nil {
		t.Fatalf("ArgoCD = %+v without the annotation", got)
	}
	spec.Annotations = map[string]string{manifest.AppAnnotationArgoTracking: "annotation+label", manifest.AppAnnotationArgoApp: "apps_guestbook"}
	want := &manifest.ArgoTracking{Method: manifest.ArgoTrackAnnotationAndLabel, LabelKey: manifest.ArgoDefaultInstanceLabel, App: "apps_guestbook"}
	if d := cmp.Diff(want, TargetFor(spec).ArgoCD); d != "" {
		t.Fatalf("ArgoCD (-want +got):\n%s", d)
	}
}
