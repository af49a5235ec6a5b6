package appspec

import "github.com/windlass-cd/windlass/internal/manifest"

// validArgoTracking checks the annotations that make an app take over the
// objects Argo CD tracked for it (manifest.ArgoTrackingOf).
func validArgoTracking(a Application) error {
	if _, err := manifest.ArgoTrackingOf(a.Annotations, a.Name); err != nil {
		return &FieldError{Field: "annotations", Reason: err.Error()}
	}
	return nil
}
