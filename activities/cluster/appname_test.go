package cluster

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/manifest"
)

// TestDottedAppNames syncs, compares and deletes apps named with dots, one
// as long as a name may be, whose app label is then a digest: the label
// finds the app's objects and the tracking annotation proves them its.
func TestDottedAppNames(t *testing.T) {
	long := strings.Repeat(strings.Repeat("a", 62)+".", 4)[:appspec.MaxAppName-1] + "z"
	for _, app := range []string{"example.guestbook", long} {
		t.Run(fmt.Sprintf("%d characters", len(app)), func(t *testing.T) {
			h := newHarness(t)
			tg, _ := h.synced(app, "guestbook.yaml", "sync/default/"+app+"/1")
			dep := h.get(gvrDeployments, "guestbook-ui")
			if dep == nil || !manifest.OwnedBy("default", app, dep) || dep.GetLabels()[manifest.AppLabel] != manifest.AppLabelValue("default", app) {
				t.Fatalf("deployment not tracked: %v", dep)
			}

			// The ConfigMap, no longer rendered, is found by the label.
			var kept []*unstructured.Unstructured
			for _, o := range h.fixture("guestbook.yaml") {
				if o.GetKind() != "ConfigMap" {
					kept = append(kept, o)
				}
			}
			ref := h.put(kept...)
			c := h.compare(tg, ref, false)
			var prune []string
			for _, r := range c.Resources {
				if r.RequiresPruning {
					prune = append(prune, r.Kind+"/"+r.Name)
				}
			}
			if c.Sync != appspec.SyncOutOfSync || fmt.Sprint(prune) != "[ConfigMap/guestbook-config]" {
				t.Fatalf("compare = %s, to prune %v: %+v", c.Sync, prune, c.Resources)
			}

			out := must[DeleteAppOutput](h, DeleteAppName, DeleteAppInput{Target: tg, Cascade: CascadeForeground})
			if len(out.Resources) != 3 || h.get(gvrDeployments, "guestbook-ui") != nil || h.get(gvrConfigMaps, "guestbook-config") != nil {
				t.Fatalf("delete = %+v, want the three resources gone", out.Resources)
			}
		})
	}
}
