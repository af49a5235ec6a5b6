package deploy

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/internal/appspec"
)

// Release and namespace of the renders, as the overlays have them.
const (
	releaseName = "windlass"
	namespace   = "windlass"
)

// repoCheckout serves the repository's working tree as every commit.
type repoCheckout string

func (r repoCheckout) Checkout(context.Context, string, string) (string, error) {
	return string(r), nil
}

// renderSource renders one source of the repository with Windlass's own
// renderer, as a worker would.
func renderSource(t *testing.T, src appspec.Source) ([]*unstructured.Unstructured, error) {
	t.Helper()
	r, err := render.NewRenderer(render.Config{
		Store: render.NewMemoryStore(), Git: repoCheckout(root), CacheDir: t.TempDir(),
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	src.RepoURL = "file:///windlass"
	ref, err := r.Render(t.Context(), render.SingleSource(releaseName, namespace, src, "working-tree"), true)
	if err != nil {
		return nil, err
	}
	return r.Load(t.Context(), ref)
}

// kustomize renders deploy/kubernetes/<dir>.
func kustomize(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := renderSource(t, appspec.Source{Path: "deploy/kubernetes/" + dir})
	if err != nil {
		t.Fatalf("kustomize %s: %v", dir, err)
	}
	return objs
}

// helmChart renders deploy/helm/windlass with value files (relative to
// the chart) and inline values.
func helmChart(t *testing.T, valuesYAML string, valueFiles ...string) ([]*unstructured.Unstructured, error) {
	t.Helper()
	return renderSource(t, appspec.Source{Path: "deploy/helm/windlass", Helm: &appspec.Helm{
		ReleaseName: releaseName, ValueFiles: valueFiles, Values: valuesYAML,
	}})
}

// key names an object: group/Kind namespace/name.
func key(o *unstructured.Unstructured) string {
	return fmt.Sprintf("%s/%s %s/%s", o.GroupVersionKind().Group, o.GetKind(), o.GetNamespace(), o.GetName())
}

// byKey indexes objects by key, failing on duplicates.
func byKey(t *testing.T, objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	t.Helper()
	m := make(map[string]*unstructured.Unstructured, len(objs))
	for _, o := range objs {
		k := key(o)
		if _, dup := m[k]; dup {
			t.Fatalf("object %s rendered twice", k)
		}
		m[k] = o
	}
	return m
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
