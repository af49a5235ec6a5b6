package cluster

import (
	"context"
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

// kindCache remembers discovery answers per server and the kinds seen per
// app.
type kindCache struct {
	mu        sync.Mutex
	discovery map[string]discovered
	seen      map[string]map[schema.GroupResource]kindRef
	// swept is when each app's compare last listed every kind.
	swept map[string]time.Time
}

type discovered struct {
	at    time.Time
	kinds []kindRef
}

func newKindCache() *kindCache {
	return &kindCache{discovery: map[string]discovered{}, seen: map[string]map[schema.GroupResource]kindRef{}, swept: map[string]time.Time{}}
}

func appKey(t Target) string { return t.Destination.Server + " " + appName(t) }

func (k *kindCache) remember(t Target, objs []*object) {
	var refs []kindRef
	for _, o := range objs {
		if o.mapping != nil {
			refs = append(refs, refOf(o.mapping))
		}
	}
	k.rememberKinds(t, refs)
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

// fullSweepEvery is how often, per app and worker, a compare lists every
// kind the cluster serves. In between it lists the kinds of the app's
// manifests and the kinds this worker has seen the app own (its earlier
// manifests, and what earlier sweeps found), which is where a resource
// that left the manifests is. A resource of another kind labelled for the
// app by hand shows within this period. Listing every kind (some fifty on
// a bare cluster) on every refresh made compares the bulk of an idle
// fleet's API requests.
const fullSweepEvery = 10 * time.Minute

// sweepDue says whether the app's next compare must list every kind.
func (k *kindCache) sweepDue(t Target, now time.Time) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	at, ok := k.swept[appKey(t)]
	return !ok || now.Sub(at) >= fullSweepEvery
}

func (k *kindCache) markSwept(t Target, at time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.swept) >= maxDryRuns {
		k.swept = map[string]time.Time{}
	}
	k.swept[appKey(t)] = at
}

// compareKinds returns the kinds a compare lists: every kind when full is
// set or the app's sweep is due (swept reports it), else the manifests'
// kinds and those seen for the app.
func (a *Activities) compareKinds(t Target, d *desired, full bool) (kinds []kindRef, swept bool) {
	if full || a.kinds.sweepDue(t, time.Now()) {
		return a.searchKinds(t, d.c, d.objs), true
	}
	for _, o := range d.objs {
		if o.mapping != nil {
			kinds = append(kinds, refOf(o.mapping))
		}
	}
	return dedupe(append(kinds, a.kinds.seenKinds(t)...)), false
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
// without duplicate group-resources (the manifests' versions win).
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
	return out
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
	selector := manifest.AppLabel + "=" + manifest.AppLabelValue(t.Project, t.App)
	return a.listSelected(ctx, c, kinds, selector, func(u *unstructured.Unstructured) bool {
		return manifest.OwnedBy(t.Project, t.App, u)
	})
}

// listSelected lists objects matching a label selector in every namespace,
// kind by kind in parallel, keeping those keep accepts. Kinds that cannot
// be listed (gone, forbidden) are skipped.
func (a *Activities) listSelected(ctx context.Context, c *kube.Clients, kinds []kindRef, selector string, keep func(*unstructured.Unstructured) bool) ([]liveObject, error) {
	found := make([][]liveObject, len(kinds))
	err := parallel(ctx, len(kinds), a.concurrency, func(ctx context.Context, i int) error {
		k := kinds[i]
		opts := metav1.ListOptions{LabelSelector: selector, Limit: listPageSize}
		for {
			var list *unstructured.UnstructuredList
			err := holding(ctx, a.reads, func() (err error) {
				list, err = c.Dynamic.Resource(k.gvr).List(ctx, opts)
				return err
			})
			if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || apierrors.IsMethodNotSupported(err) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("list %s: %w", k.gvr, err)
			}
			for j := range list.Items {
				u := &list.Items[j]
				if u.GetKind() == "" {
					u.SetGroupVersionKind(k.gvk)
				}
				if keep(u) {
					found[i] = append(found[i], liveObject{obj: u, kind: k})
				}
			}
			if opts.Continue = list.GetContinue(); opts.Continue == "" {
				return nil
			}
		}
	})
	if err != nil {
		return nil, err
	}
	var out []liveObject
	for _, f := range found {
		out = append(out, f...)
	}
	return out, nil
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
