package api

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/windlass-cd/windlass/activities/source"
	"github.com/windlass-cd/windlass/api/auth"
	"github.com/windlass-cd/windlass/internal/appset"
	"github.com/windlass-cd/windlass/internal/settings"
	"github.com/windlass-cd/windlass/internal/testbed"
)

const generatePath = "/api/v1/applicationsets/generate"

// appSetYAML is a set of one generator and a template in project.
func appSetYAML(name, project, generator, appName string) string {
	return `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: ` + name + `}
spec:
  generators:
  - ` + generator + `
  template:
    metadata: {name: '` + appName + `'}
    spec:
      project: ` + project + `
      source: {repoURL: 'https://git.example.com/apps.git', path: '{{name}}'}
      destination: {server: 'https://kubernetes.default.svc', namespace: 'team-a-{{name}}'}
`
}

func previewNames(t *testing.T, res response) []string {
	t.Helper()
	if res.code != http.StatusOK {
		t.Fatalf("generate: %d %s", res.code, res.body)
	}
	var out AppSetPreview
	res.decode(t, &out)
	names := []string{}
	for _, a := range out.Applications {
		names = append(names, a.Application.Project+"/"+a.Application.Name)
	}
	return names
}

// The preview answers the apps a set yields and writes none; bad sets get
// a problem with the status their fault calls for.
func TestGenerateAppSet(t *testing.T) {
	en := newEnv(t)
	if err := en.settings.PutCluster(t.Context(), settings.Cluster{Name: "prod", Server: "https://prod.example.com:6443", BearerToken: "t",
		Labels: map[string]string{"env": "prod"}}); err != nil {
		t.Fatal(err)
	}
	list := appSetYAML("web", "team-a", "list: {elements: [{name: api}, {name: ui}]}", "web-{{name}}")
	if d := cmp.Diff([]string{"team-a/web-api", "team-a/web-ui"}, previewNames(t, en.admin(request{method: http.MethodPost, path: generatePath, body: list}))); d != "" {
		t.Errorf("list (-want +got):\n%s", d)
	}
	clusters := appSetYAML("per-cluster", "team-a", "clusters: {selector: {matchLabels: {env: prod}}}", "{{name}}-web")
	if d := cmp.Diff([]string{"team-a/prod-web"}, previewNames(t, en.admin(request{method: http.MethodPost, path: generatePath, body: clusters}))); d != "" {
		t.Errorf("clusters (-want +got):\n%s", d)
	}
	// Nothing was created.
	if res := en.admin(request{method: http.MethodGet, path: "/api/v1/applications/web-api?project=team-a"}); res.code != http.StatusNotFound {
		t.Errorf("after the preview, GET web-api: %d, want 404", res.code)
	}

	tests := []struct {
		name, body, field string
		code              int
	}{
		{name: "invalid app name", body: appSetYAML("s", "team-a", "list: {elements: [{name: Bad_Name}]}", "{{name}}"), code: http.StatusBadRequest},
		{name: "two elements one app", body: appSetYAML("s", "team-a", "list: {elements: [{name: a}, {name: a}]}", "{{name}}"),
			code: http.StatusUnprocessableEntity},
		{name: "unknown generator", body: appSetYAML("s", "team-a", "clusterDecisionResource: {configMapRef: x}", "{{name}}"),
			code: http.StatusBadRequest, field: "spec.generators[0].clusterDecisionResource"},
		{name: "no Git reader", body: appSetYAML("s", "team-a", "git: {repoURL: 'https://git.example.com/a.git', directories: [{path: '*'}]}", "{{path.basename}}"),
			code: http.StatusNotImplemented},
		{name: "not YAML", body: "{", code: http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := en.admin(request{method: http.MethodPost, path: generatePath, body: tt.body})
			if res.code != tt.code {
				t.Fatalf("code %d, want %d: %s", res.code, tt.code, res.body)
			}
			var pr Problem
			res.decode(t, &pr)
			if pr.Field != tt.field || pr.Detail == "" {
				t.Errorf("problem %+v, want field %q and a detail", pr, tt.field)
			}
		})
	}
}

// With a Git reader the preview reads a real repository's directories.
func TestGenerateAppSetGit(t *testing.T) {
	srv, err := testbed.StartGitServer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	url, err := srv.CreateRepo("apps.git")
	if err != nil {
		t.Fatal(err)
	}
	w, err := testbed.NewWorkRepo(t.Context(), t.TempDir(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"a", "b", "c"} {
		if err := w.WriteFile("envs/"+d+"/kustomization.yaml", "resources: []\n"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.CommitAndPush(t.Context(), "envs"); err != nil {
		t.Fatal(err)
	}
	git, err := source.New(t.TempDir(), nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	en := newEnv(t, func(o *Options) { o.AppSets = appset.New(nil, source.Trees{Git: git}, nil) })
	set := strings.ReplaceAll(appSetYAML("envs", "team-a", "git: {repoURL: '"+url+"', directories: [{path: 'envs/*'}]}", "env-{{name}}"),
		"{{name}}", "{{path.basename}}")
	res := en.admin(request{method: http.MethodPost, path: generatePath, body: set})
	if d := cmp.Diff([]string{"team-a/env-a", "team-a/env-b", "team-a/env-c"}, previewNames(t, res)); d != "" {
		t.Errorf("apps (-want +got):\n%s", d)
	}
	var raw map[string][]map[string]any
	if err := json.Unmarshal(res.body, &raw); err != nil || raw["applications"][0]["generator"] != "spec.generators[0]" {
		t.Errorf("body %s", res.body)
	}
}

// A set is created only under a name that can be a workflow ID and an
// owner reference; a bad name is 400 naming the field, and nothing runs.
func TestCreateAppSetBadName(t *testing.T) {
	en := newEnv(t)
	res := en.do(request{method: http.MethodPost, path: "/api/v1/applicationsets", token: en.tokens[auth.AdminAccount],
		body: appSetYAML("Bad/Name", "team-a", "list: {elements: [{name: x}]}", "x-{{name}}")})
	var pr Problem
	res.decode(t, &pr)
	if res.code != http.StatusBadRequest || pr.Field != "metadata.name" {
		t.Fatalf("create: %d %s", res.code, res.body)
	}
	list := en.do(request{method: http.MethodGet, path: "/api/v1/applicationsets", token: en.tokens[auth.AdminAccount]})
	if strings.Contains(string(list.body), "Bad/Name") {
		t.Errorf("the bad set is listed: %s", list.body)
	}
}
