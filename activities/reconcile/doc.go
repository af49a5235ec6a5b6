// Package reconcile holds the quick pass: the cheap steps of an app's
// reconcile pass (the project, the ls-remote of every source, and the
// compare when no source moved) in one local activity, so that a pass
// that finds nothing changed records one marker in the app's history
// instead of three.
//
// The quick pass never fails a step for the workflow: it stops at the
// first step that does not succeed and returns what it has, and the
// workflow runs the remaining steps as before, each with its own retries
// and its own error in the app's status. It changes how many round trips
// a pass takes, never what a pass concludes.
package reconcile
