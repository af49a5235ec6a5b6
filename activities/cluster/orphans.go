package cluster

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/kube"
	"github.com/windlass-cd/windlass/internal/manifest"
)

// OrphansName is the activity that finds orphaned resources: a wire
// contract, never rename.
const OrphansName = "cluster.Orphans"

// MaxOrphans bounds the orphaned resources an OrphansOutput lists.
const MaxOrphans = 50

// maxOrphanNamespaces bounds the namespaces one search lists.
const maxOrphanNamespaces = 20

// OrphansInput names the app, the namespaces to search and what to leave
// out (the project's orphanedResources).
type OrphansInput struct {
	Target     Target                    `json:"target"`
	Namespaces []string                  `json:"namespaces"`
	Settings   appspec.OrphanedResources `json:"settings"`
}

// OrphansOutput counts the orphaned resources found and lists the first
// MaxOrphans, sorted. Warning is set by the app when the project warns.
type OrphansOutput struct {
	Count     int                   `json:"count"`
	Resources []appspec.ResourceKey `json:"resources,omitempty"`
	Warning   string                `json:"warning,omitempty"`
}

// Orphans lists the top-level objects in the given namespaces that no app
// tracks, as Argo CD's orphaned-resource monitoring does: an object with
// an owner is its owner's, and what the cluster makes in every namespace
// (the default ServiceAccount, kube-root-ca.crt, events, endpoints,
// leases) is left out, as is what the settings ignore. It reads each
// namespaced kind's metadata, namespace by namespace.
func (a *Activities) Orphans(ctx context.Context, in OrphansInput) (OrphansOutput, error) {
	out, err := a.orphans(ctx, in)
	return out, failure.Activity(err)
}

func (a *Activities) orphans(ctx context.Context, in OrphansInput) (OrphansOutput, error) {
	t := in.Target
	c, err := a.clusters.For(t.Destination.Server)
	if err != nil {
		return OrphansOutput{}, fmt.Errorf("orphaned resources of %s: %w", appName(t), err)
	}
	var kinds []kindRef
	for _, k := range a.searchKinds(t, c, nil) {
		if k.namespaced && !orphanExempt(k.gvk.Group, k.gvk.Kind) {
			kinds = append(kinds, k)
		}
	}
	nss := in.Namespaces
	if len(nss) > maxOrphanNamespaces {
		nss = nss[:maxOrphanNamespaces]
	}
	var (
		mu    sync.Mutex
		found []appspec.ResourceKey
	)
	n := len(kinds) * len(nss)
	err = parallel(ctx, n, a.concurrency, func(ctx context.Context, i int) error {
		k, ns := kinds[i%len(kinds)], nss[i/len(kinds)]
		keys, err := a.orphansOf(ctx, c, k, ns, in.Settings)
		mu.Lock()
		found = append(found, keys...)
		mu.Unlock()
		return err
	})
	if err != nil {
		return OrphansOutput{}, fmt.Errorf("orphaned resources of %s: %w", appName(t), err)
	}
	slices.SortFunc(found, compareKeys)
	out := OrphansOutput{Count: len(found), Resources: found}
	if len(found) > MaxOrphans {
		out.Resources = found[:MaxOrphans]
	}
	return out, nil
}

// orphansOf lists one kind in one namespace and keeps the orphans.
func (a *Activities) orphansOf(ctx context.Context, c *kube.Clients, k kindRef, ns string, s appspec.OrphanedResources) ([]appspec.ResourceKey, error) {
	var out []appspec.ResourceKey
	opts := metav1.ListOptions{Limit: listPageSize}
	for {
		var list *metav1.PartialObjectMetadataList
		err := holding(ctx, a.reads, func() (err error) {
			list, err = c.Metadata.Resource(k.gvr).Namespace(ns).List(ctx, opts)
			return err
		})
		if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || apierrors.IsMethodNotSupported(err) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("list %s in %s: %w", k.gvr, ns, err)
		}
		for _, m := range list.Items {
			if isOrphan(k, &m, s) {
				out = append(out, appspec.ResourceKey{Group: k.gvk.Group, Kind: k.gvk.Kind, Namespace: ns, Name: m.Name})
			}
		}
		if list.Continue == "" {
			return out, nil
		}
		opts.Continue = list.Continue
	}
}

func isOrphan(k kindRef, m *metav1.PartialObjectMetadata, s appspec.OrphanedResources) bool {
	_, labelled := m.Labels[manifest.AppLabel]
	_, tracked := m.Annotations[manifest.TrackingAnnotation]
	switch {
	case labelled || tracked || len(m.OwnerReferences) > 0:
		return false
	case k.gvk.Group == "" && k.gvk.Kind == "ServiceAccount" && m.Name == "default",
		k.gvk.Group == "" && k.gvk.Kind == "ConfigMap" && m.Name == "kube-root-ca.crt":
		return false
	}
	return !s.Ignores(k.gvk.Group, k.gvk.Kind, m.Name)
}

// orphanExempt leaves out kinds the cluster makes on its own.
func orphanExempt(group, kind string) bool {
	switch {
	case skipKind(group, kind):
		return true
	case group == "discovery.k8s.io" && kind == "EndpointSlice", group == "coordination.k8s.io" && kind == "Lease":
		return true
	}
	return false
}

func compareKeys(a, b appspec.ResourceKey) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Group, b.Group), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
}
