package cluster

import (
	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/internal/appspec"
)

// Target names the app and where its manifests go.
type Target struct {
	Project     string              `json:"project"`
	App         string              `json:"app"`
	Destination appspec.Destination `json:"destination"`
	SyncOptions []string            `json:"syncOptions,omitempty"`
}

// ApplyInput is the input of Apply.
type ApplyInput struct {
	Target    Target             `json:"target"`
	Manifests render.ManifestRef `json:"manifests"`
	DryRun    bool               `json:"dryRun,omitempty"`
}

// Action says what apply did to a resource.
type Action string

// Actions of a sync, as shown in its result.
const (
	ActionCreated    Action = "created"
	ActionConfigured Action = "configured"
	ActionUnchanged  Action = "unchanged"
	ActionFailed     Action = "failed"
)

// ResourceResult is what happened to one resource.
type ResourceResult struct {
	appspec.ResourceKey
	Action  Action `json:"action"`
	Message string `json:"message,omitempty"`
}

// ApplyOutput lists the resources in the order they were applied.
type ApplyOutput struct {
	Resources []ResourceResult `json:"resources"`
}

// CompareInput is the input of Compare and WaitHealthy.
type CompareInput struct {
	Target    Target             `json:"target"`
	Manifests render.ManifestRef `json:"manifests"`
}

// CompareOutput is the compared state of an app.
type CompareOutput struct {
	Sync      appspec.SyncStatus       `json:"sync"`
	Health    appspec.HealthStatus     `json:"health"`
	Resources []appspec.ResourceStatus `json:"resources"`
}

// WaitInput is the input of WaitHealthy.
type WaitInput struct {
	CompareInput
	// PollMillis is the poll interval (default 500).
	PollMillis int `json:"pollMillis,omitempty"`
}
