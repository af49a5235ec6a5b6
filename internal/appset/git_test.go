package appset

import (
	"encoding/json"
	"errors"
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/windlass-cd/windlass/activities/source"
	"github.com/windlass-cd/windlass/internal/testbed"
)

// gitRepo serves a fresh repository over the test bed's HTTP Git server
// and returns its URL, a work tree pushing to it, and a Git reader.
func gitRepo(t *testing.T) (string, *testbed.WorkRepo, GitTrees) {
	t.Helper()
	return gitRepoB(t)
}

func gitRepoB(t testing.TB) (string, *testbed.WorkRepo, GitTrees) {
	t.Helper()
	srv, err := testbed.StartGitServer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	url, err := srv.CreateRepo("team/apps.git")
	if err != nil {
		t.Fatal(err)
	}
	w, err := testbed.NewWorkRepo(t.Context(), t.TempDir(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	git, err := source.New(t.TempDir(), nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return url, w, source.Trees{Git: git}
}

func push(t *testing.T, w *testbed.WorkRepo, files map[string]string, removed ...string) {
	t.Helper()
	for p, c := range files {
		if err := w.WriteFile(p, c); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range removed {
		if err := w.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.CommitAndPush(t.Context(), "change"); err != nil {
		t.Fatal(err)
	}
}

func names(apps []App) []string {
	out := make([]string, len(apps))
	for i, a := range apps {
		out[i] = a.Application.Name
	}
	return out
}

// The git directories generator over a real repository: globs, exclude
// (which wins whatever its order), hidden directories skipped, and a new
// commit read on the next evaluation.
func TestGitDirectories(t *testing.T) {
	url, w, git := gitRepo(t)
	files := map[string]string{".github/workflows/ci.yaml": "x: 1\n", "README.md": "apps\n"}
	for _, d := range []string{"apps/billing", "apps/cart", "apps/search", "apps/users", "apps/web", "apps/experimental"} {
		files[d+"/kustomization.yaml"] = "resources: []\n"
	}
	push(t, w, files)
	set := func(goTemplate bool) ApplicationSet {
		name, path := "{{path.basename}}", "{{path}}"
		if goTemplate {
			name, path = "{{ .path.basename }}", "{{ .path.path }}"
		}
		s, err := Parse([]byte(`apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: dirs}
spec:
  goTemplate: ` + map[bool]string{true: "true", false: "false"}[goTemplate] + `
  generators:
  - git:
      repoURL: ` + url + `
      revision: main
      directories:
      - path: apps/experimental
        exclude: true
      - path: apps/*
  template:
    metadata: {name: '` + name + `'}
    spec:
      project: default
      source: {repoURL: '` + url + `', targetRevision: main, path: '` + path + `'}
      destination: {server: 'https://kubernetes.default.svc', namespace: '` + name + `'}
`))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	g := New(nil, git, nil)
	for _, goTemplate := range []bool{false, true} {
		apps, err := g.Generate(t.Context(), set(goTemplate))
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]string{"billing", "cart", "search", "users", "web"}, names(apps)); d != "" {
			t.Errorf("goTemplate %v: apps (-want +got):\n%s", goTemplate, d)
		}
		if apps[1].Application.Source.Path != "apps/cart" {
			t.Errorf("goTemplate %v: path = %q", goTemplate, apps[1].Application.Source.Path)
		}
	}

	push(t, w, map[string]string{"apps/orders/kustomization.yaml": "resources: []\n"}, "apps/cart/kustomization.yaml")
	apps, err := g.Generate(t.Context(), set(false))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"billing", "orders", "search", "users", "web"}, names(apps)); d != "" {
		t.Errorf("after the commit, apps (-want +got):\n%s", d)
	}
}

// The git files generator reads JSON and YAML files by a ** glob, an
// object being one element and a list one per item, with path params.
func TestGitFiles(t *testing.T) {
	url, w, git := gitRepo(t)
	push(t, w, map[string]string{
		"clusters/eu/prod/config.json":    `{"cluster": {"name": "prod-eu", "address": "https://prod-eu.example"}}`,
		"clusters/us/staging/config.yaml": "- cluster: {name: staging-us, address: https://staging-us.example}\n- cluster: {name: canary-us, address: https://canary-us.example}\n",
		"clusters/us/skip/config.yaml":    "cluster: {name: skipped, address: https://x.example}\n",
		"clusters/notes.txt":              "not a match\n",
	})
	tests := []struct {
		name, goTemplate, appName, ns string
		want                          []string
	}{
		{name: "fasttemplate", goTemplate: "false", appName: "{{cluster.name}}", ns: "{{path.basename}}-{{path[1]}}",
			want: []string{"prod-eu", "staging-us", "canary-us"}},
		{name: "go", goTemplate: "true", appName: "{{ .cluster.name }}", ns: "{{ .path.basename }}-{{ index .path.segments 1 }}",
			want: []string{"prod-eu", "staging-us", "canary-us"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse([]byte(`apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: files}
spec:
  goTemplate: ` + tt.goTemplate + `
  generators:
  - git:
      repoURL: ` + url + `
      files:
      - path: 'clusters/**/config.*'
      - path: 'clusters/us/skip/*'
        exclude: true
  template:
    metadata: {name: '` + tt.appName + `'}
    spec:
      project: default
      source: {repoURL: '` + url + `', path: guestbook}
      destination: {server: 'https://kubernetes.default.svc', namespace: '` + tt.ns + `'}
`))
			if err != nil {
				t.Fatal(err)
			}
			apps, err := New(nil, git, nil).Generate(t.Context(), s)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, names(apps)); d != "" {
				t.Errorf("apps (-want +got):\n%s", d)
			}
			if ns := apps[0].Application.Destination.Namespace; ns != "prod-eu" {
				t.Errorf("namespace of the first = %q, want prod-eu", ns)
			}
		})
	}
}

// A file that is neither an object nor a list of objects, and a repository
// that does not exist, are clear errors.
func TestGitErrors(t *testing.T) {
	url, w, git := gitRepo(t)
	push(t, w, map[string]string{"config/bad.json": `["a", "b"]`})
	for _, tt := range []struct {
		name, repo, file string
		want             error
	}{
		{name: "not objects", repo: url, file: "config/*.json", want: ErrInvalid},
		{name: "no repository", repo: url + "-missing", file: "*.json", want: ErrSource},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse([]byte(`apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: files}
spec:
  generators:
  - git: {repoURL: '` + tt.repo + `', files: [{path: '` + tt.file + `'}]}
  template:
    metadata: {name: x}
    spec: {project: default, source: {repoURL: 'https://git.example/r.git', path: x}, destination: {server: 'https://kubernetes.default.svc', namespace: x}}
`))
			if err != nil {
				t.Fatal(err)
			}
			apps, err := New(nil, git, nil).Generate(t.Context(), s)
			if !errors.Is(err, tt.want) {
				b, _ := json.Marshal(apps)
				t.Fatalf("err = %v (apps %s), want %v", err, b, tt.want)
			}
		})
	}
}
