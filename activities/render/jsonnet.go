package render

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// renderJsonnet renders a Jsonnet source.
func (r *Renderer) renderJsonnet(_ context.Context, in toolInput) ([]*unstructured.Unstructured, error) {
	return nil, fmt.Errorf("%w: the jsonnet tool is not built yet", ErrNotImplemented)
}
