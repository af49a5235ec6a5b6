// Package cluster holds the activities that touch destination clusters.
//
// The sync engine, called by the SyncWorkflow step by step:
//   - Plan lays out the steps (PreSync, Sync, PostSync waves; SyncFail),
//     counts what to prune, and checks every object against the project
//     before anything is applied.
//   - ApplyWave server-side applies one step (field manager windlass,
//     force) in kind order, creating hooks fresh under names derived from
//     the sync ID, and honours the sync options (Replace, Force, Validate,
//     CreateNamespace with managed namespace metadata, ApplyOutOfSyncOnly,
//     RespectIgnoreDifferences, FailOnSharedResource, dry run).
//   - WaitWave watches the step's objects (dynamic informers) until they
//     are healthy and its hooks have completed, heartbeating and resuming
//     after a worker restart. A Degraded object, a failed hook or a failing
//     Lua health script ends it at once.
//   - Prune deletes tracked objects that are no longer rendered; DeleteHooks
//     deletes a sync's hooks by delete policy; DeleteApp deletes an app's
//     objects by cascade policy and runs its PostDelete hooks.
//
// Compare diffs a server-side-apply dry run against the live objects after
// normalisation and ignoreDifferences (JSON pointers, jq paths, managed
// fields managers), reporting extraneous objects as requiring pruning and,
// on request, a unified diff per resource. ResourceTree returns the managed
// objects and their descendants.
//
// Ownership: every applied object carries the windlass.dev/tracking-id
// annotation, which alone decides which app owns it, and the windlass.dev/app
// label, an index used to list and watch an app's objects. An app taking
// over from Argo CD (Target.ArgoCD) also owns the objects without Windlass
// tracking whose Argo CD tracking names it. Before an apply, the fields of
// client-side apply managers move to windlass (csaupgrade). Errors that
// retrying cannot fix (forbidden by the project, invalid manifests, unknown
// kinds, objects the API server rejects, shared resources with
// FailOnSharedResource) are non-retryable activity errors of a constant
// type; unreachable servers, conflicts and timeouts stay retryable.
//
// Manifests arrive by reference (render.ManifestRef) and are loaded from the
// manifest cache inside the activity; nothing large enters workflow history.
package cluster
