// Package render turns a checked-out source into Kubernetes manifests and
// keeps them in the manifest cache (Redis, content-addressed, 24 h TTL).
//
// The Render activity returns only a small ManifestRef (cache key, SHA,
// object count and content digest): rendered manifests never enter workflow
// history. Later activities call Renderer.Load with the ref; when the cache
// has lost the entry, Load renders again from the same SHA.
//
// Tools implemented: plain directories of YAML/JSON (recurse, include and
// exclude globs). Helm, Kustomize, Jsonnet and plugins return a clear
// "not implemented" error until they land.
package render
