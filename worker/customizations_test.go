package worker

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/activities/source"
	"github.com/windlass-cd/windlass/internal/health"
)

// A directory or inline script that does not load stops the worker; a
// repository that cannot be reached does not: the worker starts with the
// built-in checks, and the status says why.
func TestNewLibrary(t *testing.T) {
	src, err := source.New(t.TempDir(), nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "example.com", "Widget"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "example.com", "Widget", "health.lua"), []byte(`return {status = "Degraded", message = "from the tree"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	widget := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"}}}
	log := slog.New(slog.DiscardHandler)

	lib, err := newLibrary(CustomizationsConfig{Dir: dir}, src, nil, nil, log)
	if err != nil {
		t.Fatal(err)
	}
	if r := lib.Assess(widget); r.Message != "from the tree" {
		t.Errorf("directory: %+v", r)
	}

	for name, c := range map[string]CustomizationsConfig{
		"missing directory": {Dir: filepath.Join(dir, "nope")},
		"broken inline":     {Health: health.Options{Inline: map[string]string{"Pod": "return {"}}},
		"both sources":      {Dir: dir, RepoURL: "http://127.0.0.1:1/lib.git"},
	} {
		if _, err := newLibrary(c, src, nil, nil, log); err == nil {
			t.Errorf("%s: no error", name)
		}
	}

	lib, err = newLibrary(CustomizationsConfig{RepoURL: "http://127.0.0.1:1/lib.git", Path: "resource_customizations"}, src, nil, nil, log)
	if err != nil {
		t.Fatalf("unreachable repository: %v", err)
	}
	st := lib.Status()
	if r := lib.Assess(widget); r.Message != "" || st.Error == "" || !strings.Contains(st.Source, "127.0.0.1:1/lib.git@HEAD/resource_customizations") {
		t.Errorf("unreachable repository: %+v, status %+v", r, st)
	}
}
