// Package health assesses the health of live Kubernetes objects, with
// Argo CD's statuses and semantics. This first cut has the built-in checks
// for Deployment, StatefulSet, DaemonSet, ReplicaSet, Job and Pod; any other
// kind that exists is Healthy. Lua checks and the kstatus fallback come with
// the sync-engine work.
package health
