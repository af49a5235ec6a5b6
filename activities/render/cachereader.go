package render

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// CacheReader loads rendered manifests from the cache only: it never
// renders. It is what processes without Git access use (the API, for an
// app's manifests and diff); workers render, and a miss here answers
// ErrCacheMiss so that the caller can ask the app to render again (a
// refresh) instead.
type CacheReader struct{ Store Store }

// Load returns the manifests ref points at, or an error wrapping
// ErrCacheMiss when the cache no longer holds them.
func (c CacheReader) Load(ctx context.Context, ref ManifestRef) ([]*unstructured.Unstructured, error) {
	b, err := c.Store.Get(ctx, ref.Key)
	if err != nil {
		return nil, fmt.Errorf("manifest cache entry %s: %w", ref.Key, err)
	}
	raw, err := decodeEntry(b)
	if err != nil {
		return nil, fmt.Errorf("manifest cache entry %s: %w", ref.Key, err)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("manifest cache entry %s: %w", ref.Key, err)
	}
	objs := make([]*unstructured.Unstructured, len(items))
	for i := range items {
		objs[i] = &unstructured.Unstructured{}
		if err := objs[i].UnmarshalJSON(items[i]); err != nil {
			return nil, fmt.Errorf("manifest cache entry %s: %w", ref.Key, err)
		}
	}
	return objs, nil
}
