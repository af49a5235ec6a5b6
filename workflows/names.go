package workflows

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Workflow, update, signal and query names: wire contracts, never rename.
const (
	ApplicationWorkflowName = "windlass.ApplicationWorkflow"
	SyncWorkflowName        = "windlass.SyncWorkflow"

	UpdateSetSpec   = "setSpec"
	UpdateSync      = "sync"
	UpdateRollback  = "rollback"
	UpdateTerminate = "terminateOperation"
	UpdateDelete    = "delete"
	// UpdateApproveDeletion approves the deletion of the resources marked
	// Prune=confirm (the running sync waits for it) or Delete=confirm (the
	// app's deletion waits for it).
	UpdateApproveDeletion = "approveDeletion"
	// UpdateRunAction runs a resource action (ActionRequest).
	UpdateRunAction = "runAction"
	// UpdateMove moves the app to another project (MoveRequest): its
	// workflow hands its state to a new one under the new ID, then ends.
	UpdateMove    = "move"
	SignalRefresh = "refresh"
	// SignalSync and SignalRollback take the same payloads as the updates
	// of the same names, for operators who trigger them from the Temporal
	// UI or `temporal workflow signal`.
	SignalSync     = "sync"
	SignalRollback = "rollback"
	// SignalSyncProgress is sent by a SyncWorkflow to its parent.
	SignalSyncProgress = "syncProgress"
	// SignalApproveDeletion is sent by an ApplicationWorkflow to its
	// running SyncWorkflow when the user approves its pruning.
	SignalApproveDeletion = "approveDeletion"
	QueryStatus           = "status"
	QueryResources        = "resources"
	QueryHistory          = "history"
	QueryOperation        = "operation"
	// QueryNotifications answers the latest notification deliveries.
	QueryNotifications = "notifications"
	// QueryManifests answers the reference of the last rendered
	// manifests (a *render.ManifestRef, nil before the first render), for
	// the API's manifests and diff endpoints.
	QueryManifests = "manifests"

	// TaskQueue is the default task queue of workflows and activities.
	TaskQueue = "windlass"
)

// Error types of rejected updates (wire contracts). An ErrTypeInvalidSpec
// error carries the name of the bad field as its detail.
const (
	ErrTypeInvalidSpec         = "InvalidSpec"
	ErrTypeOperationInProgress = "OperationInProgress"
	ErrTypeNoOperation         = "NoOperation"
	ErrTypeSyncWindow          = "SyncWindowDenied"
	ErrTypeRevisionNotFound    = "RevisionNotFound"
	ErrTypeRollback            = "RollbackRefused"
	ErrTypeNotPermitted        = "NotPermitted"
	ErrTypeDeleting            = "Deleting"
	// ErrTypeReconcileSkipped: the skip-reconcile annotation pauses the
	// app, so it takes no sync.
	ErrTypeReconcileSkipped = "ReconcileSkipped"
	// ErrTypeUnavailable: a dependency of the step (the Kubernetes API,
	// Redis) did not answer; the message names it.
	ErrTypeUnavailable = "Unavailable"
	// Errors of the runAction update: no such action for the kind, an
	// action disabled for the object, a resource not in the cluster, and
	// an action that failed or that the API server refused.
	ErrTypeUnknownAction    = "UnknownAction"
	ErrTypeActionDisabled   = "ActionDisabled"
	ErrTypeResourceNotFound = "ResourceNotFound"
	ErrTypeActionFailed     = "ActionFailed"
	// ErrTypeMoving: the app is moving to another project; ErrTypeAppExists:
	// the project it would move to already has an app of its name.
	ErrTypeMoving    = "Moving"
	ErrTypeAppExists = "AppExists"
)

// MetricReconcileDuration times one reconcile pass through the workflow
// metrics handler; Prometheus shows it as
// windlass_reconcile_duration_seconds (internal/metrics).
const MetricReconcileDuration = "windlass_reconcile_duration"

// Custom search attributes (all Keyword), registered by the server role.
const (
	SearchAttrProject = "WindlassProject"
	SearchAttrApp     = "WindlassApp"
	SearchAttrSync    = "WindlassSyncStatus"
	SearchAttrHealth  = "WindlassHealthStatus"
	SearchAttrRev     = "WindlassRevision"
	SearchAttrCluster = "WindlassCluster"
	// SearchAttrSyncPolicy is manual, automated or selfHeal.
	SearchAttrSyncPolicy = "WindlassSyncPolicy"
	// SearchAttrName is the app's name, SearchAttrNamespace its
	// destination namespace.
	SearchAttrName      = "WindlassName"
	SearchAttrNamespace = "WindlassNamespace"
	// SearchAttrRepo (a KeywordList) holds the app's repository URLs,
	// normalised with appspec.NormalizeRepoURL, for webhooks and filters.
	SearchAttrRepo = "WindlassRepo"
	// SearchAttrLabels (a KeywordList) holds the app's labels as "key"
	// and "key=value" (LabelEntries), for label selectors.
	SearchAttrLabels = "WindlassLabels"
	// SearchAttrDependsOn (a KeywordList) holds the apps this one depends
	// on, "<project>/<name>", for the reverse lookup (its dependents).
	SearchAttrDependsOn = "WindlassDependsOn"
	// SearchAttrParent is "<project>/<name>" of the app whose manifests
	// declare this one (app of apps); unset on other apps.
	SearchAttrParent = "WindlassParent"
)

// KeywordSearchAttributes lists the custom Keyword search attributes.
var KeywordSearchAttributes = []string{
	SearchAttrProject, SearchAttrApp, SearchAttrSync, SearchAttrHealth, SearchAttrRev, SearchAttrCluster, SearchAttrSyncPolicy,
	SearchAttrName, SearchAttrNamespace, SearchAttrParent,
}

// KeywordListSearchAttributes lists the custom KeywordList search
// attributes.
var KeywordListSearchAttributes = []string{SearchAttrRepo, SearchAttrLabels, SearchAttrDependsOn}

// AppWorkflowID is the stable ID of an application's workflow.
func AppWorkflowID(project, name string) string { return "app/" + project + "/" + name }

// ParseAppWorkflowID splits an application workflow ID.
func ParseAppWorkflowID(id string) (project, name string, ok bool) {
	rest, ok := strings.CutPrefix(id, "app/")
	if !ok {
		return "", "", false
	}
	return strings.Cut(rest, "/")
}

// SyncWorkflowID is the ID of the n-th sync of an application.
func SyncWorkflowID(project, name string, n int) string {
	return fmt.Sprintf("sync/%s/%s/%d", project, name, n)
}

// ParseSyncSeq returns n of SyncWorkflowID(project, name, n), and false
// for the ID of another app's sync or no sync.
func ParseSyncSeq(id, project, name string) (int, bool) {
	rest, ok := strings.CutPrefix(id, "sync/"+project+"/"+name+"/")
	if !ok || rest == "" || strings.HasPrefix(rest, "0") && rest != "0" {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n >= 0
}

// SyncIDOf is the ID of sync n of the app name in project, which moved
// out of the projects in moves: the project that ran the sync names it.
func SyncIDOf(project, name string, moves []ProjectMove, n int) string {
	return SyncWorkflowID(syncProject(project, moves, n), name, n)
}

func syncProject(project string, moves []ProjectMove, n int) string {
	for _, m := range moves {
		if n <= m.LastSeq {
			return m.Project
		}
	}
	return project
}

// ParseSyncSeqMoved is ParseSyncSeq for an app that moved out of the
// projects in moves: id must be sync n's ID as SyncIDOf names it.
func ParseSyncSeqMoved(id, project, name string, moves []ProjectMove) (int, bool) {
	for _, p := range append([]string{project}, projectsOf(moves)...) {
		if n, ok := ParseSyncSeq(id, p, name); ok && syncProject(project, moves, n) == p {
			return n, true
		}
	}
	return 0, false
}

// AppAliases are "<project>/<name>" of the app in project and in each
// project it moved out of: the values of its syncs' SearchAttrApp.
func AppAliases(project, name string, moves []ProjectMove) []string {
	out := []string{project + "/" + name}
	for _, p := range projectsOf(moves) {
		if a := p + "/" + name; !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

func projectsOf(moves []ProjectMove) []string {
	out := make([]string, len(moves))
	for i, m := range moves {
		out[i] = m.Project
	}
	return out
}
