// Package metrics is Windlass's Prometheus instrumentation: one registry per
// process, served at /metrics by every role.
//
// The families are:
//
//   - windlass_sync_total{result} and windlass_sync_duration_seconds{result}:
//     every finished SyncWorkflow, counted by a worker interceptor through
//     the replay-aware workflow metrics handler (a replayed sync is not
//     counted twice). result is Succeeded, Failed, Terminated or Error.
//   - windlass_reconcile_duration_seconds: one application reconcile pass
//     (project, resolve, render, compare), recorded by the workflow through
//     the same handler.
//   - windlass_render_cache_requests_total{result=hit|miss}: manifest cache
//     reads; the hit ratio is hit / (hit + miss).
//   - windlass_render_duration_seconds{tool}: one source rendered by a tool
//     (helm, kustomize, directory, jsonnet, plugin); cache hits are not
//     renders.
//   - windlass_apply_requests_total{dry_run}: apply requests sent to
//     clusters (server-side apply, replace or create); rate() is the apply
//     QPS.
//   - windlass_apps{sync_status,health_status}: running applications by
//     status, counted in Temporal visibility by the API role (see WatchApps).
//   - temporal_*: the Temporal SDK's own metrics (requests, polls, task
//     latencies, slots), through the client.MetricsHandler of Temporal.
//   - go_* and process_*.
//
// Recording methods are safe on a nil *Metrics, which records nothing, so
// activities take a metrics dependency without requiring one.
package metrics
