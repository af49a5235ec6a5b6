package deploy

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// helmOnlyLabels are the labels only the chart sets, on metadata only.
var helmOnlyLabels = []string{"helm.sh/chart", "app.kubernetes.io/managed-by"}

// normalize drops what only Helm adds.
func normalize(o *unstructured.Unstructured) map[string]any {
	c := o.DeepCopy()
	labels := c.GetLabels()
	for _, l := range helmOnlyLabels {
		delete(labels, l)
	}
	c.SetLabels(labels)
	return c.Object
}

// TestHelmMatchesKustomize renders the chart with the values of each
// overlay (ci/<overlay>-values.yaml) and compares every object with the
// overlay's, after dropping the chart's own labels.
func TestHelmMatchesKustomize(t *testing.T) {
	for _, overlay := range []string{"dev", "ha"} {
		t.Run(overlay, func(t *testing.T) {
			kobjs := byKey(t, kustomize(t, "overlays/"+overlay))
			hobjs, err := helmChart(t, "", "ci/"+overlay+"-values.yaml")
			if err != nil {
				t.Fatalf("helm: %v", err)
			}
			h := byKey(t, hobjs)
			if d := cmp.Diff(keys(kobjs), keys(h)); d != "" {
				t.Fatalf("objects (-kustomize +helm):\n%s", d)
			}
			for _, k := range keys(kobjs) {
				if d := cmp.Diff(normalize(kobjs[k]), normalize(h[k])); d != "" {
					t.Errorf("%s (-kustomize +helm):\n%s", k, d)
				}
			}
			t.Logf("%d objects identical", len(kobjs))
		})
	}
}

// TestHelmValuesSchema renders the chart with its default values.yaml
// (which Helm checks against values.schema.json) and shows bad values
// refused with the offending path.
func TestHelmValuesSchema(t *testing.T) {
	objs, err := helmChart(t, "")
	if err != nil {
		t.Fatalf("default values: %v", err)
	}
	if len(objs) == 0 {
		t.Fatal("default values rendered nothing")
	}
	tests := []struct {
		name, values, want string
	}{
		{"replicas not a number", "server:\n  replicas: two\n", "/server/replicas"},
		{"negative replicas", "worker:\n  replicas: -1\n", "/worker/replicas"},
		{"unknown log level", "logLevel: loud\n", "/logLevel"},
		{"misspelt key", "servr:\n  replicas: 2\n", "servr"},
		{"temporal address without port", "temporal:\n  address: temporal\n", "/temporal/address"},
		{"redis image on latest", "redis:\n  image: redis:latest\n", "/redis/image"},
		{"unknown secret store", "secretStore: vault\n", "/secretStore"},
		{"task queue with a comma", "worker:\n  taskQueues: [\"a,b\"]\n", "/worker/taskQueues"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := helmChart(t, tt.values)
			if err == nil {
				t.Fatalf("values %q rendered", tt.values)
			}
			if !strings.Contains(err.Error(), "schema") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want a schema error naming %s", err, tt.want)
			}
		})
	}
}
