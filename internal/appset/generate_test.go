package appset

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/windlass-cd/windlass/internal/secretstore"
	"github.com/windlass-cd/windlass/internal/settings"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// clusterStore is a settings store holding two labelled clusters.
func clusterStore(t *testing.T) *settings.Store {
	t.Helper()
	st, err := settings.New(&secretstore.Memory{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []settings.Cluster{
		{Name: "prod-eu", Server: "https://prod-eu.example:6443", BearerToken: "secret-token", Labels: map[string]string{"env": "prod", "region": "eu"}},
		{Name: "staging", Server: "https://staging.example:6443", BearerToken: "secret-token", Labels: map[string]string{"env": "staging"}},
	} {
		if err := st.PutCluster(t.Context(), c); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s (-want +got):\n%s", name, d)
	}
}

// TestGenerateGolden evaluates each testdata/generate/*.yaml set against
// two registered clusters and compares the apps, or the error, with its
// .golden file.
func TestGenerateGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/generate/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no sets: %v", err)
	}
	g := New(clusterStore(t), nil, &secretstore.Memory{})
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var out []byte
			set, err := Parse(data)
			var apps []App
			if err == nil {
				apps, err = g.Generate(t.Context(), set)
			}
			if err != nil {
				if strings.HasPrefix(name, "ok-") {
					t.Fatalf("unexpected error: %v", err)
				}
				out = []byte("error: " + err.Error() + "\n")
			} else {
				if strings.HasPrefix(name, "bad-") {
					t.Fatalf("no error; apps: %+v", apps)
				}
				if out, err = json.MarshalIndent(apps, "", "  "); err != nil {
					t.Fatal(err)
				}
				out = append(out, '\n')
			}
			if strings.Contains(string(out), "secret-token") {
				t.Error("a cluster's credential reached the output")
			}
			golden(t, "generate/"+name+".golden", out)
		})
	}
}

// Each bad set fails with an error of its kind and yields no apps.
func TestGenerateErrorKinds(t *testing.T) {
	list := func(names ...string) string {
		var b strings.Builder
		for _, n := range names {
			b.WriteString("      - name: " + n + "\n")
		}
		return b.String()
	}
	set := func(template, elems string) string {
		return `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: s}
spec:
  generators:
  - list:
      elements:
` + elems + `  template:
    metadata: {name: '` + template + `'}
    spec:
      project: default
      source: {repoURL: 'https://git.example/r.git', path: '{{name}}'}
      destination: {server: 'https://kubernetes.default.svc', namespace: '{{name}}'}
`
	}
	tests := []struct {
		name, set string
		limit     int
		want      error
		msg       string
	}{
		{name: "invalid app name", set: set("{{name}}", list("ok", "Not_Valid")), want: ErrInvalid, msg: "element 1"},
		{name: "same app twice", set: set("app-{{name}}", list("a", "b", "a")), want: ErrDuplicateApp,
			msg: "spec.generators[0] element 0 and spec.generators[0] element 2 both yield app default/app-a"},
		{name: "over the limit", set: set("{{name}}", list("a", "b", "c", "d")), limit: 3, want: ErrTooManyElements,
			msg: "yields 4 elements, more than the limit of 3"},
		{name: "at the limit", set: set("{{name}}", list("a", "b", "c")), limit: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse([]byte(tt.set))
			if err != nil {
				t.Fatal(err)
			}
			apps, err := New(nil, nil, nil, WithLimit(tt.limit)).Generate(t.Context(), s)
			if tt.want == nil {
				if err != nil || len(apps) != 3 {
					t.Fatalf("apps %d, err %v; want 3 apps", len(apps), err)
				}
				return
			}
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("err = %v; want %v with %q", err, tt.want, tt.msg)
			}
			if apps != nil {
				t.Errorf("apps = %+v, want none", apps)
			}
		})
	}
}

// A matrix whose product passes the limit fails before rendering.
func TestMatrixLimit(t *testing.T) {
	s, err := Parse([]byte(`apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: s}
spec:
  generators:
  - matrix:
      generators:
      - list: {elements: [{a: "1"}, {a: "2"}, {a: "3"}]}
      - list: {elements: [{b: "1"}, {b: "2"}]}
  template:
    metadata: {name: 'x-{{a}}-{{b}}'}
    spec:
      project: default
      source: {repoURL: 'https://git.example/r.git', path: p}
      destination: {server: 'https://kubernetes.default.svc', namespace: ns}
`))
	if err != nil {
		t.Fatal(err)
	}
	if apps, err := New(nil, nil, nil, WithLimit(5)).Generate(t.Context(), s); !errors.Is(err, ErrTooManyElements) {
		t.Fatalf("limit 5: apps %d, err %v; want ErrTooManyElements", len(apps), err)
	}
	if apps, err := New(nil, nil, nil, WithLimit(6)).Generate(t.Context(), s); err != nil || len(apps) != 6 {
		t.Fatalf("limit 6: apps %d, err %v; want 6", len(apps), err)
	}
}

func TestSlugifyAndNormalize(t *testing.T) {
	tests := []struct {
		args []any
		want string
	}{
		{[]any{"Feature/Add_Login"}, "feature-add-login"},
		{[]any{10, true, "feature-add-login-page"}, "feature"},
		{[]any{10, false, "feature-add-login-page"}, "feature-ad"},
		{[]any{"--Many   Spaces--"}, "many-spaces"},
	}
	for _, tt := range tests {
		got, err := slugify(tt.args...)
		if err != nil || got != tt.want {
			t.Errorf("slugify(%v) = %q, %v; want %q", tt.args, got, err, tt.want)
		}
	}
	if got := normalize("Team_A/Prod.EU"); got != "team-a-prod.eu" {
		t.Errorf("normalize = %q", got)
	}
}
