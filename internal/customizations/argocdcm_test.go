package customizations

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/resourcefilter"
)

func TestParseConfigMap(t *testing.T) {
	const healthLua = `return {status = "Healthy"}`
	tests := []struct {
		name    string
		in      string
		want    ConfigMap
		wantErr string
	}{
		{
			name: "a ConfigMap object",
			in: `apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-cm}
data:
  url: https://argo.example.com
  resource.customizations.health.example.com_Widget: |
    return {status = "Healthy"}
  resource.customizations.health._Pod: |
    return {status = "Healthy"}
`,
			want: ConfigMap{Health: map[string]string{"example.com/Widget": healthLua + "\n", "Pod": healthLua + "\n"}},
		},
		{
			name: "a plain data map, in JSON",
			in:   `{"resource.customizations.health.Service": "return {status = \"Healthy\"}"}`,
			want: ConfigMap{Health: map[string]string{"Service": healthLua}},
		},
		{
			name: "actions",
			in: `resource.customizations.actions.apps_Deployment: |
  discovery.lua: |
    return {restart = {}}
  definitions:
  - name: restart
    action.lua: |
      return obj
`,
			want: ConfigMap{Actions: map[string]ActionScripts{"apps/Deployment": {Discovery: "return {restart = {}}\n", Actions: map[string]string{"restart": "return obj\n"}}}},
		},
		{
			name: "ignoreDifferences per kind and for all",
			in: `resource.customizations.ignoreDifferences.admissionregistration.k8s.io_MutatingWebhookConfiguration: |
  jsonPointers:
  - /webhooks/0/clientConfig/caBundle
resource.customizations.ignoreDifferences.ConfigMap: |
  jqPathExpressions: ['.data.generated']
resource.customizations.ignoreDifferences.all: |
  managedFieldsManagers:
  - kube-controller-manager
`,
			want: ConfigMap{IgnoreDifferences: []appspec.ResourceIgnoreDifferences{
				{Group: "", Kind: "ConfigMap", JQPathExpressions: []string{".data.generated"}},
				{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration", JSONPointers: []string{"/webhooks/0/clientConfig/caBundle"}},
				{Group: "*", Kind: "*", ManagedFieldsManagers: []string{"kube-controller-manager"}},
			}},
		},
		{
			name: "exclusions and inclusions",
			in: `resource.exclusions: |
  - apiGroups: ["cilium.io"]
    kinds: ["CiliumIdentity"]
    clusters: ["*"]
resource.inclusions: |
  - apiGroups: ["*"]
    kinds: ["Deployment"]
`,
			want: ConfigMap{
				Exclusions: []resourcefilter.Rule{{APIGroups: []string{"cilium.io"}, Kinds: []string{"CiliumIdentity"}, Clusters: []string{"*"}}},
				Inclusions: []resourcefilter.Rule{{APIGroups: []string{"*"}, Kinds: []string{"Deployment"}}},
			},
		},
		{
			name: "the single-key form",
			in: `resource.customizations: |
  example.com/Widget:
    health.lua: |
      return {status = "Healthy"}
    ignoreDifferences: |
      jsonPointers: [/spec/x]
    useOpenLibs: true
`,
			want: ConfigMap{
				Health:            map[string]string{"example.com/Widget": healthLua + "\n"},
				IgnoreDifferences: []appspec.ResourceIgnoreDifferences{{Group: "example.com", Kind: "Widget", JSONPointers: []string{"/spec/x"}}},
				Ignored:           []string{"resource.customizations example.com/Widget useOpenLibs"},
			},
		},
		{
			name: "resource keys without effect are named",
			in:   "resource.compareoptions: 'ignoreAggregatedRoles: true'\nresource.customizations.useOpenLibs.example.com_Widget: 'true'\n",
			want: ConfigMap{Ignored: []string{"resource.compareoptions", "resource.customizations.useOpenLibs.example.com_Widget"}},
		},
		{name: "not a ConfigMap", in: "kind: Secret\ndata: {}\n", wantErr: "want ConfigMap"},
		{name: "not YAML", in: "a: [", wantErr: "yaml"},
		{name: "a value that is not a string", in: "resource.exclusions: [1]\n", wantErr: "want a string value"},
		{name: "a bad group_kind", in: "resource.customizations.health.a_b_C: x\n", wantErr: "want group_Kind"},
		{name: "a bad ignoreDifferences field", in: "resource.customizations.ignoreDifferences.all: 'jsonPointer: [/a]'\n", wantErr: "resource.customizations.ignoreDifferences.all"},
		{name: "an action without a script", in: "resource.customizations.actions.apps_Deployment: 'definitions: [{name: restart}]'\n", wantErr: "needs a name and an action.lua"},
		{name: "bad exclusions", in: "resource.exclusions: 'kinds: x'\n", wantErr: "resource.exclusions"},
		{name: "exclusions that are not YAML", in: "resource.exclusions: '- kinds: [Secret'\n", wantErr: "resource.exclusions"},
		{name: "an unknown field in inclusions", in: "resource.inclusions: '- kind: [Secret]'\n", wantErr: `resource.inclusions: error unmarshaling JSON: while decoding JSON: json: unknown field "kind"`},
		{name: "a bad glob in exclusions", in: "resource.exclusions: '- clusters: [\"https://[a\"]'\n", wantErr: "resource.exclusions[0].clusters: pattern"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseConfigMap([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got, cmpopts.EquateEmpty(), cmpopts.IgnoreFields(ConfigMap{}, "Filter")); d != "" {
				t.Errorf("config (-want +got):\n%s", d)
			}
			if got.Filter == nil || got.Filter.Empty() != (len(tt.want.Exclusions)+len(tt.want.Inclusions) == 0) {
				t.Errorf("filter = %+v, want one of the exclusions and inclusions", got.Filter)
			}
		})
	}
}

func TestGroupKindKey(t *testing.T) {
	for in, want := range map[string]string{
		"apps_Deployment":         "apps/Deployment",
		"apps/Deployment":         "apps/Deployment",
		"Pod":                     "Pod",
		"_Pod":                    "Pod",
		"*.crossplane.io_*":       "*.crossplane.io/*",
		"argoproj.io_Rollout":     "argoproj.io/Rollout",
		"cert-manager.io_Cert":    "cert-manager.io/Cert",
		"a_b_C":                   "",
		"/Pod":                    "",
		"apps_":                   "",
		"apps/Deploy ment":        "",
		"networking.k8s.io/a/b/c": "",
	} {
		got, err := groupKindKey(in)
		if (err != nil) != (want == "") || got != want {
			t.Errorf("groupKindKey(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
