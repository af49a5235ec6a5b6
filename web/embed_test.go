package web

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBundleIsFresh fails when the embedded bundle was built from other
// sources than those in this directory: run `make ui` (which `make test`,
// `make build` and `make run` do when the sources changed). Without a built
// bundle it passes only unless WINDLASS_UI_REQUIRED is set (make test sets
// it), since a fresh clone serves the fallback page.
func TestBundleIsFresh(t *testing.T) {
	want, err := SourceHash(".")
	if err != nil {
		t.Fatal(err)
	}
	_, built := Assets()
	if !built {
		if os.Getenv("WINDLASS_UI_REQUIRED") != "" {
			t.Fatal("the web UI is not built: run make ui")
		}
		t.Skip("the web UI is not built (the fallback page is embedded); make ui builds it")
	}
	bi, err := EmbeddedBuildInfo()
	if err != nil {
		t.Fatalf("the embedded UI bundle has no valid stamp (run make ui): %v", err)
	}
	if bi.SourceHash != want {
		t.Fatalf("the embedded UI bundle is stale: built from sources %s, the sources are now %s: run make ui", bi.SourceHash[:12], want[:12])
	}
}

func TestAssetsFallback(t *testing.T) {
	fsys, err := fs.Sub(bundle, fallbackDir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := fs.ReadFile(fsys, "index.html")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "UI not built, run <code>make ui</code>") {
		t.Errorf("the fallback page does not say how to build the UI:\n%s", b)
	}
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSourceHash(t *testing.T) {
	base := map[string]string{
		"index.html": "<html>", "package.json": "{}", "package-lock.json": "{}",
		"tsconfig.json": "{}", "vite.config.ts": "export default {}",
		"src/main.tsx": "main", "src/lib/tree.ts": "tree",
	}
	hashOf := func(t *testing.T, extra map[string]string) string {
		dir := t.TempDir()
		writeFiles(t, dir, base)
		writeFiles(t, dir, extra)
		h, err := SourceHash(dir)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	ref := hashOf(t, nil)
	for _, tc := range []struct {
		name  string
		extra map[string]string
		same  bool
	}{
		{"same sources", nil, true},
		{"a test file is no input", map[string]string{"src/lib/tree.test.ts": "test"}, true},
		{"node_modules is no input", map[string]string{"node_modules/x/index.js": "x"}, true},
		{"the bundle is no input", map[string]string{"bundle/dist/index.html": "x"}, true},
		{"Go files are no input", map[string]string{"embed2.go": "package web"}, true},
		{"a changed source", map[string]string{"src/main.tsx": "main2"}, false},
		{"a new source", map[string]string{"src/new.ts": "new"}, false},
		{"a public file", map[string]string{"public/favicon.svg": "<svg/>"}, false},
		{"the lockfile", map[string]string{"package-lock.json": "{\"v\":2}"}, false},
		// Path and length are hashed too: moving content between files
		// changes the hash.
		{"content moved", map[string]string{"src/main.tsx": "maintree", "src/lib/tree.ts": ""}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := hashOf(t, tc.extra); (got == ref) != tc.same {
				t.Errorf("hash equal to the reference: %v, want %v", got == ref, tc.same)
			}
		})
	}
}

func TestSourceHashMissingInput(t *testing.T) {
	if _, err := SourceHash(t.TempDir()); err == nil || !strings.Contains(err.Error(), "ui sources") {
		t.Errorf("SourceHash of an empty directory: err %v, want a ui sources error", err)
	}
}

func TestReadBuildInfo(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"ok.json": `{"sourceHash":"abc"}`, "empty.json": `{}`, "bad.json": `{`})
	fsys := os.DirFS(dir)
	if bi, err := ReadBuildInfo(fsys, "ok.json"); err != nil || bi.SourceHash != "abc" {
		t.Errorf("ok.json: %+v, %v", bi, err)
	}
	for _, name := range []string{"empty.json", "bad.json", "missing.json"} {
		if _, err := ReadBuildInfo(fsys, name); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
