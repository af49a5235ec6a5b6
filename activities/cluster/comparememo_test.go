package cluster

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/kube"
	"github.com/windlass-cd/windlass/internal/manifest"
)

// The reconcile loop's compare is answered from the memo, without loading
// the manifests, while the app's live objects keep their versions; a
// change by another writer, a diff request, a hard refresh and an object
// the lists do not find (deleted, found by a GET) are compared again. The steps run in
// order on one app.
func TestCompareMemo(t *testing.T) {
	h := newHarness(t)
	tg, ref := h.target("memo"), h.put(staticGuestbook(h)...)
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

// staticGuestbook is the guestbook fixture without its Deployment, whose
// status changes on its own.
func staticGuestbook(h *harness) []*unstructured.Unstructured {
	var objs []*unstructured.Unstructured
	for _, o := range h.fixture("guestbook.yaml") {
		if o.GetKind() != "Deployment" {
			objs = append(objs, o)
		}
	}
	return objs
}

// A server that cannot list a kind's metadata only (406, as an old
// aggregated API answers) gets full lists for it: the memo and the sweep
// go on; a metadata list that fails otherwise leaves the answer to the
// full compare.
func TestCompareMemoWithoutMetadataLists(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		memo bool
	}{
		{name: "not acceptable", err: apierrors.NewGenericServerResponse(http.StatusNotAcceptable, "list", gvrConfigMaps.GroupResource(), "", "only application/json", 0, false), memo: true},
		{name: "unavailable", err: errUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			tg, ref := h.target("nometa-"+strings.ReplaceAll(tc.name, " ", "-")), h.put(staticGuestbook(h)...)
			h.sync(tg, ref, SyncOperation{SyncID: "s1"})
			h.a.clusters = metadataFails{clusters: h.a.clusters.(clusters), gvr: gvrConfigMaps, err: tc.err}
			h.a.kinds.serverSweep(tg.Destination.Server).at = time.Now().Add(-fullSweepEvery) // sweep again
			h.compare(tg, ref, false)
			before := h.loader.loaded()
			if got := h.compare(tg, ref, false); got.Sync != appspec.SyncSynced {
				t.Fatalf("compare = %s: %+v", got.Sync, got.Resources)
			}
			if memo := h.loader.loaded() == before; memo != tc.memo {
				t.Fatalf("answered from the memo = %v, want %v", memo, tc.memo)
			}
			swept := h.a.kinds.serverSweep(tg.Destination.Server).byApp[manifest.AppLabelValue(tg.Project, tg.App)]
			if found := slices.ContainsFunc(swept, func(k kindRef) bool { return k.gvr == gvrConfigMaps }); found != tc.memo {
				t.Fatalf("the sweep found the app's ConfigMaps = %v, want %v (%v)", found, tc.memo, swept)
			}
		})
	}
}

// metadataFails makes the metadata lists of gvr fail with err.
type metadataFails struct {
	clusters
	gvr schema.GroupVersionResource
	err error
}

func (m metadataFails) For(server string) (*kube.Clients, error) {
	c, err := m.clusters.For(server)
	if err != nil {
		return nil, err
	}
	cp := *c
	cp.Metadata = failingMetadata{Interface: c.Metadata, gvr: m.gvr, err: m.err}
	return &cp, nil
}

// A compare that the memo cannot answer lists the app's objects again in
// full: at the versions its metadata lists answered at, or later
// (NotOlderThan), which the API server answers from its watch cache
// without waiting for it to catch up again; it still sees the change that
// missed the memo. A server that refuses such a list gets a consistent
// one. A compare without a memo lists consistently.
func TestCompareMemoMissListsSince(t *testing.T) {
	for _, tc := range []struct {
		name   string
		refuse bool
	}{
		{name: "since"},
		{name: "refused", refuse: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			tg, ref := h.target("since-"+tc.name), h.put(staticGuestbook(h)...)
			h.sync(tg, ref, SyncOperation{SyncID: "s1"})
			rec := &listRecorder{clusters: h.a.clusters.(clusters), gvr: gvrConfigMaps, refuse: tc.refuse}
			h.a.clusters = rec
			if got := h.compare(tg, ref, false); got.Sync != appspec.SyncSynced {
				t.Fatalf("first compare = %s: %+v", got.Sync, got.Resources)
			}
			if lists := rec.take(); len(lists) != 1 || lists[0].ResourceVersion != "" || lists[0].ResourceVersionMatch != "" {
				t.Fatalf("the first compare's ConfigMap lists = %+v, want one consistent list", lists)
			}
			_, err := h.dyn.Resource(gvrConfigMaps).Namespace(h.ns).Patch(t.Context(), "guestbook-config", types.MergePatchType,
				[]byte(`{"data":{"greeting":"changed by hand"}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"})
			if err != nil {
				t.Fatal(err)
			}
			got := h.compare(tg, ref, false)
			if got.Sync != appspec.SyncOutOfSync {
				t.Fatalf("compare after the change = %s: %+v", got.Sync, got.Resources)
			}
			lists := rec.take()
			want := 1
			if tc.refuse {
				want = 2
			}
			if len(lists) != want || lists[0].ResourceVersion == "" || lists[0].ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan {
				t.Fatalf("ConfigMap lists after the memo missed = %+v, want %d, the first at a version, NotOlderThan", lists, want)
			}
			if tc.refuse && (lists[1].ResourceVersion != "" || lists[1].ResourceVersionMatch != "") {
				t.Fatalf("the list after the refusal = %+v, want a consistent one", lists[1])
			}
		})
	}
}

// listRecorder records the options of the full lists of gvr; with refuse
// it fails those that name a version, and with failGets (set under mu)
// the GETs of gvr's namespaced objects.
type listRecorder struct {
	clusters
	gvr      schema.GroupVersionResource
	refuse   bool
	mu       sync.Mutex
	lists    []metav1.ListOptions
	failGets bool
}

func (r *listRecorder) setFailGets(fail bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failGets = fail
}

func (r *listRecorder) For(server string) (*kube.Clients, error) {
	c, err := r.clusters.For(server)
	if err != nil {
		return nil, err
	}
	cp := *c
	cp.Dynamic = recordingDynamic{Interface: c.Dynamic, r: r}
	return &cp, nil
}

func (r *listRecorder) take() []metav1.ListOptions {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.lists
	r.lists = nil
	return out
}

type recordingDynamic struct {
	dynamic.Interface
	r *listRecorder
}

func (d recordingDynamic) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	res := d.Interface.Resource(gvr)
	if gvr == d.r.gvr {
		return recordingList{NamespaceableResourceInterface: res, r: d.r}
	}
	return res
}

type recordingList struct {
	dynamic.NamespaceableResourceInterface
	r *listRecorder
}

func (l recordingList) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	l.r.mu.Lock()
	l.r.lists = append(l.r.lists, opts)
	l.r.mu.Unlock()
	if l.r.refuse && opts.ResourceVersionMatch != "" {
		return nil, apierrors.NewBadRequest("resourceVersionMatch is not supported here")
	}
	return l.NamespaceableResourceInterface.List(ctx, opts)
}

func (l recordingList) Namespace(ns string) dynamic.ResourceInterface {
	return failingGet{ResourceInterface: l.NamespaceableResourceInterface.Namespace(ns), r: l.r}
}

type failingGet struct {
	dynamic.ResourceInterface
	r *listRecorder
}

func (g failingGet) Get(ctx context.Context, name string, opts metav1.GetOptions, sub ...string) (*unstructured.Unstructured, error) {
	g.r.mu.Lock()
	fail := g.r.failGets
	g.r.mu.Unlock()
	if fail {
		return nil, errUnavailable
	}
	return g.ResourceInterface.Get(ctx, name, opts, sub...)
}

// A Drift compare (the watch saw another writer change a tracked object)
// of an app the memo knows reads the app's known objects by GET, lists
// nothing, and sees what changed them: an edit, a deletion; GETs that fail
// leave the answer to the lists. An object
// newly labelled for the app is not among them: the next listing compare
// finds it. Without a memo entry a Drift compare lists as any other.
func TestCompareDriftReadsKnownObjects(t *testing.T) {
	h := newHarness(t)
	objs := staticGuestbook(h)
	tg, ref := h.target("drift"), h.put(objs...)
	h.sync(tg, ref, SyncOperation{SyncID: "s1"})
	// The metadata lists of ConfigMaps fail: a compare that lists
	// them cannot be answered from the memo.
	rec := &listRecorder{clusters: h.a.clusters.(clusters), gvr: gvrConfigMaps}
	h.a.clusters = metadataFails{clusters: rec.clusters, gvr: gvrConfigMaps, err: errUnavailable}
	if first := h.compare(tg, ref, false); first.Sync != appspec.SyncSynced {
		t.Fatalf("first compare = %s: %+v", first.Sync, first.Resources)
	}
	h.a.clusters = driftClusters{rec: rec, meta: metadataFails{clusters: rec.clusters, gvr: gvrConfigMaps, err: errUnavailable}}
	cms := h.dyn.Resource(gvrConfigMaps).Namespace(h.ns)
	stray := h.put(append(slices.Clone(objs), configMap("drift-stray"))...)
	for _, step := range []struct {
		name   string
		change func() error
		drift  bool
		want   appspec.SyncStatus
		memo   bool
		lists  bool
		stray  bool
	}{
		{name: "unchanged", drift: true, want: appspec.SyncSynced, memo: true},
		{name: "an object newly labelled for the app", drift: true, want: appspec.SyncSynced, memo: true, change: func() error {
			h.sync(tg, stray, SyncOperation{SyncID: "s2"}) // makes drift-stray, changes nothing else
			return nil
		}},
		{name: "found by the next listing compare", want: appspec.SyncOutOfSync, lists: true, stray: true},
		{name: "another writer changed the ConfigMap", drift: true, want: appspec.SyncOutOfSync, stray: true, change: func() error {
			_, err := cms.Patch(t.Context(), "guestbook-config", types.MergePatchType, []byte(`{"data":{"greeting":"changed by hand"}}`),
				metav1.PatchOptions{FieldManager: "kubectl-edit"})
			return err
		}},
		{name: "unchanged since", drift: true, want: appspec.SyncOutOfSync, memo: true, stray: true},
		{name: "GETs that fail leave the answer to the lists", drift: true, want: appspec.SyncOutOfSync, lists: true, stray: true,
			change: func() error { rec.setFailGets(true); return nil }},
		{name: "the ConfigMap deleted", drift: true, want: appspec.SyncOutOfSync, stray: true, change: func() error {
			rec.setFailGets(false)
			return cms.Delete(t.Context(), "guestbook-config", metav1.DeleteOptions{})
		}},
		{name: "no memo entry: lists", drift: true, want: appspec.SyncOutOfSync, lists: true, stray: true},
	} {
		t.Run(step.name, func(t *testing.T) {
			if step.change != nil {
				if err := step.change(); err != nil {
					t.Fatal(err)
				}
			}
			rec.take()
			before := h.loader.loaded()
			got := must[CompareOutput](h, CompareName, CompareInput{Target: tg, Manifests: ref, Drift: step.drift})
			if got.Sync != step.want {
				t.Fatalf("sync = %s, want %s: %+v", got.Sync, step.want, got.Resources)
			}
			if memo := h.loader.loaded() == before; memo != step.memo {
				t.Fatalf("answered from the memo = %v, want %v", memo, step.memo)
			}
			if lists := len(rec.take()) > 0; lists != step.lists {
				t.Fatalf("listed ConfigMaps = %v, want %v", lists, step.lists)
			}
			found := slices.ContainsFunc(got.Resources, func(r appspec.ResourceStatus) bool { return r.Name == "drift-stray" && r.RequiresPruning })
			if found != step.stray {
				t.Fatalf("drift-stray reported for pruning = %v, want %v: %+v", found, step.stray, got.Resources)
			}
		})
	}
}

// driftClusters serves clients whose full lists of ConfigMaps rec records
// and whose metadata lists of them fail.
type driftClusters struct {
	rec  *listRecorder
	meta metadataFails
}

func (d driftClusters) For(server string) (*kube.Clients, error) {
	c, err := d.meta.For(server)
	if err != nil {
		return nil, err
	}
	cp := *c
	cp.Dynamic = recordingDynamic{Interface: c.Dynamic, r: d.rec}
	return &cp, nil
}

func (d driftClusters) ServerPreferredResources(server string) ([]*metav1.APIResourceList, error) {
	return d.rec.ServerPreferredResources(server)
}

func configMap(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetName(name)
	_ = unstructured.SetNestedStringMap(u.Object, map[string]string{"k": "v"}, "data")
	return u
}
