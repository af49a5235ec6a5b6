package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/kube"
	"github.com/windlass-cd/windlass/internal/manifest"
)

// How live objects are found. Every object Windlass applies carries the
// app label (manifest.AppLabel), so an app's objects are listed per kind
// with a label selector across all namespaces, which keeps each answer
// small; the tracking annotation then decides ownership. The kinds
// searched are:
//   - the kinds of the app's manifests;
//   - every kind the cluster serves that can be listed, watched and
//     deleted (less events), when the ClientSource is a
//     ResourceDiscoverer, cached for discoveryTTL per server;
//   - otherwise the kinds seen in the app's manifests before (in this
//     worker's memory) and builtinKinds.
const (
	discoveryTTL = time.Minute
	listPageSize = 500
)

// builtinKinds are searched when the cluster's discovery is not available.
var builtinKinds = []schema.GroupVersionKind{
	{Version: "v1", Kind: "ConfigMap"}, {Version: "v1", Kind: "Secret"}, {Version: "v1", Kind: "Service"},
	{Version: "v1", Kind: "ServiceAccount"}, {Version: "v1", Kind: "PersistentVolumeClaim"},
	{Version: "v1", Kind: "PersistentVolume"}, {Version: "v1", Kind: "Pod"}, {Version: "v1", Kind: "Namespace"},
	{Version: "v1", Kind: "ResourceQuota"}, {Version: "v1", Kind: "LimitRange"},
	{Group: "apps", Version: "v1", Kind: "Deployment"}, {Group: "apps", Version: "v1", Kind: "StatefulSet"},
	{Group: "apps", Version: "v1", Kind: "DaemonSet"}, {Group: "apps", Version: "v1", Kind: "ReplicaSet"},
	{Group: "batch", Version: "v1", Kind: "Job"}, {Group: "batch", Version: "v1", Kind: "CronJob"},
	{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"},
	{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"},
	{Group: "networking.k8s.io", Version: "v1", Kind: "IngressClass"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"},
	{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"},
	{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"},
	{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"},
	{Group: "storage.k8s.io", Version: "v1", Kind: "StorageClass"},
}

// kindRef is one kind to search.
type kindRef struct {
	gvr        schema.GroupVersionResource
	gvk        schema.GroupVersionKind
	namespaced bool
}

func refOf(m *meta.RESTMapping) kindRef {
	return kindRef{gvr: m.Resource, gvk: m.GroupVersionKind, namespaced: m.Scope.Name() == meta.RESTScopeNameNamespace}
}

// kindCache remembers discovery answers per server, the kinds seen per
// app, and per server the last sweep of every kind.
type kindCache struct {
	mu        sync.Mutex
	discovery map[string]discovered
	seen      map[string]map[schema.GroupResource]kindRef
	sweeps    map[string]*serverSweep
}

// serverSweep is one server's last sweep: the kinds in which it found
// objects labelled for each app (by AppLabel value). mu is held while a
// sweep runs, so that the compares that need it wait for one sweep.
type serverSweep struct {
	mu    sync.Mutex
	at    time.Time
	byApp map[string][]kindRef
}

type discovered struct {
	at    time.Time
	kinds []kindRef
}

func newKindCache() *kindCache {
	return &kindCache{discovery: map[string]discovered{}, seen: map[string]map[schema.GroupResource]kindRef{}, sweeps: map[string]*serverSweep{}}
}

func appKey(t Target) string { return t.Destination.Server + " " + appName(t) }

func (k *kindCache) remember(t Target, objs []*object) {
	k.rememberKinds(t, manifestKinds(objs))
}

// rememberKinds adds kinds to those seen for the app.
func (k *kindCache) rememberKinds(t Target, refs []kindRef) {
	k.mu.Lock()
	defer k.mu.Unlock()
	app := appKey(t)
	m := k.seen[app]
	if m == nil {
		m = map[schema.GroupResource]kindRef{}
		k.seen[app] = m
	}
	for _, r := range refs {
		m[r.gvr.GroupResource()] = r
	}
}

// fullSweepEvery is how often a worker lists every kind a cluster serves
// to learn in which kinds each app has objects. One sweep serves every app
// of the cluster: it lists each kind once, selecting the objects that
// carry the app label at all, and notes each object's kind under its
// label's value. A compare lists the kinds of the app's manifests, the
// kinds this worker has seen the app own (its earlier manifests and
// objects) and the kinds the last sweep found for it, so a resource that
// left the manifests is found at once, and one of another kind labelled
// for the app by hand within this period. A compare with diffs lists
// every kind. Listing every kind (some fifty on a bare cluster) for each
// app, even once per period, made the sweeps the bulk of an idle fleet's
// API requests.
const fullSweepEvery = 10 * time.Minute

// sweepRetry is how soon a sweep that failed is tried again.
const sweepRetry = time.Minute

const msgSweepFailed = "sweep of every kind failed; compares list the kinds known for each app until it succeeds"

func (k *kindCache) serverSweep(server string) *serverSweep {
	k.mu.Lock()
	defer k.mu.Unlock()
	s := k.sweeps[server]
	if s == nil {
		s = &serverSweep{}
		k.sweeps[server] = s
	}
	return s
}

// compareKinds returns the kinds a compare lists: every kind when full is
// set, else the manifests' kinds, those seen for the app and those the
// server's last sweep found for it (sweeping first when the last is older
// than fullSweepEvery).
func (a *Activities) compareKinds(ctx context.Context, t Target, d *desired, full bool) ([]kindRef, error) {
	if full {
		return a.searchKinds(t, d.c, d.objs), nil
	}
	return a.knownKinds(ctx, t, d.c, manifestKinds(d.objs))
}

// knownKinds returns the manifests' kinds, those seen for the app and
// those the server's last sweep found for it.
func (a *Activities) knownKinds(ctx context.Context, t Target, c *kube.Clients, manifests []kindRef) ([]kindRef, error) {
	swept, err := a.sweptKinds(ctx, t, c)
	if err != nil {
		return nil, err
	}
	kinds := append(slices.Clone(manifests), a.kinds.seenKinds(t)...)
	return a.managedKinds(t.Destination.Server, dedupe(append(kinds, swept...))), nil
}

// managedKinds drops from kinds, in place, those the resource filter
// excludes on server.
func (a *Activities) managedKinds(server string, kinds []kindRef) []kindRef {
	if a.filter.Empty() {
		return kinds
	}
	return slices.DeleteFunc(kinds, func(r kindRef) bool { return a.filter.Excluded(r.gvk.Group, r.gvk.Kind, server) })
}

// manifestKinds returns the kinds of the mapped objects.
func manifestKinds(objs []*object) []kindRef {
	var kinds []kindRef
	for _, o := range objs {
		if o.mapping != nil {
			kinds = append(kinds, refOf(o.mapping))
		}
	}
	return kinds
}

// sweptKinds returns the kinds in which the server's last sweep found
// objects labelled for the app, sweeping when none ran in fullSweepEvery.
func (a *Activities) sweptKinds(ctx context.Context, t Target, c *kube.Clients) ([]kindRef, error) {
	s := a.kinds.serverSweep(t.Destination.Server)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byApp == nil || time.Since(s.at) >= fullSweepEvery {
		start := time.Now()
		kinds := a.searchKinds(t, c, nil)
		var mu sync.Mutex
		found := map[string]map[schema.GroupResource]kindRef{}
		// Only the kinds and labels are read: the metadata is enough.
		_, _, err := a.listMeta(ctx, c, kinds, manifest.AppLabel, func(k kindRef, m *metav1.PartialObjectMetadata) bool {
			app := m.Labels[manifest.AppLabel]
			mu.Lock()
			defer mu.Unlock()
			if found[app] == nil {
				found[app] = map[schema.GroupResource]kindRef{}
			}
			found[app][k.gvr.GroupResource()] = k
			return false // only the kinds are kept
		})
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("sweep every kind: %w", err)
			}
			// A sweep searches for strays: a kind that cannot be listed
			// now (an aggregated API that is down, a broken conversion
			// webhook) must not fail every compare of the cluster. The
			// last sweep's findings stay, and a sweep is tried again
			// after sweepRetry.
			a.log.Warn(msgSweepFailed, "server", t.Destination.Server, "err", err, "retry", sweepRetry)
			if s.byApp == nil {
				s.byApp = map[string][]kindRef{}
			}
			s.at = start.Add(sweepRetry - fullSweepEvery)
			return s.byApp[manifest.AppLabelValue(t.Project, t.App)], nil
		}
		s.byApp = make(map[string][]kindRef, len(found))
		for app, m := range found {
			for _, k := range m {
				s.byApp[app] = append(s.byApp[app], k)
			}
		}
		s.at = start
	}
	return s.byApp[manifest.AppLabelValue(t.Project, t.App)], nil
}

func (k *kindCache) seenKinds(t Target) []kindRef {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []kindRef
	for _, r := range k.seen[appKey(t)] {
		out = append(out, r)
	}
	return out
}

// searchKinds returns the kinds to search for an app's live objects,
// without duplicate group-resources (the manifests' versions win) and
// without the kinds the resource filter excludes.
func (a *Activities) searchKinds(t Target, c *kube.Clients, objs []*object, extra ...schema.GroupVersionKind) []kindRef {
	var refs []kindRef
	for _, o := range objs {
		if o.mapping != nil {
			refs = append(refs, refOf(o.mapping))
		}
	}
	for _, gvk := range extra {
		if m, err := c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			refs = append(refs, refOf(m))
		}
	}
	if disc, ok := a.discover(t.Destination.Server); ok {
		refs = append(refs, disc...)
	} else {
		refs = append(refs, a.kinds.seenKinds(t)...)
		for _, gvk := range builtinKinds {
			if m, err := c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
				refs = append(refs, refOf(m))
			}
		}
	}
	seen := map[schema.GroupResource]bool{}
	out := refs[:0]
	for _, r := range refs {
		if gr := r.gvr.GroupResource(); !seen[gr] {
			seen[gr] = true
			out = append(out, r)
		}
	}
	return a.managedKinds(t.Destination.Server, out)
}

// discover returns the listable kinds of a server through the
// ClientSource's discovery, cached for discoveryTTL.
func (a *Activities) discover(server string) ([]kindRef, bool) {
	d, ok := a.clusters.(ResourceDiscoverer)
	if !ok {
		return nil, false
	}
	a.kinds.mu.Lock()
	hit, ok := a.kinds.discovery[server]
	a.kinds.mu.Unlock()
	if ok && time.Since(hit.at) < discoveryTTL {
		return hit.kinds, true
	}
	lists, err := d.ServerPreferredResources(server)
	if len(lists) == 0 {
		if err != nil {
			a.log.Warn(msgDiscoveryFailed, "server", server, "err", err)
		}
		return nil, false
	}
	var kinds []kindRef
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !hasVerbs(r.Verbs, "list", "watch", "delete") || skipKind(gv.Group, r.Kind) {
				continue
			}
			kinds = append(kinds, kindRef{
				gvr: gv.WithResource(r.Name), gvk: gv.WithKind(r.Kind), namespaced: r.Namespaced,
			})
		}
	}
	a.kinds.mu.Lock()
	a.kinds.discovery[server] = discovered{at: time.Now(), kinds: kinds}
	a.kinds.mu.Unlock()
	return kinds, true
}

const msgDiscoveryFailed = "discovery failed; searching known kinds only"

func hasVerbs(have metav1.Verbs, want ...string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// skipKind leaves out of discovery kinds that controllers make in numbers
// and apps hardly manage: events, and core Endpoints (deprecated; listing
// them draws a warning). An app's own manifests still add their kinds.
func skipKind(group, kind string) bool {
	return (kind == "Event" && (group == "" || group == "events.k8s.io")) || (kind == "Endpoints" && group == "")
}

// liveObject is one object read from the cluster, with where it lives.
type liveObject struct {
	obj  *unstructured.Unstructured
	kind kindRef
}

func (l liveObject) key() appspec.ResourceKey { return keyOf(l.obj) }

func (l liveObject) client(c *kube.Clients) dynamic.ResourceInterface {
	return resourceClient(c, l.kind.gvr, l.kind.namespaced, l.obj.GetNamespace())
}

// isLiveHook reports whether a live object is a hook: stamped by a sync,
// or annotated as one.
func isLiveHook(u *unstructured.Unstructured) bool {
	_, stamped := u.GetLabels()[manifest.SyncIDLabel]
	return stamped || manifest.HookOf(u).IsHook()
}

// listTracked lists the live objects owned by the app in the given kinds.
func (a *Activities) listTracked(ctx context.Context, c *kube.Clients, t Target, kinds []kindRef) ([]liveObject, error) {
	return a.listTrackedSince(ctx, c, t, kinds, nil)
}

// listTrackedSince is listTracked answered, for the kinds in since, at
// their resource versions or later (listPaged).
func (a *Activities) listTrackedSince(ctx context.Context, c *kube.Clients, t Target, kinds []kindRef, since listRVs) ([]liveObject, error) {
	selector := manifest.AppLabel + "=" + manifest.AppLabelValue(t.Project, t.App)
	out, _, err := a.listSelected(ctx, c, kinds, selector, since, func(u *unstructured.Unstructured) bool {
		return manifest.OwnedBy(t.Project, t.App, u)
	})
	return out, err
}

// listSelected lists objects matching a label selector in every namespace,
// kind by kind in parallel, keeping those keep accepts. Kinds that cannot
// be listed (gone, forbidden) are skipped. since and the versions it
// returns are listPaged's.
func (a *Activities) listSelected(ctx context.Context, c *kube.Clients, kinds []kindRef, selector string, since listRVs, keep func(*unstructured.Unstructured) bool) ([]liveObject, listRVs, error) {
	return listPaged(ctx, a, kinds, selector, since, func(ctx context.Context, k kindRef, opts metav1.ListOptions) ([]liveObject, metav1.ListMeta, error) {
		list, err := c.Dynamic.Resource(k.gvr).List(ctx, opts)
		if err != nil {
			return nil, metav1.ListMeta{}, err
		}
		var out []liveObject
		for j := range list.Items {
			u := &list.Items[j]
			if u.GetKind() == "" {
				u.SetGroupVersionKind(k.gvk)
			}
			if keep(u) {
				out = append(out, liveObject{obj: u, kind: k})
			}
		}
		return out, metav1.ListMeta{Continue: list.GetContinue(), ResourceVersion: list.GetResourceVersion()}, nil
	})
}

// metaObject is a live object's metadata, with its kind.
type metaObject struct {
	meta *metav1.PartialObjectMetadata
	kind kindRef
}

// listMeta is listSelected for the objects' metadata only, through the
// metadata client (protobuf where the server has it): no spec, status or
// decoded field sets, for what needs only names, labels and versions.
func (a *Activities) listMeta(ctx context.Context, c *kube.Clients, kinds []kindRef, selector string, keep func(kindRef, *metav1.PartialObjectMetadata) bool) ([]metaObject, listRVs, error) {
	if c.Metadata == nil {
		return nil, nil, errors.New("no metadata client")
	}
	return listPaged(ctx, a, kinds, selector, nil, func(ctx context.Context, k kindRef, opts metav1.ListOptions) ([]metaObject, metav1.ListMeta, error) {
		list, err := c.Metadata.Resource(k.gvr).List(ctx, opts)
		if apierrors.IsNotAcceptable(err) || apierrors.IsUnsupportedMediaType(err) {
			// A server that cannot answer with metadata only (an old
			// aggregated API): the full objects, then.
			list, err = metadataOfList(c.Dynamic.Resource(k.gvr).List(ctx, opts))
		}
		if err != nil {
			return nil, metav1.ListMeta{}, err
		}
		var out []metaObject
		for j := range list.Items {
			if m := &list.Items[j]; keep(k, m) {
				out = append(out, metaObject{meta: m, kind: k})
			}
		}
		return out, list.ListMeta, nil
	})
}

// listRVs holds, per kind, the resource version a list answered at.
type listRVs map[schema.GroupVersionResource]string

// listPaged lists every kind in parallel, page by page (page lists one
// and returns what it keeps of it and the list's metadata), each page
// holding one of the instance's read slots. Kinds that cannot be listed
// (gone, forbidden) are skipped. It returns the resource version each
// kind's list answered at.
//
// A list is a consistent read: it sees every write made before it. The
// API server answers it from its watch cache once that cache has caught
// up with etcd, and a kind that nothing wrote lately catches up only at
// its next progress notification (every 100 ms): while another kind is
// being written (a controller scaling a Deployment), a list of
// ConfigMaps waited that long. A kind in since was listed consistently
// moments ago at that version, so it is listed at that version or later
// (resourceVersionMatch NotOlderThan): as fresh as that list, answered
// from the cache at once.
func listPaged[T any](ctx context.Context, a *Activities, kinds []kindRef, selector string, since listRVs, page func(context.Context, kindRef, metav1.ListOptions) ([]T, metav1.ListMeta, error)) ([]T, listRVs, error) {
	found := make([][]T, len(kinds))
	rvs := make([]string, len(kinds))
	err := parallel(ctx, len(kinds), a.concurrency, func(ctx context.Context, i int) error {
		k := kinds[i]
		opts := metav1.ListOptions{LabelSelector: selector, Limit: listPageSize}
		if rv := since[k.gvr]; rv != "" {
			opts.ResourceVersion, opts.ResourceVersionMatch = rv, metav1.ResourceVersionMatchNotOlderThan
		}
		for {
			var (
				items []T
				lm    metav1.ListMeta
			)
			err := holding(ctx, a.reads, func() (err error) {
				items, lm, err = page(ctx, k, opts)
				return err
			})
			if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || apierrors.IsMethodNotSupported(err) {
				return nil
			}
			if err != nil && opts.ResourceVersionMatch != "" && ctx.Err() == nil {
				// A server that cannot answer at a version (an
				// aggregated API, an API server whose cache lags behind
				// the version): a consistent list, then.
				opts.ResourceVersion, opts.ResourceVersionMatch = "", ""
				continue
			}
			if err != nil {
				return fmt.Errorf("list %s: %w", k.gvr, err)
			}
			found[i] = append(found[i], items...)
			if rvs[i] == "" {
				rvs[i] = lm.ResourceVersion // the first page's: the continuation's too
			}
			if lm.Continue == "" {
				return nil
			}
			// A continuation carries its version: it must not name one.
			opts.Continue, opts.ResourceVersion, opts.ResourceVersionMatch = lm.Continue, "", ""
		}
	})
	if err != nil {
		return nil, nil, err
	}
	var out []T
	at := make(listRVs, len(kinds))
	for i, f := range found {
		out = append(out, f...)
		if rvs[i] != "" {
			at[kinds[i].gvr] = rvs[i]
		}
	}
	return out, at, nil
}

// metadataOfList keeps of a full list what the metadata client answers.
func metadataOfList(list *unstructured.UnstructuredList, err error) (*metav1.PartialObjectMetadataList, error) {
	if err != nil {
		return nil, err
	}
	out := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{Continue: list.GetContinue(), ResourceVersion: list.GetResourceVersion()}}
	for i := range list.Items {
		u := &list.Items[i]
		out.Items = append(out.Items, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(), ResourceVersion: u.GetResourceVersion(),
			Labels: u.GetLabels(), Annotations: u.GetAnnotations(),
		}})
	}
	return out, nil
}

// listTrackedMeta is listTracked for the objects' metadata only.
func (a *Activities) listTrackedMeta(ctx context.Context, c *kube.Clients, t Target, kinds []kindRef) ([]metaObject, listRVs, error) {
	selector := manifest.AppLabel + "=" + manifest.AppLabelValue(t.Project, t.App)
	return a.listMeta(ctx, c, kinds, selector, func(k kindRef, m *metav1.PartialObjectMetadata) bool {
		v, ok := m.Annotations[manifest.TrackingAnnotation]
		return ok && v == manifest.TrackingIDOf(t.Project, t.App, k.gvk.GroupKind(), m.Namespace, m.Name)
	})
}

// liveIndex maps resource keys to live objects.
func liveIndex(live []liveObject) map[appspec.ResourceKey]liveObject {
	m := make(map[appspec.ResourceKey]liveObject, len(live))
	for _, l := range live {
		m[l.key()] = l
	}
	return m
}

// getLive reads one desired object's live state (nil when it does not
// exist), from the index when it is there.
func getLive(ctx context.Context, c *kube.Clients, o *object, idx map[appspec.ResourceKey]liveObject) (*unstructured.Unstructured, error) {
	if l, ok := idx[o.key()]; ok {
		return l.obj, nil
	}
	if o.mapping == nil {
		return nil, nil
	}
	live, err := o.client(c).Get(ctx, o.obj.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", describe(o.key()), err)
	}
	return live, nil
}
