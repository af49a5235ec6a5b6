// Package render turns a checked-out source into Kubernetes manifests and
// keeps them in the manifest cache (Redis, content-addressed, 24 h TTL).
//
// The Render activity returns only a small ManifestRef (cache key, SHA,
// object count and content digest): rendered manifests never enter workflow
// history. Later activities call Renderer.Load with the ref; when the cache
// has lost the entry, Load renders again from the same SHA. A render that
// breaks a sandbox limit is remembered in the same store for its request
// and limits (for an hour): until then, on a cache miss, Render answers
// the same error without rendering, unless the render is hard.
//
// The tool is the one the source's options name, else detected as Argo CD
// does: Chart.yaml means Helm (v4 SDK, in-process), a kustomization means
// Kustomize (krusty, in-process), a configured plugin's discovery rule
// means that plugin, *.jsonnet means Jsonnet, anything else a directory of
// YAML/JSON. Sources may also be charts from Helm repositories (HTTP or
// OCI), whose silence is bounded by Config.NetTimeout (the dial, the
// handshake and each read; a download that keeps moving is not cut off),
// and several sources may be combined ($ref value files). Nothing is
// ever read outside the checkout, nor written into it: every read of a
// checkout goes through one os.Root (repoRoot), which refuses a symlink
// leading out at any depth of a chain, and anything but a regular file
// within Config.MaxFileBytes, with an error naming the path.
//
// Config-management plugins run on a PluginServer (windlass
// plugin-server), a process without the worker's credentials, when
// Config.PluginServer names one: the PluginClient streams it the plugin
// job and a tar of the checkout over a unix socket, and the server
// unpacks it through an os.Root, refusing anything that escapes.
package render
