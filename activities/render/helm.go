package render

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// renderHelm renders a Helm source.
func (r *Renderer) renderHelm(_ context.Context, in toolInput) ([]*unstructured.Unstructured, error) {
	return nil, fmt.Errorf("%w: the helm tool is not built yet", ErrNotImplemented)
}

// renderHelmRepoChart renders a chart from a Helm chart repository
// (source.chart with an HTTP or oci:// repoURL).
func (r *Renderer) renderHelmRepoChart(_ context.Context, in toolInput) ([]*unstructured.Unstructured, error) {
	return nil, fmt.Errorf("%w: charts from Helm repositories are not supported yet", ErrNotImplemented)
}
