package render

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// PluginConfig configures a config-management plugin.
type PluginConfig struct {
	Name string `json:"name"`
}

// discoverPlugin returns the first configured plugin whose discovery rule
// matches dir.
func (r *Renderer) discoverPlugin(dir string) (PluginConfig, bool) {
	return PluginConfig{}, false
}

// renderPlugin runs a plugin's generate command.
func (r *Renderer) renderPlugin(_ context.Context, in toolInput) ([]*unstructured.Unstructured, error) {
	return nil, fmt.Errorf("%w: config-management plugins are not built yet", ErrNotImplemented)
}
