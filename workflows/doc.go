// Package workflows is Windlass's deterministic orchestration:
//
//   - ApplicationWorkflow, one long-running entity per application (ID
//     app/<project>/<name>), which refreshes on a jittered timer or a refresh
//     signal, compares desired and live state, publishes its status in
//     search attributes and a memo, answers the status query, and runs syncs
//     (manual, through the sync update, or automated);
//   - SyncWorkflow, a child per sync operation (ID
//     sync/<project>/<name>/<n>): render, apply, wait until healthy.
//
// Workflow code does no I/O and touches no clock, randomness or map order:
// every side effect is an activity called through the typed helpers in
// calls.go. workflowcheck runs in CI. A change to the logic of a running
// workflow follows the versioning rule in docs/architecture.md ("Changing
// workflow code"), and the replay test replays every release's histories.
package workflows
