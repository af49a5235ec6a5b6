// Package settings keeps what operators change through the API:
// projects, registered repositories and registered destination clusters.
// Everything lives in a secretstore.Store (Kubernetes Secrets in the
// management namespace in production), so every API replica and worker
// sees the same settings, and credentials stay out of workflow inputs:
// activities resolve them by repository URL or server at run time
// (source.RegisteredAuth, ClusterConfig).
//
// Projects from the projects file are read-only here; the built-in
// default project may be replaced through the API.
package settings
