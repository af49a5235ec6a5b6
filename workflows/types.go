package workflows

import (
	"time"

	"github.com/windlass-cd/windlass/activities/cluster"
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
}

// AppStatus is the observed state of an application.
type AppStatus struct {
	Sync         appspec.SyncStatus       `json:"sync"`
	Health       appspec.HealthStatus     `json:"health"`
	Revision     string                   `json:"revision,omitempty"`
	SHA          string                   `json:"sha,omitempty"`
	Resources    []appspec.ResourceStatus `json:"resources,omitempty"`
	ReconciledAt time.Time                `json:"reconciledAt,omitzero"`
	// Message explains an Unknown status (the last reconcile error).
	Message   string     `json:"message,omitempty"`
	Operation *Operation `json:"operation,omitempty"`
}

// Operation is the sync in progress.
type Operation struct {
	SyncID    string    `json:"syncID"`
	Phase     string    `json:"phase"`
	Initiator string    `json:"initiator,omitempty"`
	StartedAt time.Time `json:"startedAt,omitzero"`
}

// Sync phases.
const (
	PhaseRunning   = "Running"
	PhaseSucceeded = "Succeeded"
	PhaseFailed    = "Failed"
)

// SyncRequest is the payload of the sync update.
type SyncRequest struct {
	// Revision overrides the spec's target revision for this sync.
	Revision  string `json:"revision,omitempty"`
	DryRun    bool   `json:"dryRun,omitempty"`
	Initiator string `json:"initiator,omitempty"`
}

// RefreshRequest is the payload of the refresh signal.
type RefreshRequest struct {
	Hard   bool   `json:"hard,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// SyncInput starts a SyncWorkflow.
type SyncInput struct {
	ID          string              `json:"id"`
	Spec        appspec.Application `json:"spec"`
	Revision    string              `json:"revision"`
	SHA         string              `json:"sha"`
	DryRun      bool                `json:"dryRun,omitempty"`
	Initiator   string              `json:"initiator,omitempty"`
	WaitSeconds int                 `json:"waitSeconds,omitempty"`
}

// SyncSummary is one entry of an app's recent-sync list.
type SyncSummary struct {
	ID         string    `json:"id"`
	Revision   string    `json:"revision"`
	SHA        string    `json:"sha"`
	Phase      string    `json:"phase"`
	Message    string    `json:"message,omitempty"`
	Initiator  string    `json:"initiator,omitempty"`
	StartedAt  time.Time `json:"startedAt,omitzero"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
}

// SyncResult is the outcome of one sync: its summary plus the ordered log
// of what happened to each resource. It holds no manifests.
type SyncResult struct {
	SyncSummary
	Resources []cluster.ResourceResult `json:"resources,omitempty"`
	Health    appspec.HealthStatus     `json:"health,omitempty"`
}

// AppView answers the status query and the setSpec update.
type AppView struct {
	Spec    appspec.Application `json:"spec"`
	Status  AppStatus           `json:"status"`
	History []SyncSummary       `json:"history,omitempty"`
}

// maxHistory bounds the recent-sync list kept in the workflow; the full
// history is the closed SyncWorkflow executions.
const maxHistory = 20
