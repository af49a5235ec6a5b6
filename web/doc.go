// Package web is the Windlass web UI: a TypeScript and React single-page
// app (src/, built by `make ui` with Vite into bundle/dist) and the
// embedded bundle that the API serves at /.
//
// A fresh clone builds without Node.js: bundle/dist is generated and
// git-ignored, and until it exists Assets returns bundle/fallback, a page
// saying that the UI is not built. `make ui` stamps the bundle with
// SourceHash of the sources it was built from (bundle/dist/build-info.json),
// and TestBundleIsFresh fails when the embedded bundle is stale.
package web
