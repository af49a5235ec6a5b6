package cluster

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/internal/appspec"
)

// fakeDecls records what the activities ask of Declarations. A child
// becomes Healthy after readyAfter reads of its state.
type fakeDecls struct {
	mu         sync.Mutex
	events     []string
	reads      map[string]int
	readyAfter int
	degraded   string
	managed    []string // names of managed children
	checkErr   error
	listed     int // calls of Managed
}

func (f *fakeDecls) log(ev string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, ev)
}

func (f *fakeDecls) Check(context.Context, Target, []*unstructured.Unstructured) error {
	return f.checkErr
}

func (f *fakeDecls) Apply(_ context.Context, _ Target, u *unstructured.Unstructured, dryRun bool) (Action, error) {
	f.log("apply " + u.GetKind() + " " + u.GetName())
	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.Contains(f.managed, u.GetName()) {
		f.managed = append(f.managed, u.GetName())
	}
	return ActionCreated, nil
}

func (f *fakeDecls) State(_ context.Context, _ Target, u *unstructured.Unstructured, since time.Time) (DeclaredState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := DeclaredState{ResourceKey: declKey(u), Sync: appspec.SyncSynced, Health: appspec.HealthHealthy}
	if u.GetName() == f.degraded {
		st.Health, st.Message = appspec.HealthDegraded, "application is Degraded: pod crashed"
		return st, nil
	}
	if f.reads == nil {
		f.reads = map[string]int{}
	}
	f.reads[u.GetName()]++
	if !since.IsZero() && f.reads[u.GetName()] <= f.readyAfter {
		st.Health = appspec.HealthProgressing
		return st, nil
	}
	if !since.IsZero() && f.reads[u.GetName()] == f.readyAfter+1 {
		f.events = append(f.events, "healthy "+u.GetName())
	}
	return st, nil
}

func (f *fakeDecls) Managed(context.Context, Target) ([]DeclaredState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listed++
	var out []DeclaredState
	for _, n := range f.managed {
		out = append(out, DeclaredState{ResourceKey: appspec.ResourceKey{Group: DeclarationGroup, Kind: KindApplication, Name: n},
			Sync: appspec.SyncSynced, Health: appspec.HealthHealthy})
	}
	return out, nil
}

func (f *fakeDecls) Delete(_ context.Context, _ Target, k appspec.ResourceKey, dryRun bool) (string, error) {
	f.log("delete " + k.Kind + " " + k.Name)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.managed = slices.DeleteFunc(f.managed, func(n string) bool { return n == k.Name })
	return "application deleted", nil
}

func childApplication(name, wave string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": name, "namespace": "argocd", "annotations": map[string]any{"argocd.argoproj.io/sync-wave": wave}},
		"spec": map[string]any{"project": "default", "source": map[string]any{"repoURL": "https://example.com/r.git", "path": name},
			"destination": map[string]any{"server": appspec.InClusterServer, "namespace": name}},
	}}
	return u
}

func plainConfigMap(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name}, "data": map[string]any{"k": "v"},
	}}
}

// Declared apps are carried out by Declarations, never sent to the
// cluster; each wave of them is waited for until Synced and Healthy.
func TestDeclarationsSyncInWaves(t *testing.T) {
	f := &fakeDecls{readyAfter: 2}
	h := newHarness(t, WithDeclarations(f))
	tg := h.target("parent")
	ref := h.put(plainConfigMap("plain"), childApplication("child-1", "1"), childApplication("child-2", "2"))
	r := h.sync(tg, ref, SyncOperation{SyncID: "s1"})
	if r.failed != nil {
		t.Fatalf("sync failed: %+v", r.failed)
	}
	want := []string{"apply Application child-1", "healthy child-1", "apply Application child-2", "healthy child-2"}
	if diff := cmp.Diff(want, f.events); diff != "" {
		t.Fatalf("declarations (-want +got):\n%s", diff)
	}
	if h.get(gvrConfigMaps, "plain") == nil {
		t.Fatal("the plain ConfigMap was not applied")
	}
	var kinds []string
	for _, res := range r.log {
		kinds = append(kinds, res.Kind+"/"+string(res.Action))
	}
	if diff := cmp.Diff([]string{"ConfigMap/created", "Application/created", "Application/created"}, kinds); diff != "" {
		t.Fatalf("sync log (-want +got):\n%s", diff)
	}

	// A child that leaves the manifests requires pruning, and is deleted
	// by a pruning sync only.
	ref = h.put(plainConfigMap("plain"), childApplication("child-1", "1"))
	cmpOut := h.compare(tg, ref, false)
	var extra []appspec.ResourceStatus
	for _, rs := range cmpOut.Resources {
		if rs.RequiresPruning {
			extra = append(extra, rs)
		}
	}
	if len(extra) != 1 || extra[0].Name != "child-2" || extra[0].Kind != KindApplication || cmpOut.Sync != appspec.SyncOutOfSync {
		t.Fatalf("compare: %s, extra %+v, want child-2 requiring pruning", cmpOut.Sync, extra)
	}
	r = h.sync(tg, ref, SyncOperation{SyncID: "s2"})
	if len(r.pruned) != 1 || r.pruned[0].Action != ActionPruneSkipped || r.pruned[0].Message != noteRequiresPruning {
		t.Fatalf("sync without prune: pruned %+v, want child-2 reported", r.pruned)
	}
	r = h.sync(tg, ref, SyncOperation{SyncID: "s3", Prune: true})
	if len(r.pruned) != 1 || r.pruned[0].Action != ActionPruned || r.pruned[0].Name != "child-2" || !slices.Contains(f.events, "delete Application child-2") {
		t.Fatalf("pruning sync: pruned %+v, events %v", r.pruned, f.events)
	}

	// The tree lists the children with their health.
	tree := must[ResourceTreeOutput](h, ResourceTreeName, ResourceTreeInput{Target: tg, Manifests: &ref})
	found := false
	for _, n := range tree.Nodes {
		if n.Kind == KindApplication && n.Name == "child-1" && n.Health == appspec.HealthHealthy {
			found = true
		}
	}
	if !found {
		t.Fatalf("tree %+v has no healthy child-1", tree.Nodes)
	}
}

// A Degraded child fails its wave, naming it.
func TestDeclarationsDegradedChildFailsWave(t *testing.T) {
	f := &fakeDecls{degraded: "bad"}
	h := newHarness(t, WithDeclarations(f))
	r := h.sync(h.target("parent"), h.put(childApplication("bad", "0"), childApplication("after", "1")), SyncOperation{SyncID: "s1"})
	if r.failed == nil || r.failed.Failed == nil || r.failed.Failed.Name != "bad" || !strings.Contains(r.failed.Message, "Degraded") {
		t.Fatalf("wave = %+v, want it failed by child bad", r.failed)
	}
	if slices.Contains(f.events, "apply Application after") {
		t.Fatal("the next wave ran after a Degraded child")
	}
}

// A refused declaration fails the plan with a non-retryable error; so do
// declarations on a worker without Declarations.
func TestDeclarationsRefused(t *testing.T) {
	refused := errors.Join(ErrDeclaration, errors.New("Application x: cycle"))
	h := newHarness(t, WithDeclarations(&fakeDecls{checkErr: refused}))
	_, err := run[PlanOutput](h, PlanName, PlanInput{Target: h.target("parent"), Manifests: h.put(childApplication("x", "0"))})
	if typ, ok := errorType(err); !ok || typ != "DeclarationRefused" || !strings.Contains(err.Error(), "cycle") {
		t.Fatalf("plan: %v (type %q), want DeclarationRefused naming the cycle", err, typ)
	}
	h = newHarness(t)
	_, err = run[PlanOutput](h, PlanName, PlanInput{Target: h.target("parent"), Manifests: h.put(childApplication("x", "0"))})
	if typ, ok := errorType(err); !ok || typ != "DeclarationsUnsupported" {
		t.Fatalf("plan without Declarations: %v (type %q)", err, typ)
	}
}

// Deleting the parent deletes the apps it manages, unless it orphans.
func TestDeclarationsDeletedWithParent(t *testing.T) {
	f := &fakeDecls{managed: []string{"child-1"}}
	h := newHarness(t, WithDeclarations(f))
	tg := h.target("parent")
	ref := h.put(childApplication("child-1", "0"))
	must[DeleteAppOutput](h, DeleteAppName, DeleteAppInput{Target: tg, Cascade: CascadeOrphan, Manifests: &ref})
	if len(f.events) != 0 {
		t.Fatalf("an orphaning delete touched the children: %v", f.events)
	}
	out := must[DeleteAppOutput](h, DeleteAppName, DeleteAppInput{Target: tg, Cascade: CascadeForeground, Manifests: &ref})
	if diff := cmp.Diff([]string{"delete Application child-1"}, f.events); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	if len(out.Resources) != 1 || out.Resources[0].Kind != KindApplication || out.Resources[0].Action != ActionDeleted {
		t.Fatalf("delete output %+v", out.Resources)
	}
}

// An app that declares nothing and manages nothing is asked once what it
// manages, not on every compare.
func TestDeclarationsNotListedForPlainApps(t *testing.T) {
	f := &fakeDecls{}
	h := newHarness(t, WithDeclarations(f))
	tg := h.target("plain")
	ref := h.put(plainConfigMap("cm"))
	for range 3 {
		in := CompareInput{Target: tg, Manifests: ref, Fresh: true}
		must[CompareOutput](h, CompareName, in)
	}
	if f.listed != 1 {
		t.Fatalf("Managed called %d times, want once", f.listed)
	}
	// Once it declares an app, it is asked again.
	ref = h.put(plainConfigMap("cm"), childApplication("child", "0"))
	must[CompareOutput](h, CompareName, CompareInput{Target: tg, Manifests: ref, Fresh: true})
	if f.listed != 2 {
		t.Fatalf("Managed called %d times, want twice", f.listed)
	}
}
