package customizations

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/health"
)

// writeTree writes files under dir, removing those whose content is "".
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, src := range files {
		path := filepath.Join(dir, p)
		if src == "" {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func widget() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"}}}
}

// flaky is a Source that fails while err is set, and serves dir at rev
// otherwise.
type flaky struct {
	dir, rev string
	err      error
}

func (f *flaky) Fetch(context.Context) (string, string, error) { return f.dir, f.rev, f.err }

type counts struct{ ok, failed int }

func (c *counts) CustomizationsLoaded(ok bool) {
	if ok {
		c.ok++
	} else {
		c.failed++
	}
}

func TestLibraryLoads(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"example.com/Widget/health.lua":                   `return {status = "Progressing", message = "one"}`,
		"example.com/Widget/actions/discovery.lua":        `return {poke = {}}`,
		"example.com/Widget/actions/poke/action.lua":      `return obj`,
		"example.com/Widget/actions/testdata/poke.yaml":   `kind: Widget`,
		"Pod/actions/discovery.lua":                       `return {}`,
		"_.example.com/_/actions/nudge/action.lua":        `return obj`,
		"example.com/Widget/testdata/widget.yaml":         `kind: Widget`,
		"example.com/Widget/actions/poke/nested/x/a.lua":  `return obj`,
		"example.com/Widget/actions/poke/action_test.lua": `return obj`,
	})
	src := &flaky{dir: dir, rev: "1111111111111111111111111111111111111111"}
	rec := &counts{}
	lib := NewLibrary(health.Options{}, map[string]ActionScripts{"Pod": {Discovery: "inline"}}, WithSource(src, "repo@main"), WithRecorder(rec))

	if r := lib.Assess(widget()); r.Status != appspec.HealthHealthy || lib.Current() != nil {
		t.Fatalf("before a load: %+v, set %v; want the built-in checks", r, lib.Current())
	}
	if err := lib.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	if r := lib.Assess(widget()); r.Message != "one" {
		t.Fatalf("after the first load: %+v", r)
	}
	wantActions := map[string]ActionScripts{
		"example.com/Widget": {Discovery: `return {poke = {}}`, Actions: map[string]string{"poke": `return obj`}},
		"Pod":                {Discovery: "inline"},
		"*.example.com/*":    {Actions: map[string]string{"nudge": `return obj`}},
	}
	if d := cmp.Diff(wantActions, lib.Current().Actions); d != "" {
		t.Errorf("actions (-want +got):\n%s", d)
	}
	for _, tt := range []struct {
		group, kind, want string // want: an action's name, "" for none
	}{
		{"example.com", "Widget", "poke"},
		{"a.example.com", "Gadget", "nudge"},
		{"example.com", "Gadget", ""},
		{"", "Pod", ""}, // discovery only
		{"", "Service", ""},
		{"b.example.com", "x/Weird", "nudge"},
	} {
		a, ok := lib.Current().ActionsFor(tt.group, tt.kind)
		if _, has := a.Actions[tt.want]; (tt.want != "") != has || (tt.want != "" && !ok) {
			t.Errorf("ActionsFor(%q, %q) = %+v, %v; want action %q", tt.group, tt.kind, a, ok, tt.want)
		}
	}

	// The same revision is not loaded again, even though the tree changed.
	writeTree(t, dir, map[string]string{"example.com/Widget/health.lua": `return {status = "Degraded", message = "two"}`})
	if err := lib.Load(t.Context()); err != nil || lib.Assess(widget()).Message != "one" {
		t.Fatalf("same revision: %v, %+v", err, lib.Assess(widget()))
	}
	// A new revision is.
	src.rev = "2222222222222222222222222222222222222222"
	if err := lib.Load(t.Context()); err != nil || lib.Assess(widget()).Message != "two" {
		t.Fatalf("new revision: %v, %+v", err, lib.Assess(widget()))
	}

	// A source that fails, then a script that does not compile: the last
	// good set stays, and the status says why.
	src.err = errors.New("connection refused")
	if err := lib.Load(t.Context()); err == nil || !strings.Contains(err.Error(), "fetch repo@main: connection refused") {
		t.Fatalf("unreachable: err = %v", err)
	}
	st := lib.Status()
	if lib.Assess(widget()).Message != "two" || st.Revision != src.rev || !strings.Contains(st.Error, "connection refused") || st.FailedAt.IsZero() {
		t.Fatalf("unreachable: %+v, status %+v", lib.Assess(widget()), st)
	}
	src.err = nil
	src.rev = "3333333333333333333333333333333333333333"
	writeTree(t, dir, map[string]string{"example.com/Widget/health.lua": `return {status = `})
	if err := lib.Load(t.Context()); err == nil || !strings.Contains(err.Error(), "example.com/Widget/health.lua: does not compile") {
		t.Fatalf("broken script: err = %v", err)
	}
	if st := lib.Status(); lib.Assess(widget()).Message != "two" || st.Revision != "2222222222222222222222222222222222222222" || !strings.Contains(st.Error, "at 3333333") {
		t.Fatalf("broken script: %+v, status %+v", lib.Assess(widget()), st)
	}
	// Fixed: loaded, and the error is gone.
	writeTree(t, dir, map[string]string{"example.com/Widget/health.lua": `return {status = "Suspended", message = "three"}`})
	if err := lib.Load(t.Context()); err != nil || lib.Assess(widget()).Message != "three" {
		t.Fatalf("fixed: %v, %+v", err, lib.Assess(widget()))
	}
	if st := lib.Status(); st.Error != "" || st.Source != "repo@main" || st.ActionKinds != 3 {
		t.Errorf("fixed: status %+v", st)
	}
	if *rec != (counts{ok: 4, failed: 2}) {
		t.Errorf("recorded %+v, want 4 good loads and 2 failed", *rec)
	}
}

// A directory is read on every load; inline scripts win over the tree's.
func TestLibraryDirAndInline(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"example.com/Widget/health.lua": `return {status = "Degraded", message = "tree"}`,
		"example.com/Gadget/health.lua": `return {status = "Degraded", message = "tree"}`,
	})
	opts := health.Options{Inline: map[string]string{"example.com/Gadget": `return {status = "Healthy", message = "inline"}`}}
	lib := NewLibrary(opts, nil, WithSource(Dir(dir), dir))
	if err := lib.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	gadget := widget()
	gadget.SetKind("Gadget")
	if r := lib.Assess(gadget); r.Message != "inline" {
		t.Errorf("gadget: %+v, want the inline script", r)
	}
	writeTree(t, dir, map[string]string{"example.com/Widget/health.lua": `return {status = "Healthy", message = "edited"}`})
	if err := lib.Load(t.Context()); err != nil || lib.Assess(widget()).Message != "edited" {
		t.Fatalf("edited: %v, %+v", err, lib.Assess(widget()))
	}

	// No source: the inline scripts alone.
	inline := NewLibrary(opts, nil)
	if err := inline.Load(t.Context()); err != nil || inline.Assess(gadget).Message != "inline" || inline.Assess(widget()).Status != appspec.HealthHealthy {
		t.Fatalf("inline only: %v, %+v, %+v", err, inline.Assess(gadget), inline.Assess(widget()))
	}
	// A missing directory fails the load.
	gone := NewLibrary(health.Options{}, nil, WithSource(Dir(filepath.Join(dir, "nope")), "nope"))
	if err := gone.Load(t.Context()); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("missing directory: err = %v", err)
	}
}

// Run reloads at its interval, so that an edit shows without a restart.
func TestLibraryRun(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"example.com/Widget/health.lua": `return {status = "Progressing", message = "before"}`})
	lib := NewLibrary(health.Options{}, nil, WithSource(Dir(dir), dir))
	if err := lib.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { lib.Run(ctx, 10*time.Millisecond); close(done) }()
	writeTree(t, dir, map[string]string{"example.com/Widget/health.lua": `return {status = "Healthy", message = "after"}`})
	deadline := time.Now().Add(10 * time.Second)
	for lib.Assess(widget()).Message != "after" {
		if time.Now().After(deadline) {
			t.Fatalf("the edit did not show: %+v", lib.Assess(widget()))
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
}

// The library's actions are those of its current set: built-ins before a
// load, the tree's Lua actions after, an edited script after a reload;
// inline scripts win and wildcard keys match.
func TestLibraryActions(t *testing.T) {
	names := func(lib *Library, obj *unstructured.Unstructured) []string {
		t.Helper()
		acts, err := lib.Actions().List(obj)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, a := range acts {
			out = append(out, a.Name)
		}
		return out
	}
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"example.com/Widget/actions/discovery.lua":     `return {polish = {}}`,
		"example.com/Widget/actions/polish/action.lua": `obj.metadata.labels = {shine = "1"}; return obj`,
		"example.com/_/actions/discovery.lua":          `return {wave = {}}`,
		"example.com/_/actions/wave/action.lua":        `return obj`,
	})
	inline := map[string]ActionScripts{"example.com/Gadget": {Discovery: `return {tune = {}}`, Actions: map[string]string{"tune": `return obj`}}}
	lib := NewLibrary(health.Options{}, inline, WithSource(Dir(dir), dir))
	deploy := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "d"},
		"spec": map[string]any{"replicas": int64(1)}}}
	if got := names(lib, deploy); !slices.Contains(got, "restart") {
		t.Fatalf("before a load: %v, want the built-ins", got)
	}
	if err := lib.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	gadget := widget()
	gadget.SetKind("Gadget")
	other := widget()
	other.SetKind("Sprocket")
	for _, tc := range []struct {
		obj  *unstructured.Unstructured
		want []string
	}{{widget(), []string{"polish"}}, {gadget, []string{"tune"}}, {other, []string{"wave"}}} {
		if d := cmp.Diff(tc.want, names(lib, tc.obj)); d != "" {
			t.Errorf("%s actions (-want +got):\n%s", tc.obj.GetKind(), d)
		}
	}
	ops, err := lib.Actions().Run(widget(), "polish", nil)
	if err != nil || len(ops) != 1 {
		t.Fatalf("polish: %v, %v", ops, err)
	}
	writeTree(t, dir, map[string]string{"example.com/Widget/actions/discovery.lua": `return {buff = {}, polish = {}}`,
		"example.com/Widget/actions/buff/action.lua": `return obj`})
	if err := lib.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"buff", "polish"}, names(lib, widget())); d != "" {
		t.Errorf("after the edit (-want +got):\n%s", d)
	}
}
