package cluster

import (
	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/manifest"
)

// Activity names of the sync engine: wire contracts, never rename.
const (
	PlanName        = "cluster.Plan"
	ApplyWaveName   = "cluster.ApplyWave"
	WaitWaveName    = "cluster.WaitWave"
	PruneName       = "cluster.Prune"
	DeleteHooksName = "cluster.DeleteHooks"
	DeleteAppName   = "cluster.DeleteApp"
)

// Sync phases, in the order they run. SyncFail runs only when a sync fails;
// PostDelete only when the app is deleted.
const (
	PhasePreSync    = manifest.PhasePreSync
	PhaseSync       = manifest.PhaseSync
	PhasePostSync   = manifest.PhasePostSync
	PhaseSyncFail   = manifest.PhaseSyncFail
	PhasePostDelete = manifest.PhasePostDelete
)

// Further actions of a sync, next to those of Apply.
const (
	ActionPruned        Action = "pruned"
	ActionPruneSkipped  Action = "prune-skipped"
	ActionHookSucceeded Action = "hook-succeeded"
	ActionHookFailed    Action = "hook-failed"
	ActionDeleted       Action = "deleted"
)

// SyncOperation says what one sync does; it takes part in every sync
// engine input.
type SyncOperation struct {
	// SyncID names the sync; hooks created by it carry it, so that a
	// retried activity finds the hooks it already made instead of making
	// new ones.
	SyncID string `json:"syncID"`
	// Prune deletes tracked resources that are no longer rendered.
	Prune bool `json:"prune,omitempty"`
	// Resources limits a selective sync to these resources.
	Resources []appspec.ResourceKey `json:"resources,omitempty"`
	// SyncOptions of the operation, on top of the app's.
	SyncOptions []string `json:"syncOptions,omitempty"`
	// Strategy is "apply" (resources only, hooks skipped) or "hook" (the
	// default: hooks run in their phases).
	Strategy string `json:"strategy,omitempty"`
	DryRun   bool   `json:"dryRun,omitempty"`
}

// Sync strategies.
const (
	StrategyHook  = "hook"
	StrategyApply = "apply"
)

// PlanInput is the input of Plan.
type PlanInput struct {
	Target    Target             `json:"target"`
	Manifests render.ManifestRef `json:"manifests"`
	Operation SyncOperation      `json:"operation"`
	// Project restricts the resource kinds (nil: no restriction).
	Project *appspec.Project `json:"project,omitempty"`
}

// Step is one wave of one phase.
type Step struct {
	Phase string `json:"phase"`
	Wave  int    `json:"wave"`
	// Resources counts the resources and hooks of the step.
	Resources int `json:"resources"`
}

// PlanOutput is the order a sync runs in. It holds no manifests.
type PlanOutput struct {
	// Steps are the PreSync, Sync and PostSync waves in order.
	Steps []Step `json:"steps"`
	// SyncFail are the steps run when the sync fails.
	SyncFail []Step `json:"syncFail,omitempty"`
	// Prune counts the live resources that are no longer rendered, when
	// the operation prunes (else 0: they are not looked for).
	Prune int `json:"prune,omitempty"`
	// PruneLast says to prune after the PostSync phase rather than after
	// the Sync phase.
	PruneLast bool `json:"pruneLast,omitempty"`
	// PruneLastResources counts the prune candidates that carry their own
	// PruneLast=true sync option: they are pruned in a last pass
	// (PrunePassLast) after every wave, the others before PostSync.
	PruneLastResources int `json:"pruneLastResources,omitempty"`
	// Skipped lists the objects that no step applies, with the reason:
	// Skip hooks, unsupported Helm hooks, and hooks not run because of
	// the apply strategy or a selective sync.
	Skipped []ResourceResult `json:"skipped,omitempty"`
	// Applied is the lone Sync wave as the plan applied it, settled (see
	// Plan); nil when the sync applies its steps itself.
	Applied *WaveOutput `json:"applied,omitempty"`
}

// WaveInput is the input of ApplyWave and WaitWave.
type WaveInput struct {
	Target    Target             `json:"target"`
	Manifests render.ManifestRef `json:"manifests"`
	Operation SyncOperation      `json:"operation"`
	Step      Step               `json:"step"`
	// PollMillis is not used: WaitWave watches instead of polling.
	PollMillis int `json:"pollMillis,omitempty"`
	// SettleMillis bounds ApplyWave's settle wait (WithSettleWait): the
	// sync's wait timeout, which then bounds the wave's settling and its
	// WaitWave together. 0: the worker's settle wait alone.
	SettleMillis int64 `json:"settleMillis,omitempty"`
	// HooksOnly makes WaitWave wait for the step's hooks alone: the last
	// step of a sync does not wait for its resources' health, as in
	// Argo CD.
	HooksOnly bool `json:"hooksOnly,omitempty"`
}

// WaveOutput is what a wave did, and its health once it is waited for.
type WaveOutput struct {
	Resources []ResourceResult     `json:"resources"`
	Health    appspec.HealthStatus `json:"health,omitempty"`
	// Settled (ApplyWave) says that every object of the wave is healthy
	// or suspended, as its apply left it or within a few seconds after
	// (WithSettleWait): WaitWave would find the wave done at its first
	// look, so the sync need not run it. Health is then Healthy.
	Settled bool `json:"settled,omitempty"`
	// Failed names the resource that failed the wave, with Message.
	Failed  *appspec.ResourceKey `json:"failed,omitempty"`
	Message string               `json:"message,omitempty"`
	// Omitted counts the resources left out of Resources (MaxResults).
	Omitted int `json:"omitted,omitempty"`
}

// PruneInput is the input of Prune.
type PruneInput struct {
	Target    Target             `json:"target"`
	Manifests render.ManifestRef `json:"manifests"`
	Operation SyncOperation      `json:"operation"`
	// Pass limits the candidates by their own PruneLast option: "" (all),
	// PrunePassEarly (those without it) or PrunePassLast (those with it).
	Pass string `json:"pass,omitempty"`
	// Approved lets Prune delete resources marked Prune=confirm: a user
	// has confirmed the deletion.
	Approved bool `json:"approved,omitempty"`
}

// Prune passes.
const (
	PrunePassEarly = "early"
	PrunePassLast  = "last"
)

// HookCleanupInput is the input of DeleteHooks.
type HookCleanupInput struct {
	Target Target `json:"target"`
	SyncID string `json:"syncID"`
	// Outcome is how the sync ended: "succeeded", "failed" or
	// "terminated". Hooks whose delete policy matches it are deleted; on
	// termination, hooks still running are deleted too.
	Outcome string `json:"outcome"`
	// Manifests, when set, adds the kinds of the app's hooks to those
	// searched (Jobs and Pods always are, and every listable kind when
	// the cluster's discovery is available).
	Manifests *render.ManifestRef `json:"manifests,omitempty"`
}

// HookCleanupOutput lists the hooks DeleteHooks deleted.
type HookCleanupOutput struct {
	Resources []ResourceResult `json:"resources"`
}

// PruneOutput lists what Prune deleted or kept, in deletion order.
type PruneOutput struct {
	Resources []ResourceResult `json:"resources"`
	// Omitted counts the resources left out of Resources (MaxResults).
	Omitted int `json:"omitted,omitempty"`
	// AwaitingApproval lists the resources kept because they are marked
	// Prune=confirm and the prune was not Approved; a confirmed second
	// Prune limited to them (Operation.Resources) deletes them.
	AwaitingApproval []appspec.ResourceKey `json:"awaitingApproval,omitempty"`
}

// Sync outcomes for DeleteHooks.
const (
	OutcomeSucceeded  = "succeeded"
	OutcomeFailed     = "failed"
	OutcomeTerminated = "terminated"
)

// Cascade policies of an app deletion, as kubectl's --cascade.
const (
	CascadeForeground = "foreground"
	CascadeBackground = "background"
	CascadeOrphan     = "orphan"
)

// DeleteAppInput is the input of DeleteApp.
type DeleteAppInput struct {
	Target Target `json:"target"`
	// Cascade is foreground (wait until every resource is gone),
	// background, or orphan (leave the resources, drop the tracking).
	Cascade string `json:"cascade"`
	// Manifests, when set, lets DeleteApp run the PostDelete hooks.
	Manifests *render.ManifestRef `json:"manifests,omitempty"`
	// PollMillis is not used: DeleteApp watches instead of polling.
	PollMillis int `json:"pollMillis,omitempty"`
	// SyncID names the PostDelete hooks DeleteApp creates (default
	// "delete/<project>/<app>"), so that a retry finds them.
	SyncID string `json:"syncID,omitempty"`
	// Project restricts the PostDelete hooks (nil: no restriction).
	Project *appspec.Project `json:"project,omitempty"`
	// Approved lets DeleteApp delete resources marked Delete=confirm.
	Approved bool `json:"approved,omitempty"`
}

// DeleteAppOutput lists what was deleted.
type DeleteAppOutput struct {
	Resources []ResourceResult `json:"resources"`
	// Failed names the PostDelete hook that failed, with Message.
	Failed  *appspec.ResourceKey `json:"failed,omitempty"`
	Message string               `json:"message,omitempty"`
	// AwaitingApproval lists the resources kept because they are marked
	// Delete=confirm and the deletion was not Approved. The PostDelete
	// hooks have not run then: an Approved DeleteApp finishes the job.
	AwaitingApproval []appspec.ResourceKey `json:"awaitingApproval,omitempty"`
	// Omitted counts the resources left out of Resources (MaxResults).
	Omitted int `json:"omitted,omitempty"`
}
