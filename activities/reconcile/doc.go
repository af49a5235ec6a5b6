// Package reconcile holds an app's reconcile pass, written once: the
// ordered steps project, resolve, render and compare (Run), over an
// interface that reaches the capabilities (Steps).
//
// The workflow runs the pass with steps that are activities. Before that,
// QuickPass runs a prefix of the same steps in one local activity, as far
// as they are cheap, and reports where it stopped (Pass.Next); the
// workflow runs the remaining steps. A pass that finds nothing changed
// then records one marker in the app's history instead of three. The
// quick pass never fails a step for the workflow: a step it stops at runs
// again in the workflow, with its own retries and its own error in the
// app's status.
package reconcile
