package worker

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/activities/source"
	"github.com/windlass-cd/windlass/internal/customizations"
	"github.com/windlass-cd/windlass/internal/health"
	"github.com/windlass-cd/windlass/internal/secretstore"
	"github.com/windlass-cd/windlass/internal/settings"
	"github.com/windlass-cd/windlass/internal/testbed"
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

	lib, err := newLibrary(CustomizationsConfig{Dir: dir}, src, nil, nil, nil, log)
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
		if _, err := newLibrary(c, src, nil, nil, nil, log); err == nil {
			t.Errorf("%s: no error", name)
		}
	}

	lib, err = newLibrary(CustomizationsConfig{RepoURL: "http://127.0.0.1:1/lib.git", Path: "resource_customizations"}, src, nil, nil, nil, log)
	if err != nil {
		t.Fatalf("unreachable repository: %v", err)
	}
	st := lib.Status()
	if r := lib.Assess(widget); r.Message != "" || st.Error == "" || !strings.Contains(st.Source, "127.0.0.1:1/lib.git@HEAD/resource_customizations") {
		t.Errorf("unreachable repository: %+v, status %+v", r, st)
	}
}

// A source set through the settings is loaded at the next reload, without
// a restart; a commit that changes a script shows; a broken commit keeps
// the last good set; clearing the setting goes back to the built-in
// checks; and a worker's flags win over the setting.
func TestLibraryFromSettings(t *testing.T) {
	ctx := t.Context()
	srv, err := testbed.StartGitServer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	url, err := srv.CreateRepo("platform/lib.git")
	if err != nil {
		t.Fatal(err)
	}
	w, err := testbed.NewWorkRepo(ctx, t.TempDir(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	const script = "resource_customizations/example.com/Widget/health.lua"
	push := func(msg, body string) string {
		t.Helper()
		if err := w.WriteFile(script, body); err != nil {
			t.Fatal(err)
		}
		sha, err := w.CommitAndPush(ctx, msg)
		if err != nil {
			t.Fatal(err)
		}
		return sha
	}
	c1 := push("one", `return {status = "Degraded", message = "one"}`)

	src, err := source.New(t.TempDir(), nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	store, err := settings.New(&secretstore.Memory{})
	if err != nil {
		t.Fatal(err)
	}
	widget := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"}}}
	lib, err := newLibrary(CustomizationsConfig{}, src, store, nil, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	load := func(step, wantMsg, wantRev string, wantErr bool) customizations.Status {
		t.Helper()
		err := lib.Load(ctx)
		st := lib.Status()
		if (err != nil) != wantErr || (st.Error != "") != wantErr {
			t.Fatalf("%s: load error %v, status %+v", step, err, st)
		}
		if r := lib.Assess(widget); r.Message != wantMsg || st.Revision != wantRev {
			t.Fatalf("%s: health %+v, status %+v; want message %q at %q", step, r, st, wantMsg, wantRev)
		}
		return st
	}
	if st := load("nothing set", "", "", false); st.Source != "" || st.Origin != "" {
		t.Errorf("nothing set: status %+v", st)
	}

	if err := store.PutCustomizations(ctx, settings.CustomizationsSource{RepoURL: url, Path: "resource_customizations", Revision: "main"}); err != nil {
		t.Fatal(err)
	}
	st := load("set", "one", c1, false)
	if st.Origin != customizations.OriginSettings || !strings.Contains(st.Source, "platform/lib.git@main/resource_customizations") {
		t.Errorf("set: status %+v", st)
	}
	c2 := push("two", `return {status = "Degraded", message = "two"}`)
	load("new commit", "two", c2, false)
	push("broken", `return {`)
	load("broken commit", "two", c2, true)
	c4 := push("fixed", `return {status = "Degraded", message = "four"}`)
	load("fixed", "four", c4, false)

	// Another path of the same repository, at the same commit, is news.
	if err := store.PutCustomizations(ctx, settings.CustomizationsSource{RepoURL: url, Path: "nowhere", Revision: "main"}); err != nil {
		t.Fatal(err)
	}
	load("other path", "four", c4, true)

	if err := store.PutCustomizations(ctx, settings.CustomizationsSource{}); err != nil {
		t.Fatal(err)
	}
	if st := load("cleared", "", "", false); st.Source != "" || st.Origin != "" {
		t.Errorf("cleared: status %+v", st)
	}

	// The flags win.
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "example.com", "Widget"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "example.com", "Widget", "health.lua"), []byte(`return {status = "Degraded", message = "flag"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := store.PutCustomizations(ctx, settings.CustomizationsSource{RepoURL: url, Path: "resource_customizations"}); err != nil {
		t.Fatal(err)
	}
	lib, err = newLibrary(CustomizationsConfig{Dir: dir}, src, store, nil, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if st := load("flags", "flag", "", false); st.Origin != customizations.OriginFlags || st.Source != dir {
		t.Errorf("flags: status %+v", st)
	}
}
