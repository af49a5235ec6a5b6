// Package cluster holds the activities that touch destination clusters:
// Apply (server-side apply with the tracking annotation, field manager
// "windlass"), Compare (a server-side-apply dry run compared with the live
// object, plus health) and WaitHealthy (a heartbeating wait until the app's
// resources are healthy).
//
// Manifests arrive by reference (render.ManifestRef) and are loaded from the
// manifest cache inside the activity; nothing large enters workflow history.
package cluster
