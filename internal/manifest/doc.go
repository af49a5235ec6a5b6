// Package manifest parses Kubernetes manifests (multi-document YAML and JSON,
// List kinds flattened, empty documents skipped) with limits that stop
// oversized input and YAML alias bombs, and reads and writes what the sync
// engine needs on each object. It does no I/O.
//
//   - Tracking: the windlass.dev/tracking-id annotation proves which app
//     owns an object (OwnedBy); the windlass.dev/app label is an index to
//     list and watch an app's objects with a selector. Argo CD's tracking
//     (the argocd.argoproj.io/tracking-id annotation, the instance label)
//     is read for an app that opts in with the app annotations of
//     ArgoTrackingOf.
//   - Hooks (HookOf): Argo CD's hook and hook-delete-policy annotations,
//     and Helm's helm.sh/hook, hook-weight and hook-delete-policy mapped
//     onto phases (pre-install/pre-upgrade to PreSync,
//     post-install/post-upgrade to PostSync; test, delete and rollback
//     hooks are skipped with a note). Hooks with only generateName get a
//     name derived from the sync ID and phase (HookName), so a retried
//     apply finds the hook it made before.
//   - Order: phase (PreSync, Sync, PostSync, SyncFail, PostDelete), wave
//     (sync-wave, else Helm hook-weight), Argo CD's kind order (unknown
//     kinds last), then namespace and name.
//   - Options: sync-options and compare-options annotations and option
//     lists ("Key=Value") merged by key (ParseOptions).
package manifest
