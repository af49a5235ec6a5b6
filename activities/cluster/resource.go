package cluster

import (
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/windlass-cd/windlass/internal/appspec"
)

// Per-resource reads and writes for the API (GET, PATCH and DELETE of one
// of an app's resources, and pod logs). Like Diff, they are not
// activities: the API calls them with the caller's request already
// authorised and the resource found in the app's tree. They act with the
// worker's own identity; sync impersonation covers syncs only.

// resourceClient is the dynamic client of key's kind and namespace on server.
func (a *Activities) resourceClient(server string, key appspec.ResourceKey) (dynamic.ResourceInterface, error) {
	c, err := a.clusters.For(server)
	if err != nil {
		return nil, err
	}
	m, err := c.Mapper.RESTMapping(schema.GroupKind{Group: key.Group, Kind: key.Kind})
	if err != nil {
		return nil, fmt.Errorf("kind %s: %w", schema.GroupKind{Group: key.Group, Kind: key.Kind}, err)
	}
	if key.Namespace == "" {
		return c.Dynamic.Resource(m.Resource), nil
	}
	return c.Dynamic.Resource(m.Resource).Namespace(key.Namespace), nil
}

// LiveObject reads one object, without its managed fields.
func (a *Activities) LiveObject(ctx context.Context, server string, key appspec.ResourceKey) (map[string]any, error) {
	rc, err := a.resourceClient(server, key)
	if err != nil {
		return nil, err
	}
	u, err := rc.Get(ctx, key.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return shown(u), nil
}

// PatchFieldManager is the field manager of the API's patches: not
// Windlass's own, so that the drift watch sees them as another writer's.
const PatchFieldManager = "windlass-api"

// PatchObject patches one object with a patch of type pt (JSON merge,
// strategic merge or JSON patch) under PatchFieldManager, and returns the
// patched object. The API server's refusal is returned as it
// came (a *apierrors.StatusError).
func (a *Activities) PatchObject(ctx context.Context, server string, key appspec.ResourceKey, pt types.PatchType, patch []byte) (map[string]any, error) {
	rc, err := a.resourceClient(server, key)
	if err != nil {
		return nil, err
	}
	var u *unstructured.Unstructured
	err = a.bounded(ctx, func() error {
		u, err = rc.Patch(ctx, key.Name, pt, patch, metav1.PatchOptions{FieldManager: PatchFieldManager})
		return err
	})
	if err != nil {
		return nil, err
	}
	return shown(u), nil
}

// DeleteOptions say how DeleteObject deletes.
type DeleteOptions struct {
	// Force deletes at once, with a grace period of zero.
	Force bool
	// Orphan leaves the object's dependents (orphan propagation);
	// otherwise they are deleted in the background.
	Orphan bool
}

// DeleteObject deletes one object.
func (a *Activities) DeleteObject(ctx context.Context, server string, key appspec.ResourceKey, o DeleteOptions) error {
	rc, err := a.resourceClient(server, key)
	if err != nil {
		return err
	}
	policy := metav1.DeletePropagationBackground
	if o.Orphan {
		policy = metav1.DeletePropagationOrphan
	}
	opts := metav1.DeleteOptions{PropagationPolicy: &policy}
	if o.Force {
		var zero int64
		opts.GracePeriodSeconds = &zero
	}
	return a.bounded(ctx, func() error { return rc.Delete(ctx, key.Name, opts) })
}

// PodLogs opens the log stream of one container of a pod (opts.Container;
// empty: the pod's first container). Close the stream when done.
func (a *Activities) PodLogs(ctx context.Context, server, namespace, pod string, opts corev1.PodLogOptions) (io.ReadCloser, string, error) {
	c, err := a.clusters.For(server)
	if err != nil {
		return nil, "", err
	}
	if opts.Container == "" {
		p, err := c.Core.Pods(namespace).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return nil, "", err
		}
		if len(p.Spec.Containers) > 0 {
			opts.Container = p.Spec.Containers[0].Name
		}
	}
	rc, err := c.Core.Pods(namespace).GetLogs(pod, &opts).Stream(ctx)
	if err != nil {
		return nil, "", err
	}
	return rc, opts.Container, nil
}
