package render

import (
	"errors"
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
