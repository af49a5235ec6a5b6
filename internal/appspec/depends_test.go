package appspec

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func dependsApp(name string, deps ...string) Application {
	return Application{Name: name, Project: DefaultProject,
		Source:    Source{RepoURL: "https://git.example.org/a.git", Path: "."},
		DependsOn: deps}.Defaulted()
}

func TestValidDependsOn(t *testing.T) {
	tests := []struct {
		name  string
		deps  []string
		field string // "" when valid
		want  string // part of the reason
	}{
		{name: "none"},
		{name: "same project", deps: []string{"db", "cache"}},
		{name: "other project", deps: []string{"infra/db"}},
		{name: "itself", deps: []string{"web"}, field: "dependsOn[0]", want: "cycle: web -> web"},
		{name: "itself qualified", deps: []string{"default/web"}, field: "dependsOn[0]", want: "cycle: web -> web"},
		{name: "twice", deps: []string{"db", "default/db"}, field: "dependsOn[1]", want: "listed twice"},
		{name: "bad name", deps: []string{"DB"}, field: "dependsOn[0]", want: `"DB": name must be a DNS subdomain`},
		{name: "bad project", deps: []string{"In_fra/db"}, field: "dependsOn[0]", want: "project of"},
		{name: "two slashes", deps: []string{"a/b/c"}, field: "dependsOn[0]", want: "<project>/<name>"},
		{name: "empty", deps: []string{""}, field: "dependsOn[0]", want: "is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := dependsApp("web", tt.deps...).Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field || !strings.Contains(fe.Reason, tt.want) {
				t.Fatalf("Validate = %v, want a FieldError on %s saying %q", err, tt.field, tt.want)
			}
		})
	}
}

func TestFindCycle(t *testing.T) {
	saved := map[string][]string{
		"default/a":  {"b"},
		"default/b":  {"c", "infra/db"},
		"default/c":  nil,
		"infra/db":   {"net"},
		"infra/net":  nil,
		"default/x":  {"y"},
		"default/y":  {"x"}, // a cycle already saved, not through the app
		"default/up": {"web"},
		"infra/loop": {"default/web"},
	}
	lookup := func(_ context.Context, r DependencyRef) ([]string, bool, error) {
		d, ok := saved[r.String()]
		return d, ok, nil
	}
	tests := []struct {
		name string
		deps []string
		want string
	}{
		{name: "chain without a cycle", deps: []string{"a"}},
		{name: "missing app", deps: []string{"ghost"}},
		{name: "cycle of two", deps: []string{"up"}, want: "web -> up -> web"},
		{name: "cycle through another project", deps: []string{"infra/loop"}, want: "web -> infra/loop -> web"},
		{name: "other cycle not through the app", deps: []string{"x"}},
		{name: "second dependency closes it", deps: []string{"a", "up"}, want: "web -> up -> web"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FindCycle(t.Context(), dependsApp("web", tt.deps...), lookup)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("cycle (-want +got):\n%s", diff)
			}
		})
	}
	// A longer cycle: saving c with a dependency on a closes c -> a -> b -> c.
	got, err := FindCycle(t.Context(), dependsApp("c", "a"), lookup)
	if err != nil || got != "c -> a -> b -> c" {
		t.Errorf("FindCycle(c -> a) = %q, %v; want c -> a -> b -> c", got, err)
	}
	err = CheckCycle(t.Context(), dependsApp("c", "a"), lookup)
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "dependsOn" || fe.Reason != "cycle: c -> a -> b -> c" {
		t.Errorf("CheckCycle = %v, want a FieldError on dependsOn naming the cycle", err)
	}
	boom := errors.New("unreachable")
	_, err = FindCycle(t.Context(), dependsApp("web", "a"), func(context.Context, DependencyRef) ([]string, bool, error) { return nil, false, boom })
	if !errors.Is(err, boom) {
		t.Errorf("FindCycle with a failing lookup = %v, want it wrapped", err)
	}
}

func TestParseArgoDependsOn(t *testing.T) {
	app, err := ParseApplication([]byte(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web
  annotations:
    windlass.dev/depends-on: " db, infra/net ,"
    example.com/keep: "yes"
spec:
  source: {repoURL: "https://git.example.org/a.git", path: .}
  destination: {server: "https://kubernetes.default.svc", namespace: a}
`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"db", "infra/net"}, app.DependsOn); diff != "" {
		t.Errorf("dependsOn (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"example.com/keep": "yes"}, app.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	_, err = ParseApplication([]byte(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web
  annotations:
    windlass.dev/depends-on: "web"
spec:
  source: {repoURL: "https://git.example.org/a.git", path: .}
  destination: {server: "https://kubernetes.default.svc", namespace: a}
`))
	var fe *FieldError
	if !errors.As(err, &fe) || !strings.Contains(fe.Reason, "cycle: web -> web") {
		t.Errorf("ParseApplication of a self-dependency = %v, want the cycle named", err)
	}
}
