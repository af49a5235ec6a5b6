package deploy

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The front door's grants: the chart's watchApplications and the
// Kustomize component give the server the same role on Applications (the
// chart binds it in each watched namespace, the component cluster-wide),
// the same Lease role and the same setting.
func TestFrontDoorGrants(t *testing.T) {
	h, err := helmChart(t, "watchApplications:\n  enabled: true\n  namespaces: [argocd, team-a]\n", "ci/dev-values.yaml")
	if err != nil {
		t.Fatalf("helm: %v", err)
	}
	hobjs, kobjs := byKey(t, h), byKey(t, kustomize(t, "../../test/deploy/testdata/frontdoor"))
	base := byKey(t, kustomize(t, "overlays/dev"))

	for _, k := range []string{
		"rbac.authorization.k8s.io/ClusterRole /windlass-server-applications",
		"rbac.authorization.k8s.io/Role windlass/windlass-server-frontdoor-lease",
		"rbac.authorization.k8s.io/RoleBinding windlass/windlass-server-frontdoor-lease",
		"/ConfigMap windlass/windlass-config",
	} {
		if hobjs[k] == nil || kobjs[k] == nil {
			t.Fatalf("%s: rendered by helm %v, by kustomize %v", k, hobjs[k] != nil, kobjs[k] != nil)
		}
		if d := cmp.Diff(normalize(kobjs[k]), normalize(hobjs[k])); d != "" && !strings.Contains(k, "ConfigMap") {
			t.Errorf("%s (-kustomize +helm):\n%s", k, d)
		}
	}
	rules, _, _ := unstructured.NestedSlice(hobjs["rbac.authorization.k8s.io/ClusterRole /windlass-server-applications"].Object, "rules")
	if d := cmp.Diff([]any{map[string]any{"apiGroups": []any{"argoproj.io"}, "resources": []any{"applications", "appprojects"},
		"verbs": []any{"get", "list", "watch", "update", "patch"}}}, rules); d != "" {
		t.Errorf("rules on applications (-want +got):\n%s", d)
	}
	for _, ns := range []string{"argocd", "team-a"} {
		rb := hobjs["rbac.authorization.k8s.io/RoleBinding "+ns+"/windlass-server-applications"]
		if rb == nil {
			t.Fatalf("no RoleBinding of the server in the watched namespace %s", ns)
		}
		if sub := rb.Object["subjects"].([]any)[0].(map[string]any); sub["name"] != "windlass-server" || sub["namespace"] != namespace {
			t.Errorf("RoleBinding in %s binds %v", ns, sub)
		}
	}
	if kobjs["rbac.authorization.k8s.io/ClusterRoleBinding /windlass-server-applications"] == nil {
		t.Error("the component does not bind the role")
	}
	for objs, want := range map[*map[string]*unstructured.Unstructured]string{&hobjs: "argocd,team-a", &kobjs: "argocd"} {
		if got, _, _ := unstructured.NestedString((*objs)["/ConfigMap windlass/windlass-config"].Object, "data", "WINDLASS_WATCH_APPLICATIONS"); got != want {
			t.Errorf("WINDLASS_WATCH_APPLICATIONS = %q, want %q", got, want)
		}
	}
	// Off (the default), nothing of it is rendered.
	for k := range base {
		if strings.Contains(k, "applications") || strings.Contains(k, "frontdoor") {
			t.Errorf("%s rendered with the front door off", k)
		}
	}
	if _, ok := base["/ConfigMap windlass/windlass-config"].Object["data"].(map[string]any)["WINDLASS_WATCH_APPLICATIONS"]; ok {
		t.Error("WINDLASS_WATCH_APPLICATIONS set with the front door off")
	}
}

func TestFrontDoorValues(t *testing.T) {
	for _, tc := range []struct{ name, values, want string }{
		{"namespace not a DNS label", "watchApplications:\n  enabled: true\n  namespaces: [Not_OK]\n", "/watchApplications/namespaces/0"},
		{"enabled without namespaces", "watchApplications:\n  enabled: true\n", "watchApplications.namespaces must name at least one namespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := helmChart(t, tc.values); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one naming %s", err, tc.want)
			}
		})
	}
}
