package cluster

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/manifest"
)

// DiffOutput is an app's comparison as people read it: Compare's result
// with a unified diff per differing resource and the objects compared.
type DiffOutput struct {
	Sync      appspec.SyncStatus   `json:"sync"`
	Health    appspec.HealthStatus `json:"health"`
	Resources []ResourceDiff       `json:"resources"`
}

// ResourceDiff is one resource of a DiffOutput. Live is the object in the
// cluster (nil when missing) without its managed fields; Desired the
// rendered one (nil when it is no longer rendered). The values of Secrets
// are masked in both and in the diff (manifest.MaskSecrets).
type ResourceDiff struct {
	appspec.ResourceStatus
	Live    map[string]any `json:"live"`
	Desired map[string]any `json:"desired"`
}

// Diff compares in.Manifests with the live state as Compare does, with
// diffs. It is not an activity: its output holds whole objects, which have
// no place in workflow history; the API calls it directly.
func (a *Activities) Diff(ctx context.Context, in CompareInput) (DiffOutput, error) {
	in.WithDiff = true
	var pairs []comparedPair
	cmp, err := a.compare(ctx, in, true, &pairs)
	if err != nil {
		return DiffOutput{}, err
	}
	if len(pairs) != len(cmp.Resources) {
		return DiffOutput{}, fmt.Errorf("diff %s: %d objects for %d resources", appName(in.Target), len(pairs), len(cmp.Resources))
	}
	out := DiffOutput{Sync: cmp.Sync, Health: cmp.Health, Resources: make([]ResourceDiff, len(pairs))}
	for i, p := range pairs {
		live, desired := shown(p.live), shown(p.desired)
		manifest.MaskSecrets(live, desired)
		out.Resources[i] = ResourceDiff{ResourceStatus: cmp.Resources[i], Live: live, Desired: desired}
	}
	return out, nil
}

// shown is a copy of o as people read it: without managed fields.
func shown(o *unstructured.Unstructured) map[string]any {
	if o == nil {
		return nil
	}
	c := o.DeepCopy()
	unstructured.RemoveNestedField(c.Object, "metadata", "managedFields")
	return c.Object
}
