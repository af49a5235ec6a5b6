package cluster

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/kube"
)

// DefaultMaxTreeNodes bounds a resource tree when the input sets no bound.
const DefaultMaxTreeNodes = 1000

// ResourceTreeInput is the input of ResourceTree.
type ResourceTreeInput struct {
	Target Target `json:"target"`
	// Manifests, when set, adds the kinds of the app's manifests to those
	// searched for managed objects.
	Manifests *render.ManifestRef `json:"manifests,omitempty"`
	// MaxNodes bounds the tree (default DefaultMaxTreeNodes).
	MaxNodes int `json:"maxNodes,omitempty"`
}

// ResourceNode is one object of the tree.
type ResourceNode struct {
	appspec.ResourceKey
	Version string `json:"version,omitempty"`
	UID     string `json:"uid"`
	// Parents are the UIDs of the owners in the tree; none for a managed
	// object.
	Parents       []string             `json:"parents,omitempty"`
	Managed       bool                 `json:"managed,omitempty"`
	Health        appspec.HealthStatus `json:"health,omitempty"`
	HealthMessage string               `json:"healthMessage,omitempty"`
	CreatedAt     time.Time            `json:"createdAt"`
}

// ResourceTreeOutput is the app's managed objects and their descendants.
type ResourceTreeOutput struct {
	Nodes []ResourceNode `json:"nodes"`
	// Truncated says MaxNodes cut the tree.
	Truncated bool `json:"truncated,omitempty"`
}

// childKinds are the kinds searched for descendants of managed objects,
// in the namespaces of the managed objects.
var childKinds = []schema.GroupVersionKind{
	{Group: "apps", Version: "v1", Kind: "ReplicaSet"},
	{Group: "batch", Version: "v1", Kind: "Job"},
	{Version: "v1", Kind: "Pod"},
	{Group: "discovery.k8s.io", Version: "v1", Kind: "EndpointSlice"},
}

// ResourceTree returns the objects tracked for the app (managed, in sync
// order of their keys) followed by their descendants found through
// ownerReferences among ReplicaSets, Jobs, Pods and EndpointSlices of the
// same namespaces (so Deployment → ReplicaSet → Pod, CronJob → Job → Pod,
// Service → EndpointSlice), at most MaxNodes nodes.
func (a *Activities) ResourceTree(ctx context.Context, in ResourceTreeInput) (ResourceTreeOutput, error) {
	out, err := a.resourceTree(ctx, in)
	if err != nil {
		err = fmt.Errorf("resource tree of %s: %w", appName(in.Target), err)
	}
	return out, failure.Activity(err)
}

func (a *Activities) resourceTree(ctx context.Context, in ResourceTreeInput) (ResourceTreeOutput, error) {
	t := in.Target
	limit := in.MaxNodes
	if limit <= 0 {
		limit = DefaultMaxTreeNodes
	}
	c, d, err := a.clientsFor(ctx, t, in.Manifests)
	if err != nil {
		return ResourceTreeOutput{}, err
	}
	managed, err := a.listTracked(ctx, c, t, a.searchKinds(t, c, d.objs))
	if err != nil {
		return ResourceTreeOutput{}, err
	}
	if managed, err = a.withArgoTracked(ctx, c, t, d.objs, managed); err != nil {
		return ResourceTreeOutput{}, err
	}
	slices.SortFunc(managed, func(x, y liveObject) int {
		switch kx, ky := x.key().String(), y.key().String(); {
		case kx < ky:
			return -1
		case kx > ky:
			return 1
		}
		return 0
	})
	var out ResourceTreeOutput
	inTree := map[string]bool{}
	namespaces := map[string]bool{}
	add := func(l liveObject, parents []string) bool {
		if len(out.Nodes) >= limit {
			out.Truncated = true
			return false
		}
		h := a.health.Assess(l.obj)
		out.Nodes = append(out.Nodes, ResourceNode{
			ResourceKey: l.key(), Version: l.kind.gvk.Version, UID: string(l.obj.GetUID()), Parents: parents,
			Managed: parents == nil, Health: h.Status, HealthMessage: h.Message, CreatedAt: l.obj.GetCreationTimestamp().Time,
		})
		inTree[string(l.obj.GetUID())] = true
		return true
	}
	for _, l := range managed {
		if !add(l, nil) {
			return out, nil
		}
		if l.kind.namespaced {
			namespaces[l.obj.GetNamespace()] = true
		}
	}
	decls, err := a.declNodes(ctx, t, d)
	if err != nil {
		return out, err
	}
	for _, n := range decls {
		if len(out.Nodes) >= limit {
			out.Truncated = true
			return out, nil
		}
		out.Nodes = append(out.Nodes, n)
	}
	children, err := a.listChildren(ctx, c, t.Destination.Server, namespaces, limit)
	if err != nil {
		return out, err
	}
	// Owners come before their children: repeat until no new node joins.
	for added := true; added; {
		added = false
		for _, l := range children {
			if inTree[string(l.obj.GetUID())] {
				continue
			}
			var parents []string
			for _, ref := range l.obj.GetOwnerReferences() {
				if inTree[string(ref.UID)] {
					parents = append(parents, string(ref.UID))
				}
			}
			if len(parents) == 0 {
				continue
			}
			if !add(l, parents) {
				return out, nil
			}
			added = true
		}
	}
	return out, nil
}

// listChildren lists the child kinds that server's resource filter lets
// in, in the namespaces, at most limit objects per kind and namespace.
func (a *Activities) listChildren(ctx context.Context, c *kube.Clients, server string, namespaces map[string]bool, limit int) ([]liveObject, error) {
	var kinds []kindRef
	for _, gvk := range childKinds {
		if a.filter.Excluded(gvk.Group, gvk.Kind, server) {
			continue
		}
		if m, err := c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			kinds = append(kinds, refOf(m))
		}
	}
	type job struct {
		kind kindRef
		ns   string
	}
	var jobs []job
	nsList := make([]string, 0, len(namespaces))
	for ns := range namespaces {
		nsList = append(nsList, ns)
	}
	slices.Sort(nsList)
	for _, ns := range nsList {
		for _, k := range kinds {
			jobs = append(jobs, job{k, ns})
		}
	}
	found := make([][]liveObject, len(jobs))
	err := parallel(ctx, len(jobs), a.concurrency, func(ctx context.Context, i int) error {
		j := jobs[i]
		opts := metav1.ListOptions{Limit: int64(min(limit, listPageSize))}
		for len(found[i]) < limit {
			list, err := c.Dynamic.Resource(j.kind.gvr).Namespace(j.ns).List(ctx, opts)
			if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("list %s in %s: %w", j.kind.gvr, j.ns, err)
			}
			for k := range list.Items {
				u := &list.Items[k]
				if len(u.GetOwnerReferences()) > 0 {
					u.SetGroupVersionKind(j.kind.gvk)
					found[i] = append(found[i], liveObject{obj: u, kind: j.kind})
				}
			}
			if opts.Continue = list.GetContinue(); opts.Continue == "" {
				break
			}
		}
		return nil
	})
	var out []liveObject
	for _, f := range found {
		out = append(out, f...)
	}
	slices.SortFunc(out, func(x, y liveObject) int {
		return x.obj.GetCreationTimestamp().Compare(y.obj.GetCreationTimestamp().Time)
	})
	return out, err
}
