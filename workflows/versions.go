package workflows

import (
	"fmt"
	"slices"

	"go.temporal.io/sdk/workflow"
)

// versionBaseline marks an ApplicationWorkflow run or a SyncWorkflow
// started on code that has the changes of baselineChanges. Such a
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
//
// The marker's version is the baseline's level: a run started at level n
// has the changes of baselineChanges[1] to [n]. A new level is cut by
// raising the maximum that readVersions asks for and adding its changes;
// a run started at a lower level asks for those on its own. A sync takes
// its level from its input instead of a marker (syncVersions).
const versionBaseline = "baseline-1"

// baselineChanges are, by level, the changes versionBaseline stands for,
// each at version 1: level 1 holds all that were versioned when the
// baseline was cut, level 2 the coalesced status publish, level 3 the
// quick pass, level 4 its manifest-cache lookup, level 5 the last wave
// that does not wait and the status shown while a sync runs. A change made after a
// level was cut must not join it (a workflow started at that level did
// not have it); it is asked for on its own, or joins a new level.
var baselineChanges = [][]string{
	1: {
		versionLocalSpecCheck, versionDeleteApproval, versionLeanReconcile, versionQuietWait, versionLocalCompare,
		versionClusterQueue,
		versionHookCleanupOnSuccess, versionSettledApply, versionLocalPlan, versionQuietOneStep, versionPruneApproval,
	},
	2: {versionCoalescedPublish},
	3: {versionQuickPass},
	4: {versionQuickRender},
	5: {versionLastWaveNoWait, versionAppliedStatus},
}

// baselineLevel is the level a new run starts at.
const baselineLevel = 5

// versions answers which changes a workflow has. It is read once, at the
// start of a run, before any handler can ask for a change.
type versions struct {
	baseline workflow.Version
}

// readVersions reads versionBaseline: the first command of a new run.
func readVersions(ctx workflow.Context) versions {
	return versions{baseline: workflow.GetVersion(ctx, versionBaseline, workflow.DefaultVersion, baselineLevel)}
}

// syncVersions are a SyncWorkflow's: the baseline level its input
// carries, else (a sync started before SyncInput.Baseline) its own
// version marker. The input is fixed for the run, so a replay takes the
// same path. A level this code does not have fails the workflow task, as
// workflow.GetVersion does for a version it does not support, until a
// worker with the newer code takes it.
func syncVersions(ctx workflow.Context, in SyncInput) versions {
	if in.Baseline <= 0 {
		return readVersions(ctx)
	}
	if in.Baseline > baselineLevel {
		panic(fmt.Sprintf("the sync was started at baseline level %d; this worker's code has levels up to %d", in.Baseline, baselineLevel))
	}
	return versions{baseline: workflow.Version(in.Baseline)}
}

// has says whether the workflow takes change (versioned 1 against
// workflow.DefaultVersion): from the baseline when the run started at a
// level that holds change, else from a version of its own.
func (v versions) has(ctx workflow.Context, change string) bool {
	for level := workflow.Version(1); level <= v.baseline && int(level) < len(baselineChanges); level++ {
		if slices.Contains(baselineChanges[level], change) {
			return true
		}
	}
	return workflow.GetVersion(ctx, change, workflow.DefaultVersion, 1) == 1
}
