package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/kube"
	"github.com/windlass-cd/windlass/internal/manifest"
)

// Taking over from Argo CD. An app whose Target.ArgoCD is set also owns
// the objects that Argo CD tracked for it (its label or annotation names
// the app) and that carry no Windlass tracking; its first sync stamps
// Windlass's tracking on those still rendered, and its prune deletes the
// others. An object whose Argo CD tracking names another Argo CD app is a
// shared resource, as one tracked by another Windlass app is.

// owns reports whether u is the app's: Windlass's tracking names the app,
// or, for an app taking over from Argo CD, u has no Windlass tracking and
// Argo CD's names the app.
func owns(t Target, u *unstructured.Unstructured) bool {
	if manifest.OwnedBy(t.Project, t.App, u) {
		return true
	}
	owner := argoOwner(t, u)
	return owner != "" && owner == t.ArgoCD.App
}

// argoOwner is the Argo CD app that tracks u, for an app taking over from
// Argo CD, when u has no Windlass tracking; else "".
func argoOwner(t Target, u *unstructured.Unstructured) string {
	ann := u.GetAnnotations()
	if t.ArgoCD == nil || ann[manifest.TrackingAnnotation] != "" {
		return ""
	}
	return t.ArgoCD.Owner(u.GroupVersionKind().GroupKind(), u.GetNamespace(), u.GetName(), u.GetLabels(), ann)
}

// otherOwner names who else tracks live, "" when none: "app <project>/<app>"
// for another Windlass app, "Argo CD app <name>" for another Argo CD app
// (for an app taking over from Argo CD).
func otherOwner(t Target, live *unstructured.Unstructured) string {
	if owner := manifest.OwnerApp(live); owner != "" {
		if owner == appName(t) {
			return ""
		}
		return "app " + owner
	}
	if owner := argoOwner(t, live); owner != "" && owner != t.ArgoCD.App {
		return "Argo CD app " + owner
	}
	return ""
}

// withArgoTracked adds to tracked (the app's Windlass-tracked objects) the
// objects Argo CD tracked for the app, for an app taking over from Argo CD.
func (a *Activities) withArgoTracked(ctx context.Context, c *kube.Clients, t Target, objs []*object, tracked []liveObject) ([]liveObject, error) {
	if t.ArgoCD == nil {
		return tracked, nil
	}
	argo, err := a.listArgoTracked(ctx, c, t, objs)
	if err != nil {
		return nil, fmt.Errorf("list objects Argo CD tracked for %s: %w", t.ArgoCD.App, err)
	}
	seen := make(map[appspec.ResourceKey]bool, len(tracked))
	for _, l := range tracked {
		seen[l.key()] = true
	}
	for _, l := range argo {
		if !seen[l.key()] {
			tracked = append(tracked, l)
		}
	}
	return tracked, nil
}

// listArgoTracked lists the objects without Windlass tracking that Argo CD
// tracked for the app, in every kind the cluster serves: cluster-scoped,
// or in the app's namespaces (the destination's and its manifests'). With
// label tracking one list per kind selects them by label (the label found
// elsewhere is left alone: Helm charts set it too). Annotations cannot be
// selected, so with annotation tracking every namespaced kind is listed in
// each of the app's namespaces and every cluster-scoped kind once. Both
// list metadata only, then read the objects found whole. That is a list
// per kind (and namespace) at each compare, which is why it is opt-in.
func (a *Activities) listArgoTracked(ctx context.Context, c *kube.Clients, t Target, objs []*object) ([]liveObject, error) {
	kinds, namespaces := a.searchKinds(t, c, objs), appNamespaces(t, objs)
	keep := func(k kindRef, m *metav1.PartialObjectMetadata) bool {
		return (!k.namespaced || slices.Contains(namespaces, m.Namespace)) && m.Annotations[manifest.TrackingAnnotation] == "" &&
			!isDestination(t, k, m.Name) &&
			t.ArgoCD.Owner(k.gvk.GroupKind(), m.Namespace, m.Name, m.Labels, m.Annotations) == t.ArgoCD.App
	}
	var (
		found []metaObject
		err   error
	)
	if t.ArgoCD.Method == manifest.ArgoTrackLabel {
		if len(validation.IsValidLabelValue(t.ArgoCD.App)) > 0 {
			return nil, nil // no object can carry it
		}
		found, _, err = a.listMeta(ctx, c, kinds, t.ArgoCD.LabelKey+"="+t.ArgoCD.App, keep)
	} else {
		found, err = a.listMetaIn(ctx, c, kinds, namespaces, keep)
	}
	if err != nil {
		return nil, err
	}
	known := make([]knownObject, len(found))
	for i, f := range found {
		known[i] = knownObject{kind: f.kind, namespace: f.meta.Namespace, name: f.meta.Name}
	}
	return a.getKnown(ctx, c, t, known)
}

// isDestination reports whether the object of kind k named name is the
// app's destination namespace. Argo CD tracks the namespace it manages
// with CreateNamespace=true and managedNamespaceMetadata, yet never prunes
// it; it is not in the manifests, so it must not be found here either.
func isDestination(t Target, k kindRef, name string) bool {
	return k.gvk.Group == "" && k.gvk.Kind == "Namespace" && name == t.Destination.Namespace
}

// appNamespaces are the destination namespace and those of the manifests,
// sorted.
func appNamespaces(t Target, objs []*object) []string {
	var ns []string
	if t.Destination.Namespace != "" {
		ns = append(ns, t.Destination.Namespace)
	}
	for _, o := range objs {
		if n := o.obj.GetNamespace(); n != "" && o.namespaced() {
			ns = append(ns, n)
		}
	}
	sort.Strings(ns)
	return slices.Compact(ns)
}

// listMetaIn lists the metadata of every object of the namespaced kinds in
// each namespace and of the cluster-scoped kinds, page by page and in
// parallel, keeping those keep accepts. Kinds that cannot be listed are
// skipped, as listPaged does.
func (a *Activities) listMetaIn(ctx context.Context, c *kube.Clients, kinds []kindRef, namespaces []string, keep func(kindRef, *metav1.PartialObjectMetadata) bool) ([]metaObject, error) {
	type scope struct {
		kind kindRef
		ns   string
	}
	var scopes []scope
	for _, k := range kinds {
		if !k.namespaced {
			scopes = append(scopes, scope{kind: k})
			continue
		}
		for _, ns := range namespaces {
			scopes = append(scopes, scope{kind: k, ns: ns})
		}
	}
	if c.Metadata == nil {
		return nil, errors.New("no metadata client")
	}
	found := make([][]metaObject, len(scopes))
	err := parallel(ctx, len(scopes), a.concurrency, func(ctx context.Context, i int) error {
		s := scopes[i]
		rc := c.Metadata.Resource(s.kind.gvr)
		opts := metav1.ListOptions{Limit: listPageSize}
		for {
			var list *metav1.PartialObjectMetadataList
			err := holding(ctx, a.reads, func() (err error) {
				if s.kind.namespaced {
					list, err = rc.Namespace(s.ns).List(ctx, opts)
				} else {
					list, err = rc.List(ctx, opts)
				}
				return err
			})
			if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || apierrors.IsMethodNotSupported(err) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("list %s: %w", s.kind.gvr, err)
			}
			for j := range list.Items {
				if m := &list.Items[j]; keep(s.kind, m) {
					found[i] = append(found[i], metaObject{meta: m, kind: s.kind})
				}
			}
			if list.Continue == "" {
				return nil
			}
			opts.Continue = list.Continue
		}
	})
	if err != nil {
		return nil, err
	}
	return slices.Concat(found...), nil
}

// waitUnlabelled waits until each deleted object without the app label (one
// Argo CD tracked, which a watch of the label does not see) is gone, and
// returns the others.
func waitUnlabelled(ctx context.Context, c *kube.Clients, t Target, deleted []liveObject) ([]liveObject, error) {
	label := manifest.AppLabelValue(t.Project, t.App)
	var labelled []liveObject
	for _, l := range deleted {
		if l.obj.GetLabels()[manifest.AppLabel] == label {
			labelled = append(labelled, l)
			continue
		}
		if err := waitGone(ctx, l.client(c), l.obj.GetName(), l.obj.GetUID()); err != nil {
			return nil, err
		}
	}
	return labelled, nil
}
