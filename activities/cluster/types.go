package cluster

import (
	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/manifest"
)

// Target names the app and where its manifests go.
type Target struct {
	Project     string              `json:"project"`
	App         string              `json:"app"`
	Destination appspec.Destination `json:"destination"`
	SyncOptions []string            `json:"syncOptions,omitempty"`
	// IgnoreDifferences are the app's ignoreDifferences; the diff ignores
	// these fields, and with RespectIgnoreDifferences=true so does apply.
	IgnoreDifferences []appspec.ResourceIgnoreDifferences `json:"ignoreDifferences,omitempty"`
	// ManagedNamespaceMetadata labels and annotates the namespace that
	// CreateNamespace=true creates.
	ManagedNamespaceMetadata *appspec.ManagedNamespaceMetadata `json:"managedNamespaceMetadata,omitempty"`
	// ServiceAccount is the user a sync's writes impersonate when sync
	// impersonation is on (system:serviceaccount:<ns>:<name>; "" none).
	ServiceAccount string `json:"serviceAccount,omitempty"`
	// ArgoCD, from the app's annotations (manifest.ArgoTrackingOf), makes
	// the app take over the objects Argo CD tracked for it.
	ArgoCD *manifest.ArgoTracking `json:"argoCD,omitempty"`
}

// TargetFor is the Target of an app's spec: what the workflows pass to
// the activities, and what the API uses to diff the app the same way.
func TargetFor(spec appspec.Application) Target {
	t := Target{Project: spec.Project, App: spec.Name, Destination: spec.Destination, IgnoreDifferences: spec.IgnoreDifferences}
	t.ArgoCD, _ = manifest.ArgoTrackingOf(spec.Annotations, spec.Name) // validated with the spec
	if spec.SyncPolicy != nil {
		t.SyncOptions = append([]string(nil), spec.SyncPolicy.SyncOptions...)
		t.ManagedNamespaceMetadata = spec.SyncPolicy.ManagedNamespaceMetadata
	}
	return t
}

// Action says what apply did to a resource.
type Action string

// Actions of a sync, as shown in its result.
const (
	ActionCreated    Action = "created"
	ActionConfigured Action = "configured"
	ActionUnchanged  Action = "unchanged"
	ActionFailed     Action = "failed"
	// ActionSkipped: a hook that is not run (Skip, an unsupported Helm
	// hook, or any hook with the apply strategy or a selective sync).
	ActionSkipped Action = "skipped"
	// ActionWaited: WaitWave's entry for a resource it waited for.
	ActionWaited Action = "waited"
	// ActionOrphaned: DeleteApp with the orphan cascade removed the
	// tracking and left the resource.
	ActionOrphaned Action = "orphaned"
	// ActionDeleteSkipped: DeleteApp kept the resource (Delete=false or
	// Delete=confirm).
	ActionDeleteSkipped Action = "delete-skipped"
)

// ResourceResult is what happened to one resource.
type ResourceResult struct {
	appspec.ResourceKey
	Action  Action `json:"action"`
	Message string `json:"message,omitempty"`
	// Phase and Wave of the step the resource belongs to (sync engine).
	Phase string `json:"phase,omitempty"`
	Wave  int    `json:"wave,omitempty"`
	// Hook marks a hook rather than a resource.
	Hook bool `json:"hook,omitempty"`
	// Health is the resource's health where it was assessed.
	Health appspec.HealthStatus `json:"health,omitempty"`
}

// CompareInput is the input of Compare.
type CompareInput struct {
	Target    Target             `json:"target"`
	Manifests render.ManifestRef `json:"manifests"`
	// WithDiff fills ResourceStatus.Diff (a unified diff per resource).
	// Leave it off in the reconcile loop: diffs are large.
	WithDiff bool `json:"withDiff,omitempty"`
	// Fresh computes the answer again even when the live objects have not
	// changed since the last compare (a hard refresh; see compareMemo).
	Fresh bool `json:"fresh,omitempty"`
	// Drift says that only the drift watch asked for this compare: another
	// writer changed a tracked object. The app's objects that the memo
	// knows are then read by GET, not listed (see compareMemoEntry.known).
	Drift bool `json:"drift,omitempty"`
}

// CompareOutput is the compared state of an app.
type CompareOutput struct {
	Sync      appspec.SyncStatus       `json:"sync"`
	Health    appspec.HealthStatus     `json:"health"`
	Resources []appspec.ResourceStatus `json:"resources"`
	// Omitted counts the resources left out of Resources (Compare keeps
	// MaxResults); Sync and Health are of them all.
	Omitted int `json:"omitted,omitempty"`
	// ResourcesRef, when resources are left out, names the full list in
	// the store (WithResourceLists; ResourceLists reads it).
	ResourcesRef string `json:"resourcesRef,omitempty"`
	// OmittedKinds are the kinds of the resources left out that no
	// resource of Resources has, in order of first appearance: the drift
	// watch must watch them too.
	OmittedKinds []appspec.GroupKind `json:"omittedKinds,omitempty"`
	// Conditions are the warnings of the compare: the rendered objects
	// of an excluded kind (at most MaxConditions, then a count).
	Conditions []appspec.Condition `json:"conditions,omitempty"`
}
