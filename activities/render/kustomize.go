package render

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// renderKustomize renders a Kustomize source.
func (r *Renderer) renderKustomize(_ context.Context, in toolInput) ([]*unstructured.Unstructured, error) {
	return nil, fmt.Errorf("%w: the kustomize tool is not built yet", ErrNotImplemented)
}
