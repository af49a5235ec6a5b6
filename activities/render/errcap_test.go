package render

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
)

// TestRenderErrorCapped: a recursive Helm include fails with a message of
// a few KB that keeps its start, names the truncation and keeps its type.
func TestRenderErrorCapped(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"chart/Chart.yaml":          helmOKChart,
		"chart/templates/_loop.tpl": `{{- define "loop" -}}{{ include "loop" . }}{{- end -}}`,
		"chart/templates/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  x: {{ include \"loop\" . | quote }}\n",
	})
	r, err := NewRenderer(Config{Store: NewMemoryStore(), Git: fixedRoot(filepath.Clean(root)), CacheDir: t.TempDir(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	src := appspec.Source{RepoURL: "https://git.example/r.git", Path: "chart"}
	_, err = r.Render(t.Context(), SingleSource("app", "ns", src, strings.Repeat("a", 40)), true)
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	t.Logf("error (%d bytes): %.300s", len(msg), msg)
	if len(msg) > maxErrorBytes {
		t.Errorf("message of %d bytes, want at most %d", len(msg), maxErrorBytes)
	}
	if !strings.Contains(msg, "error truncated") || !strings.Contains(msg, "templates/cm.yaml") {
		t.Errorf("message %.300q… does not keep its start or name the truncation", msg)
	}
	if !errors.Is(err, ErrChart) || failure.TypeOf(err) != failure.TypeOf(ErrChart) {
		t.Errorf("error type %q, want %q", failure.TypeOf(err), failure.TypeOf(ErrChart))
	}
}

// A render error names files relative to the repository: the worker's
// checkout and cache directories appear in no message.
func TestRenderErrorsHideWorkerPaths(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"kust/kustomization.yaml": "resources: [missing.yaml]\n",
		"chart/Chart.yaml":        "apiVersion: v2\nname: c\nversion: 0.1.0\n",
		"chart/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
		"jsonnet/main.jsonnet":    "import 'missing.libsonnet'\n",
		"yaml/bad.yaml":           "kind: [\n",
	})
	for _, tc := range []struct {
		name string
		src  appspec.Source
		want string
	}{
		{name: "kustomize", src: appspec.Source{Path: "kust"}, want: "missing.yaml"},
		{name: "helm value file", src: appspec.Source{Path: "chart", Helm: &appspec.Helm{ValueFiles: []string{"nope.yaml"}}}, want: "nope.yaml"},
		{name: "jsonnet", src: appspec.Source{Path: "jsonnet"}, want: "missing.libsonnet"},
		{name: "directory", src: appspec.Source{Path: "yaml"}, want: "bad.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.src.RepoURL = "https://example.com/r.git"
			_, err := renderVia(t, root, nil, SingleSource("app", "default", tc.src, "sha"))
			if err == nil {
				t.Fatal("render succeeded")
			}
			real, _ := filepath.EvalSymlinks(root)
			if msg := err.Error(); strings.Contains(msg, root) || strings.Contains(msg, real) || !strings.Contains(msg, tc.want) {
				t.Fatalf("error %q: want %q in it and no worker path (%s)", msg, tc.want, root)
			}
		})
	}
}

// hidePaths makes paths in a checkout relative and drops the worker's
// directories, keeping the error's chain.
func TestHidePaths(t *testing.T) {
	root := filepath.Join(t.TempDir(), "trees", "r-sha")
	cache := filepath.Join(t.TempDir(), "render")
	for _, tc := range []struct{ in, want string }{
		{in: "open " + root + "/app/values.yaml: no such file", want: "open app/values.yaml: no such file"},
		{in: "kustomize may not read \"" + root + "\"", want: "kustomize may not read \".\""},
		{in: "download into " + cache + "/charts/x.tgz: refused", want: "download into charts/x.tgz: refused"},
		{in: "nothing to hide in /etc/passwd", want: "nothing to hide in /etc/passwd"},
	} {
		err := hidePaths(fmt.Errorf("%s: %w", tc.in, ErrBadPath), root, cache)
		if got := strings.TrimSuffix(err.Error(), ": "+ErrBadPath.Error()); got != tc.want || !errors.Is(err, ErrBadPath) {
			t.Errorf("hidePaths(%q) = %q (keeps ErrBadPath: %v); want %q", tc.in, got, errors.Is(err, ErrBadPath), tc.want)
		}
	}
}
