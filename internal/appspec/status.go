package appspec

import "time"

// SyncStatus says whether the live state matches Git.
type SyncStatus string

// Sync statuses, as in Argo CD.
const (
	SyncUnknown   SyncStatus = "Unknown"
	SyncSynced    SyncStatus = "Synced"
	SyncOutOfSync SyncStatus = "OutOfSync"
)

// HealthStatus is the health of a resource or an application.
type HealthStatus string

// Health statuses, as in Argo CD.
const (
	HealthHealthy     HealthStatus = "Healthy"
	HealthSuspended   HealthStatus = "Suspended"
	HealthProgressing HealthStatus = "Progressing"
	HealthMissing     HealthStatus = "Missing"
	HealthDegraded    HealthStatus = "Degraded"
	HealthUnknown     HealthStatus = "Unknown"
)

// healthRank orders statuses from best to worst.
var healthRank = map[HealthStatus]int{
	HealthHealthy: 0, HealthSuspended: 1, HealthProgressing: 2,
	HealthMissing: 3, HealthDegraded: 4, HealthUnknown: 5,
}

// Worse returns the worse of two health statuses.
func Worse(a, b HealthStatus) HealthStatus {
	if healthRank[b] > healthRank[a] {
		return b
	}
	return a
}

// ResourceKey identifies one Kubernetes object.
type ResourceKey struct {
	Group     string `json:"group,omitempty"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// String renders group/Kind:namespace/name.
func (k ResourceKey) String() string {
	return k.Group + "/" + k.Kind + ":" + k.Namespace + "/" + k.Name
}

// Condition is a problem an app's status reports, in Argo CD's terms.
type Condition struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// Condition types.
const (
	// ConditionExcludedResourceWarning: a rendered object's kind is
	// excluded (resource.exclusions or resource.inclusions), so it is
	// neither compared nor applied.
	ConditionExcludedResourceWarning = "ExcludedResourceWarning"
)

// ResourceStatus is the compared state of one resource.
type ResourceStatus struct {
	ResourceKey
	Version       string       `json:"version,omitempty"`
	Status        SyncStatus   `json:"status"`
	Health        HealthStatus `json:"health"`
	HealthMessage string       `json:"healthMessage,omitempty"`
	// HealthLastTransitionTime is when Health last changed, as the health
	// log recorded it; the API fills it, compares do not.
	HealthLastTransitionTime *time.Time `json:"healthLastTransitionTime,omitempty"`
	Message                  string     `json:"message,omitempty"`
	// RequiresPruning marks a live tracked resource that is no longer
	// rendered.
	RequiresPruning bool `json:"requiresPruning,omitempty"`
	// Diff is a unified diff of the normalised live (---) and desired
	// (+++) YAML, filled only when a diff was asked for.
	Diff string `json:"diff,omitempty"`
}

// RevisionMetadata describes the commit a revision resolved to, as Argo
// CD's revisionMetadata does: the first line of its message (bounded), its
// author's name and its date.
type RevisionMetadata struct {
	Message string    `json:"message,omitempty"`
	Author  string    `json:"author,omitempty"`
	Date    time.Time `json:"date,omitzero"`
}
