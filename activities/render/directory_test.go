package render

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/windlass-cd/windlass/internal/appspec"
)

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func cm(name string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\n"
}

func TestRenderDirectory(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"a.yaml":          cm("a"),
		"b.yml":           cm("b") + "---\n" + cm("b2"),
		"c.json":          `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`,
		"notes.txt":       "not a manifest",
		"sub/d.yaml":      cm("d"),
		".hidden/e.yaml":  cm("e"),
		"sub/deep/f.yaml": cm("f"),
	})
	tests := []struct {
		name string
		opts *appspec.Directory
		want []string
	}{
		{"top level only", nil, []string{"a", "b", "b2", "c"}},
		{"recurse skips hidden dirs", &appspec.Directory{Recurse: true}, []string{"a", "b", "b2", "c", "d", "f"}},
		{"include", &appspec.Directory{Recurse: true, Include: "*.yaml"}, []string{"a", "d", "f"}},
		{"include brace list", &appspec.Directory{Recurse: true, Include: "{a.yaml,sub/*.yaml}"}, []string{"a", "d"}},
		{"exclude", &appspec.Directory{Recurse: true, Exclude: "sub/*"}, []string{"a", "b", "b2", "c", "f"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := renderDirectory(toolInput{Root: root, Dir: root}, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range objs {
				got = append(got, o.GetName())
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Fatalf("objects (-want +got):\n%s", d)
			}
		})
	}
}

func TestAppDirAndTool(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	writeFiles(t, root, map[string]string{
		"plain/cm.yaml":                cm("x"),
		"chart/Chart.yaml":             "apiVersion: v2\nname: c\nversion: 0.1.0\n",
		"kust/kustomization.yaml":      "resources: []\n",
		"jn/main.jsonnet":              "{}",
		"file.yaml":                    cm("f"),
		"plain/nested/kustomization.x": "",
	})
	if err := os.Symlink(outside, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path, tool string
		err        error
	}{
		{path: "plain", tool: "directory"},
		{path: ".", tool: "directory"},
		{path: "chart", tool: "helm"},
		{path: "kust", tool: "kustomize"},
		{path: "jn", tool: "jsonnet"},
		{path: "missing", err: ErrPathNotFound},
		{path: "file.yaml", err: ErrPathNotFound},
		{path: "../etc", err: ErrBadPath},
		{path: "escape", err: ErrBadPath},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			dir, err := appDir(root, tt.path)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("appDir() error = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := (&Renderer{}).detectTool(t.Context(), root, dir); got != tt.tool {
				t.Fatalf("detectTool() = %q, want %q", got, tt.tool)
			}
		})
	}
}
