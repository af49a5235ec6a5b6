package cluster

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/windlass-cd/windlass/internal/appspec"
)

func yamlObj(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		t.Fatal(err)
	}
	return u
}

const deploy = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  uid: "1"
  resourceVersion: "7"
  annotations: {kubectl.kubernetes.io/last-applied-configuration: "{}"}
spec:
  replicas: 3
  template:
    spec:
      containers:
      - {name: app, image: app:1, env: [{name: A, value: "1"}, {name: B, value: "2"}]}
      - {name: sidecar, image: side:1}
status: {replicas: 3}
`

func TestNormalizeIgnoreDifferences(t *testing.T) {
	a, err := New(&memLoader{}, clusters{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	managed := []metav1.ManagedFieldsEntry{{
		Manager:  "injector",
		FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"sidecar\"}":{".":{},"f:image":{}},"k:{\"name\":\"app\"}":{"f:env":{"k:{\"name\":\"B\"}":{".":{},"f:name":{},"f:value":{}}}}}}}}}`),
	}}
	tests := []struct {
		name string
		rule appspec.ResourceIgnoreDifferences
		gone []string // substrings that must disappear from the YAML
		kept []string
	}{
		{name: "no rule", gone: []string{"uid", "resourceVersion", "status", "last-applied"}, kept: []string{"replicas: 3", "side:1"}},
		{name: "pointer", rule: appspec.ResourceIgnoreDifferences{JSONPointers: []string{"/spec/replicas", "/spec/template/spec/containers/1/image"}},
			gone: []string{"replicas", "side:1"}, kept: []string{"app:1"}},
		{name: "jq select", rule: appspec.ResourceIgnoreDifferences{JQPathExpressions: []string{`.spec.template.spec.containers[] | select(.name == "app") | .env[0]`}},
			gone: []string{"name: A"}, kept: []string{"name: B"}},
		{name: "managers", rule: appspec.ResourceIgnoreDifferences{ManagedFieldsManagers: []string{"injector"}},
			gone: []string{"side:1", "name: B"}, kept: []string{"name: A", "name: sidecar", "app:1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := a.ignoreSetOf([]appspec.ResourceIgnoreDifferences{tt.rule})
			if err != nil {
				t.Fatal(err)
			}
			out, err := yaml.Marshal(normalize(yamlObj(t, deploy), managed, set))
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range tt.gone {
				if strings.Contains(string(out), g) {
					t.Errorf("%q still in\n%s", g, out)
				}
			}
			for _, k := range tt.kept {
				if !strings.Contains(string(out), k) {
					t.Errorf("%q missing from\n%s", k, out)
				}
			}
		})
	}
	if _, err := a.ignoreSetOf([]appspec.ResourceIgnoreDifferences{{JSONPointers: []string{"spec"}, JQPathExpressions: []string{".["}}}); err == nil {
		t.Fatal("broken rules accepted")
	}
	if _, err := New(&memLoader{}, clusters{}, nil, WithIgnoreDifferences(appspec.ResourceIgnoreDifferences{JQPathExpressions: []string{"]["}})); err == nil {
		t.Fatal("New accepted a broken system-wide rule")
	}
}

func TestRespectIgnored(t *testing.T) {
	a, _ := New(&memLoader{}, clusters{}, nil)
	set, _ := a.ignoreSetOf([]appspec.ResourceIgnoreDifferences{{JSONPointers: []string{"/spec/replicas", "/metadata/labels/extra"}}})
	desired := yamlObj(t, "{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, labels: {extra: x, keep: y}}, spec: {replicas: 1}}")
	live := yamlObj(t, "{apiVersion: apps/v1, kind: Deployment, metadata: {name: web}, spec: {replicas: 5}}")
	got := respectIgnored(desired, live, set)
	want := yamlObj(t, "{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, labels: {keep: y}}, spec: {replicas: 5}}")
	if d := cmp.Diff(want.Object, got.Object); d != "" {
		t.Fatalf("respectIgnored (-want +got):\n%s", d)
	}
}

func TestUnifiedDiff(t *testing.T) {
	d := unifiedDiff(map[string]any{"a": int64(1), "b": "x"}, map[string]any{"a": int64(2), "b": "x"})
	want := "--- live\n+++ desired\n@@ -1,2 +1,2 @@\n-a: 1\n+a: 2\n b: x\n"
	if d != want {
		t.Fatalf("diff =\n%s\nwant\n%s", d, want)
	}
	if unifiedDiff(map[string]any{"a": "b"}, map[string]any{"a": "b"}) != "" {
		t.Fatal("equal objects have a diff")
	}
	big := map[string]any{"data": strings.Repeat("x\n", maxDiffBytes)}
	if d := unifiedDiff(nil, big); len(d) > maxDiffBytes+100 || !strings.HasSuffix(d, "diff truncated\n") {
		t.Fatalf("large diff not truncated: %d bytes", len(d))
	}
}

func TestSecretSafeDiff(t *testing.T) {
	live := yamlObj(t, "{apiVersion: v1, kind: Secret, metadata: {name: db}, data: {password: aHVudGVyMg==, user: YWRtaW4=}}").Object
	desired := yamlObj(t, "{apiVersion: v1, kind: Secret, metadata: {name: db}, stringData: {password: hunter3, user: admin}}").Object
	d := secretSafeDiff(live, desired)
	for _, secret := range []string{"hunter2", "hunter3", "aHVudGVyMg==", "YWRtaW4="} {
		if strings.Contains(d, secret) {
			t.Errorf("the diff shows %q:\n%s", secret, d)
		}
	}
	// The user is the same on both sides and gets one mask; the passwords
	// differ and get two.
	for _, line := range []string{"-  password: ++++++++\n", "-  user: +++++++++\n", "+  password: ++++++++++\n", "+  user: +++++++++\n"} {
		if !strings.Contains(d, line) {
			t.Errorf("the diff lacks %q:\n%s", line, d)
		}
	}
}
