package cluster

import (
	"context"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

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

// Event is a Kubernetes event of one of an app's objects.
type Event struct {
	Time    time.Time           `json:"time"`
	Type    string              `json:"type"`
	Reason  string              `json:"reason"`
	Message string              `json:"message"`
	Count   int64               `json:"count,omitempty"`
	Object  appspec.ResourceKey `json:"object"`
}

// maxEvents bounds the events Events returns (the newest are kept).
const maxEvents = 500

var gvrEvents = schema.GroupVersionResource{Version: "v1", Resource: "events"}

// Events returns the Kubernetes events of the app's resource tree (its
// managed objects and their descendants), newest first. Like Diff, it is
// for the API, not an activity.
func (a *Activities) Events(ctx context.Context, in ResourceTreeInput) ([]Event, error) {
	tree, err := a.resourceTree(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("events of %s: %w", appName(in.Target), err)
	}
	c, err := a.clusters.For(in.Target.Destination.Server)
	if err != nil {
		return nil, fmt.Errorf("events of %s: %w", appName(in.Target), err)
	}
	nodes := map[string]appspec.ResourceKey{}
	var namespaces []string
	for _, n := range tree.Nodes {
		nodes[n.UID] = n.ResourceKey
		ns := n.Namespace
		if ns == "" {
			ns = metav1.NamespaceDefault // where cluster-scoped objects' events go
		}
		if !slices.Contains(namespaces, ns) {
			namespaces = append(namespaces, ns)
		}
	}
	slices.Sort(namespaces)
	var out []Event
	for _, ns := range namespaces {
		list, err := c.Dynamic.Resource(gvrEvents).Namespace(ns).List(ctx, metav1.ListOptions{Limit: 2 * maxEvents})
		if err != nil {
			return nil, fmt.Errorf("events of %s: list events in %q: %w", appName(in.Target), ns, err)
		}
		for _, item := range list.Items {
			uid, _, _ := unstructured.NestedString(item.Object, "involvedObject", "uid")
			key, ok := nodes[uid]
			if !ok {
				continue
			}
			out = append(out, eventOf(item.Object, key, item.GetCreationTimestamp().Time))
		}
	}
	slices.SortStableFunc(out, func(x, y Event) int { return y.Time.Compare(x.Time) })
	if len(out) > maxEvents {
		out = out[:maxEvents]
	}
	return out, nil
}

// eventOf reads a core/v1 Event; its time is the last time it was seen.
func eventOf(o map[string]any, key appspec.ResourceKey, created time.Time) Event {
	e := Event{Object: key, Time: created}
	e.Type, _, _ = unstructured.NestedString(o, "type")
	e.Reason, _, _ = unstructured.NestedString(o, "reason")
	e.Message, _, _ = unstructured.NestedString(o, "message")
	e.Count, _, _ = unstructured.NestedInt64(o, "count")
	for _, f := range []string{"lastTimestamp", "eventTime", "firstTimestamp"} {
		if s, _, _ := unstructured.NestedString(o, f); s != "" {
			if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
				e.Time = t
				break
			}
		}
	}
	return e
}
