package cluster

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/resourcefilter"
)

var gvrSecrets = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

func secret(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": name},
		"stringData": map[string]any{"k": name},
	}}
}

// TestResourceExclusions syncs an app with a Secret, then excludes Secrets
// (as resource.exclusions or resource.inclusions would): the Secret that is
// no longer rendered is not pruned, a newly rendered one is not applied
// and is warned of, and neither is listed, compared or in the tree.
func TestResourceExclusions(t *testing.T) {
	tests := []struct {
		name, app              string
		exclusions, inclusions []resourcefilter.Rule
	}{
		{name: "excluded", app: "excluded", exclusions: []resourcefilter.Rule{{APIGroups: []string{""}, Kinds: []string{"Secret"}, Clusters: []string{"*"}}}},
		{name: "not included", app: "not-included", inclusions: []resourcefilter.Rule{{APIGroups: []string{"", "apps"}, Kinds: []string{"ConfigMap", "Deployment"}, Clusters: []string{appspec.InClusterServer}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			tg := h.target(tt.app) // apps of one name would share objects across namespaces
			first := h.sync(tg, h.put(configMap("cm"), secret("old")), SyncOperation{SyncID: "x1"})
			if d := cmp.Diff([]string{"Secret/old=created", "ConfigMap/cm=created"}, actions(first.log)); d != "" {
				t.Fatalf("first sync (-want +got):\n%s", d)
			}

			f, err := resourcefilter.New(tt.exclusions, tt.inclusions)
			if err != nil {
				t.Fatal(err)
			}
			h.a.filter = f
			cm := configMap("cm")
			cm.Object["data"] = map[string]any{"changed": "yes"}
			ref := h.put(cm, secret("new"))

			out := h.compare(tg, ref, true)
			wantConds := []appspec.Condition{{Type: appspec.ConditionExcludedResourceWarning,
				Message: "Secret " + h.ns + "/new is not applied: its kind is excluded by resource.exclusions or resource.inclusions"}}
			if d := cmp.Diff(wantConds, out.Conditions); d != "" {
				t.Errorf("conditions (-want +got):\n%s", d)
			}
			var kinds []string
			for _, rs := range out.Resources {
				kinds = append(kinds, rs.Kind+"/"+rs.Name+"="+string(rs.Status))
			}
			if d := cmp.Diff([]string{"ConfigMap/cm=OutOfSync"}, kinds); d != "" {
				t.Errorf("compared resources (-want +got):\n%s", d)
			}

			r := h.sync(tg, ref, SyncOperation{SyncID: "x2", Prune: true})
			if d := cmp.Diff([]string{"ConfigMap/cm=configured"}, actions(r.log)); d != "" {
				t.Errorf("second sync (-want +got):\n%s", d)
			}
			if len(r.pruned) != 0 || r.plan.Prune != 0 {
				t.Errorf("pruned %v (planned %d), want nothing", actions(r.pruned), r.plan.Prune)
			}
			if !slices.ContainsFunc(r.plan.Skipped, func(s ResourceResult) bool {
				return s.Kind == "Secret" && s.Name == "new" && s.Action == ActionSkipped && s.Message == msgExcluded
			}) {
				t.Errorf("skipped = %+v, want Secret new as excluded", r.plan.Skipped)
			}
			if h.get(gvrSecrets, "new") != nil {
				t.Error("the excluded Secret new was applied")
			}
			if h.get(gvrSecrets, "old") == nil {
				t.Error("the excluded Secret old was pruned")
			}
			if got := h.get(gvrConfigMaps, "cm"); got == nil || got.Object["data"].(map[string]any)["changed"] != "yes" {
				t.Errorf("ConfigMap cm not updated: %v", got)
			}

			tree := must[ResourceTreeOutput](h, ResourceTreeName, ResourceTreeInput{Target: tg, Manifests: &ref})
			for _, n := range tree.Nodes {
				if n.Kind == "Secret" {
					t.Errorf("tree holds the excluded %s", n.String())
				}
			}
			if out := h.compare(tg, ref, false); out.Sync != appspec.SyncSynced {
				t.Errorf("after the sync: %s, %+v", out.Sync, out.Resources)
			}
		})
	}
}
