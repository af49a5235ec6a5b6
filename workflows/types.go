package workflows

import (
	"time"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/activities/depends"
	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/activities/watch"
	"github.com/windlass-cd/windlass/internal/appspec"
)

// AppInput starts an ApplicationWorkflow. State is set only when the
// workflow continues as new.
type AppInput struct {
	Spec   appspec.Application `json:"spec"`
	Config AppConfig           `json:"config"`
	State  *AppState           `json:"state,omitempty"`
}

// AppConfig holds the global settings an app workflow runs with.
type AppConfig struct {
	// RefreshSeconds is the default refresh interval (default 180).
	RefreshSeconds int `json:"refreshSeconds,omitempty"`
	// SyncTimeoutSeconds bounds the wait for health in a sync (default 300).
	SyncTimeoutSeconds int `json:"syncTimeoutSeconds,omitempty"`
	// DriftWatch makes the app tell its cluster's ClusterWatchWorkflow
	// which kinds it manages, so that drift triggers a refresh.
	DriftWatch bool `json:"driftWatch,omitempty"`
	// HistoryThreshold is the history length at which the workflow
	// continues as new even without the server's suggestion (default 10000).
	HistoryThreshold int `json:"historyThreshold,omitempty"`
}

// AppState is everything an application workflow knows; continue-as-new
// carries it whole.
type AppState struct {
	Spec    appspec.Application `json:"spec"`
	Status  AppStatus           `json:"status"`
	SyncSeq int                 `json:"syncSeq"`
	History []SyncSummary       `json:"history,omitempty"`
	// LastSyncedSHA is the SHA of the last sync that was attempted, and
	// LastFailedSHA that of the last one that failed (automated sync does
	// not retry the same SHA, as in Argo CD).
	LastSyncedSHA string `json:"lastSyncedSHA,omitempty"`
	LastFailedSHA string `json:"lastFailedSHA,omitempty"`
	// HardRefresh carries a hard refresh that arrived while the previous
	// run was continuing as new.
	HardRefresh bool `json:"hardRefresh,omitempty"`
	// Manifests is the last rendered manifest set (for PostDelete hooks).
	Manifests *render.ManifestRef `json:"manifests,omitempty"`
	// Sources are the last reconciled sources with their resolved SHAs.
	Sources []render.SourceRequest `json:"sources,omitempty"`
	// SelfHeal paces automated re-syncs after drift.
	SelfHeal SelfHealState `json:"selfHeal,omitzero"`
	// Refreshes counts the refresh signals received over the app's life.
	Refreshes int64 `json:"refreshes,omitempty"`
	// Runs counts the workflow runs (continue-as-new) of the app.
	Runs int `json:"runs,omitempty"`
	// LastFailedKey is the manifest key (SHA and parameters) of the last
	// failed sync: automated sync does not retry it.
	LastFailedKey string `json:"lastFailedKey,omitempty"`
	// HoldSHA holds automated sync back while the target is still this SHA
	// (set by a forced rollback of an automated app).
	HoldSHA string `json:"holdSHA,omitempty"`
	// WatchedKinds are the kinds last reported to the cluster watch.
	WatchedKinds []watch.GroupKind `json:"watchedKinds,omitempty"`
	// Placement is the task queue of the destination's cluster
	// activities, as last resolved.
	Placement *Placement `json:"placement,omitempty"`
	// QueuedSyncs and QueuedRollbacks are signals carried over a
	// continue-as-new.
	QueuedSyncs     []SyncRequest     `json:"queuedSyncs,omitempty"`
	QueuedRollbacks []RollbackRequest `json:"queuedRollbacks,omitempty"`
	// Notified is what each subscribed trigger condition last notified
	// (notifications.Plan.State); NotifyEvals counts the evaluations.
	Notified    map[string]string `json:"notified,omitempty"`
	NotifyEvals int               `json:"notifyEvals,omitempty"`
	// Notifications are the latest delivery outcomes, newest first.
	Notifications []NotificationRecord `json:"notifications,omitempty"`
	// Moves are the app's former projects, oldest first: the syncs each
	// project ran keep their IDs (SyncIDOf).
	Moves []ProjectMove `json:"moves,omitempty"`
	// Retrack, set by a move, names the project whose tracking the app's
	// live objects still carry: the new run retracks them before its
	// first pass.
	Retrack string `json:"retrack,omitempty"`
	// MovedTo is set in the last state of a run that handed the app over
	// to its workflow in this project.
	MovedTo string `json:"movedTo,omitempty"`
}

// ProjectMove is one move of an app out of Project: syncs numbered up to
// LastSeq ran there, with IDs SyncWorkflowID(Project, name, n).
type ProjectMove struct {
	Project   string    `json:"project"`
	LastSeq   int       `json:"lastSeq"`
	At        time.Time `json:"at,omitzero"`
	Initiator string    `json:"initiator,omitempty"`
}

// MoveRequest is the payload of the move update: the app's spec with its
// new project.
type MoveRequest struct {
	Spec      appspec.Application `json:"spec"`
	Initiator string              `json:"initiator,omitempty"`
}

// MoveResult answers the move update: the app's workflow ID in its new
// project, which has started.
type MoveResult struct {
	ID string `json:"id"`
}

// Placement is where a destination cluster's activities run: TaskQueue
// ("" for the default queue), resolved for Server at ResolvedAt. For a
// destination named by a registered cluster's Name, Server is the server
// the name stood for then.
type Placement struct {
	Server     string    `json:"server"`
	Name       string    `json:"name,omitempty"`
	TaskQueue  string    `json:"taskQueue,omitempty"`
	ResolvedAt time.Time `json:"resolvedAt"`
}

// SelfHealState is the backoff of self-heal syncs: attempt n waits
// 2 s × 3^(n-1), capped at 5 min, after the previous one.
type SelfHealState struct {
	Attempts int       `json:"attempts,omitempty"`
	LastAt   time.Time `json:"lastAt,omitzero"`
}

// AppStatus is the observed state of an application.
type AppStatus struct {
	Sync   appspec.SyncStatus   `json:"sync"`
	Health appspec.HealthStatus `json:"health"`
	// HealthLastTransitionTime is when Health last changed, as the health
	// log recorded it; the API fills it, the workflow never does.
	HealthLastTransitionTime *time.Time               `json:"healthLastTransitionTime,omitempty"`
	Revision                 string                   `json:"revision,omitempty"`
	SHA                      string                   `json:"sha,omitempty"`
	Resources                []appspec.ResourceStatus `json:"resources,omitempty"`
	// OmittedResources counts the resources left out of Resources (a
	// compare keeps cluster.MaxResults); Sync and Health are of them all.
	OmittedResources int `json:"omittedResources,omitempty"`
	// ResourcesRef names the full list in Redis when resources are
	// omitted (cluster.CompareOutput.ResourcesRef); the API serves it.
	ResourcesRef string `json:"resourcesRef,omitempty"`
	// OmittedKinds are the kinds only omitted resources have
	// (cluster.CompareOutput.OmittedKinds), for the drift watch.
	OmittedKinds []appspec.GroupKind `json:"omittedKinds,omitempty"`
	// Conditions are the last compare's warnings, such as rendered
	// objects of an excluded kind (cluster.CompareOutput.Conditions).
	Conditions   []appspec.Condition `json:"conditions,omitempty"`
	ReconciledAt time.Time           `json:"reconciledAt,omitzero"`
	// RevisionMetadata describes SHA's commit (subject, author, date)
	// when a worker has read it.
	RevisionMetadata *appspec.RevisionMetadata `json:"revisionMetadata,omitempty"`
	// OrphanedResources are the objects in the app's namespaces that no
	// app tracks, when its project asks (orphanedResources).
	OrphanedResources *cluster.OrphansOutput `json:"orphanedResources,omitempty"`
	// Message explains an Unknown status (the last reconcile error).
	Message   string     `json:"message,omitempty"`
	Operation *Operation `json:"operation,omitempty"`
	// ReconcileSkipped says the skip-reconcile annotation pauses the app:
	// the rest of the status is as the last pass left it.
	ReconcileSkipped bool `json:"reconcileSkipped,omitempty"`
	// AwaitingDeletionApproval lists the resources marked Delete=confirm
	// that the app's deletion waits to delete (approveDeletion).
	AwaitingDeletionApproval []appspec.ResourceKey `json:"awaitingDeletionApproval,omitempty"`
	// Events are the latest notable events, newest first (bounded): a
	// refused sync or rollback signal, a sync window that held an
	// automated sync back, a terminated operation.
	Events []Event `json:"events,omitempty"`
}

// Event is one notable thing that happened to an app.
type Event struct {
	Time    time.Time `json:"time"`
	Type    string    `json:"type"`
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
}

// Event types.
const (
	EventNormal  = "Normal"
	EventWarning = "Warning"
)

// Operation is the sync in progress, as the operation query shows it.
type Operation struct {
	SyncID    string    `json:"syncID"`
	Phase     string    `json:"phase"`
	Initiator string    `json:"initiator,omitempty"`
	StartedAt time.Time `json:"startedAt,omitzero"`
	// Step is the phase and wave running now, StepIndex its position among
	// Steps.
	Step      *cluster.Step `json:"step,omitempty"`
	StepIndex int           `json:"stepIndex,omitempty"`
	Steps     int           `json:"steps,omitempty"`
	// Resources is the per-resource log so far.
	Resources []cluster.ResourceResult `json:"resources,omitempty"`
	// AwaitingApproval lists the resources marked Prune=confirm that the
	// sync waits to prune (approveDeletion).
	AwaitingApproval []appspec.ResourceKey `json:"awaitingApproval,omitempty"`
	// WaitingFor lists the dependencies (spec.dependsOn) a pending sync
	// waits for before it starts, and why each is not ready.
	WaitingFor []depends.Waiting `json:"waitingFor,omitempty"`
}

// Sync phases.
const (
	PhasePending    = "Pending"
	PhaseRunning    = "Running"
	PhaseSucceeded  = "Succeeded"
	PhaseFailed     = "Failed"
	PhaseTerminated = "Terminated"
)

// SyncRequest is the payload of the sync update and signal.
type SyncRequest struct {
	// Revision overrides the spec's target revision for this sync.
	Revision string `json:"revision,omitempty"`
	Prune    bool   `json:"prune,omitempty"`
	DryRun   bool   `json:"dryRun,omitempty"`
	// Resources makes the sync selective.
	Resources   []appspec.ResourceKey `json:"resources,omitempty"`
	SyncOptions []string              `json:"syncOptions,omitempty"`
	// Strategy is "hook" (default) or "apply".
	Strategy  string `json:"strategy,omitempty"`
	Initiator string `json:"initiator,omitempty"`
}

// SyncAccepted answers the sync and rollback updates: the ID of the
// SyncWorkflow that runs the operation, which has started.
type SyncAccepted struct {
	ID string `json:"id"`
	// WaitingFor is set when the sync has not started: it waits for these
	// dependencies first.
	WaitingFor []depends.Waiting `json:"waitingFor,omitempty"`
}

// RollbackRequest is the payload of the rollback update and signal.
type RollbackRequest struct {
	// ID is a past sync's ID.
	ID string `json:"id"`
	// Force allows a rollback while automated sync is on.
	Force     bool   `json:"force,omitempty"`
	Prune     bool   `json:"prune,omitempty"`
	DryRun    bool   `json:"dryRun,omitempty"`
	Initiator string `json:"initiator,omitempty"`
	// Past is the sync ID names, looked up by the API in Temporal or its
	// archive when the app no longer keeps it among its recent syncs. The
	// API sets it; a caller's value is discarded.
	Past *SyncSummary `json:"past,omitempty"`
}

// TerminateRequest is the payload of the terminateOperation update.
type TerminateRequest struct {
	Initiator string `json:"initiator,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// DeleteRequest is the payload of the delete update.
type DeleteRequest struct {
	// Cascade is foreground (default), background or orphan.
	Cascade   string `json:"cascade,omitempty"`
	Initiator string `json:"initiator,omitempty"`
}

// DeleteResult answers the delete update.
type DeleteResult struct {
	Resources []cluster.ResourceResult `json:"resources,omitempty"`
	// Omitted counts the resources deleted but left out of Resources
	// (cluster.MaxResults).
	Omitted int `json:"omitted,omitempty"`
	// AwaitingApproval lists the resources marked Delete=confirm: the
	// deletion goes on once approveDeletion approves them.
	AwaitingApproval []appspec.ResourceKey `json:"awaitingApproval,omitempty"`
}

// ApproveDeletionRequest is the payload of the approveDeletion update and
// of the signal of the same name to a SyncWorkflow.
type ApproveDeletionRequest struct {
	Initiator string `json:"initiator,omitempty"`
}

// HistoryView answers the history query: the recent syncs the workflow
// keeps; older ones are closed SyncWorkflows in visibility.
type HistoryView struct {
	Recent []SyncSummary `json:"recent"`
	// Moves are the app's former projects (AppState.Moves).
	Moves []ProjectMove `json:"moves,omitempty"`
}

// RefreshRequest is the payload of the refresh signal.
type RefreshRequest struct {
	Hard   bool   `json:"hard,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Live says the refresh is about the live state (the drift watch, the
	// self-heal sweep): it resolves the revision through the ls-remote
	// cache, as a timer's pass does, where other refreshes
	// bypass it (Argo CD compares a watch event's app with its recent
	// revision too).
	Live bool `json:"live,omitempty"`
	// Drift says the drift watch saw another writer change a tracked
	// object: a pass that only drift asked for compares with
	// CompareInput.Drift.
	Drift bool `json:"drift,omitempty"`
	// Event, when set, is recorded in the app's events (its Time is the
	// workflow's): the API's writes to one of the app's resources say so
	// with the caller, and the refresh shows their effect.
	Event *Event `json:"event,omitempty"`
}

// SyncInput starts a SyncWorkflow.
type SyncInput struct {
	ID       string              `json:"id"`
	Spec     appspec.Application `json:"spec"`
	Revision string              `json:"revision"`
	SHA      string              `json:"sha"`
	// Sources are the sources to render, with their SHAs resolved.
	Sources   []render.SourceRequest `json:"sources,omitempty"`
	Operation cluster.SyncOperation  `json:"operation"`
	Project   *appspec.Project       `json:"project,omitempty"`
	DryRun    bool                   `json:"dryRun,omitempty"`
	Initiator string                 `json:"initiator,omitempty"`
	// WaitSeconds bounds the wait for each wave (default 300).
	WaitSeconds int `json:"waitSeconds,omitempty"`
	// ReportProgress makes the sync signal its progress to its parent.
	ReportProgress bool `json:"reportProgress,omitempty"`
	// TaskQueue is the task queue of the destination cluster's activities
	// ("": the workflow's own).
	TaskQueue string `json:"taskQueue,omitempty"`
	// Manifests, when set, are Sources rendered (by the app's reconcile
	// just before an automated sync): the sync does not render again.
	Manifests *render.ManifestRef `json:"manifests,omitempty"`
	// PruneSkipped lists live resources no longer rendered (the app's
	// last compare found them) that a sync without prune leaves: its
	// result lists them as skipped, as Argo CD does. At most
	// maxPruneSkipped.
	PruneSkipped []appspec.ResourceKey `json:"pruneSkipped,omitempty"`
	// Pinned says the revision was chosen (a rollback, a sync of an
	// explicit revision): retry.refresh does not move it.
	Pinned bool `json:"pinned,omitempty"`
}

// SyncSummary is one entry of an app's recent-sync list.
type SyncSummary struct {
	ID       string `json:"id"`
	Revision string `json:"revision"`
	SHA      string `json:"sha"`
	// RevisionMessage is the commit subject of SHA, when known.
	RevisionMessage string `json:"revisionMessage,omitempty"`
	// Sources are the exact sources and SHAs synced; a rollback syncs
	// them again.
	Sources    []render.SourceRequest `json:"sources,omitempty"`
	Prune      bool                   `json:"prune,omitempty"`
	Phase      string                 `json:"phase"`
	Message    string                 `json:"message,omitempty"`
	Initiator  string                 `json:"initiator,omitempty"`
	StartedAt  time.Time              `json:"startedAt,omitzero"`
	FinishedAt time.Time              `json:"finishedAt,omitzero"`
	// Attempts counts the tries of a sync with a retry policy.
	Attempts int `json:"attempts,omitempty"`
}

// SyncResult is the outcome of one sync: its summary plus the ordered log
// of what happened to each resource. It holds no manifests.
type SyncResult struct {
	SyncSummary
	Resources []cluster.ResourceResult `json:"resources,omitempty"`
	// Omitted counts the results left out of Resources, which keeps at
	// most cluster.MaxResults.
	Omitted int                  `json:"omitted,omitempty"`
	Health  appspec.HealthStatus `json:"health,omitempty"`
	// Failed names the resource that failed the sync.
	Failed *appspec.ResourceKey `json:"failed,omitempty"`
}

// SyncProgress is the payload of the progress signal a SyncWorkflow sends
// its parent.
type SyncProgress struct {
	SyncID    string                   `json:"syncID"`
	Step      cluster.Step             `json:"step"`
	StepIndex int                      `json:"stepIndex"`
	Steps     int                      `json:"steps"`
	Resources []cluster.ResourceResult `json:"resources,omitempty"`
	// AwaitingApproval lists the resources whose pruning waits for
	// approval.
	AwaitingApproval []appspec.ResourceKey `json:"awaitingApproval,omitempty"`
}

// AppView answers the status query and the setSpec update.
type AppView struct {
	Spec    appspec.Application `json:"spec"`
	Status  AppStatus           `json:"status"`
	History []SyncSummary       `json:"history,omitempty"`
	// Refreshes counts the refresh signals received; Runs the workflow
	// runs (continue-as-new) so far.
	Refreshes int64 `json:"refreshes,omitempty"`
	Runs      int   `json:"runs,omitempty"`
	// Moves are the app's former projects; MovedTo, on the last view of a
	// workflow that handed the app over, its new project.
	Moves   []ProjectMove `json:"moves,omitempty"`
	MovedTo string        `json:"movedTo,omitempty"`
}

// maxHistory bounds the recent-sync list kept in the workflow; the full
// history is the closed SyncWorkflow executions.
const maxHistory = 20

// maxEvents bounds the events kept in the status.
const maxEvents = 20
