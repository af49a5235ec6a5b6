package render

import "github.com/windlass-cd/windlass/internal/appspec"

// Request says what to render. Every field takes part in the cache key.
type Request struct {
	RepoURL   string             `json:"repoURL"`
	SHA       string             `json:"sha"`
	Path      string             `json:"path"`
	Directory *appspec.Directory `json:"directory,omitempty"`
}

// ManifestRef points at rendered manifests in the cache.
type ManifestRef struct {
	Key     string  `json:"key"`
	SHA     string  `json:"sha"`
	Count   int     `json:"count"`
	Digest  string  `json:"digest"`
	Request Request `json:"request"`
}

// RenderInput is the input of the Render activity.
type RenderInput struct {
	Request Request `json:"request"`
	// Hard bypasses the cache.
	Hard bool `json:"hard,omitempty"`
}
