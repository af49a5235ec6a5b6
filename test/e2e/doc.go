// Package e2e runs Windlass end to end against real parts: the test-bed
// Kubernetes control plane (kwok nodes), Redis, a Git smart-HTTP server, an
// embedded Temporal server, a real worker and the REST API over HTTP.
package e2e
