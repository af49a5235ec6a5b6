package workflows

import (
	"slices"

	"go.temporal.io/sdk/workflow"
)

// versionBaseline marks an ApplicationWorkflow run or a SyncWorkflow
// started on code that has every change of baselineChanges. Such a
// workflow asks for this one version instead of one for each change it
// meets: every workflow.GetVersion that records its marker also upserts
// the TemporalChangeVersion search attribute (the SDK does), and each
// upsert is a history event and a visibility write on the server. A new
// app and its first sync recorded eight version markers and eight upserts
// before this, their visibility writes a sixth of the Temporal server's
// CPU in B1's profile.
//
// A workflow started before the baseline has no such marker: replaying
// it, or going on with it, this reads workflow.DefaultVersion and every
// change is asked for as before.
const versionBaseline = "baseline-1"

// baselineChanges are the changes versionBaseline stands for: all that
// were versioned when it was cut, each of them at version 1. A change
// made later must not join this list (a workflow started with the
// baseline did not have it); it is asked for on its own, or a new
// baseline is cut.
var baselineChanges = []string{
	versionLocalSpecCheck, versionDeleteApproval, versionLeanReconcile, versionQuietWait, versionLocalCompare,
	versionClusterQueue,
	versionHookCleanupOnSuccess, versionSettledApply, versionLocalPlan, versionQuietOneStep, versionPruneApproval,
}

// versions answers which changes a workflow has. It is read once, at the
// start of a run, before any handler can ask for a change.
type versions struct {
	baseline bool
}

// readVersions reads versionBaseline: the first command of a new run.
func readVersions(ctx workflow.Context) versions {
	return versions{baseline: workflow.GetVersion(ctx, versionBaseline, workflow.DefaultVersion, 1) == 1}
}

// has says whether the workflow takes change (versioned 1 against
// workflow.DefaultVersion): from the baseline when the run started with
// it and change is one of baselineChanges, else from a version of its
// own.
func (v versions) has(ctx workflow.Context, change string) bool {
	if v.baseline && slices.Contains(baselineChanges, change) {
		return true
	}
	return workflow.GetVersion(ctx, change, workflow.DefaultVersion, 1) == 1
}
