package source

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/customizations"
	"github.com/windlass-cd/windlass/internal/health"
)

// A customizations library in Argo CD's layout, read from a Git server: a
// commit that changes a script shows on the next load, and a server that
// is gone leaves the last good set in place.
func TestTreeCustomizations(t *testing.T) {
	srv := gitServer(t)
	url, w := fixtureRepo(t, srv, "platform/customizations.git", nil)
	c1 := commit(t, w, "one", map[string]string{
		"README.md": "not a script\n",
		"resource_customizations/example.com/Widget/health.lua": `
local os = require("os")
if obj.status ~= nil and obj.status.ready then
  return {status = "Healthy", message = "ready since " .. os.date("!%Y", 0)}
end
return {status = "Progressing", message = "waiting"}`,
		"resource_customizations/example.com/Widget/actions/discovery.lua":   `return {poke = {}}`,
		"resource_customizations/example.com/Widget/actions/poke/action.lua": `return obj`,
		"resource_customizations/example.com/Widget/testdata/ready.yaml":     "kind: Widget\n",
	})
	if err := w.Symlink("escape", "/etc"); err != nil {
		t.Fatal(err)
	}
	commit(t, w, "a link out", nil)

	a := newActivities(t, nil)
	tree := Tree{Git: a, RepoURL: url, Revision: "main", Path: "resource_customizations"}
	lib := customizations.NewLibrary(health.Options{}, nil, customizations.WithSource(tree, tree.String()))
	if err := lib.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	ready := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"}, "status": map[string]any{"ready": true},
	}}
	if r := lib.Assess(ready); r.Status != appspec.HealthHealthy || r.Message != "ready since 1970" {
		t.Fatalf("first load: %+v", r)
	}
	if got := lib.Current().Actions["example.com/Widget"].Actions["poke"]; got != "return obj" {
		t.Errorf("poke action = %q", got)
	}
	first := lib.Status().Revision
	if first == c1 || len(first) != 40 {
		t.Fatalf("revision %q, want the second commit", first)
	}

	c3 := commit(t, w, "two", map[string]string{
		"resource_customizations/example.com/Widget/health.lua": `return {status = "Degraded", message = "changed in git"}`,
	})
	if err := lib.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	if r := lib.Assess(ready); r.Status != appspec.HealthDegraded || r.Message != "changed in git" || lib.Status().Revision != c3 {
		t.Fatalf("after the commit: %+v, status %+v", r, lib.Status())
	}

	// A commit whose script does not compile is not taken.
	commit(t, w, "broken", map[string]string{"resource_customizations/example.com/Widget/health.lua": `return {`})
	if err := lib.Load(t.Context()); err == nil || !strings.Contains(err.Error(), "does not compile") {
		t.Fatalf("broken commit: err = %v", err)
	}
	if r := lib.Assess(ready); r.Message != "changed in git" {
		t.Fatalf("broken commit: %+v, want the last good set", r)
	}

	// Paths that leave the repository are refused.
	for _, p := range []string{"../x", "/etc", "escape"} {
		bad := Tree{Git: a, RepoURL: url, Revision: c3, Path: p}
		if _, _, err := bad.Fetch(t.Context()); err == nil || !strings.Contains(err.Error(), "repository") {
			t.Errorf("path %q: err = %v", p, err)
		}
	}

	// The server is gone: the last good set stays, and the status says so.
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := lib.Load(t.Context()); err == nil {
		t.Fatal("a load from a server that is gone succeeded")
	}
	st := lib.Status()
	if r := lib.Assess(ready); r.Message != "changed in git" || st.Revision != c3 || st.Error == "" || !strings.Contains(st.Error, tree.String()) {
		t.Fatalf("unreachable: %+v, status %+v", r, st)
	}
}
