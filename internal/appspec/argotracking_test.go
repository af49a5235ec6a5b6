package appspec

import (
	"errors"
	"strings"
	"testing"

	"github.com/windlass-cd/windlass/internal/manifest"
)

func TestValidateArgoTracking(t *testing.T) {
	good := Application{Name: "guestbook", Project: "default",
		Source: Source{RepoURL: "http://git.local/repo.git", Path: "guestbook"}}
	tests := []struct {
		name    string
		ann     map[string]string
		wantErr string
	}{
		{name: "annotation tracking", ann: map[string]string{manifest.AppAnnotationArgoTracking: "annotation", manifest.AppAnnotationArgoApp: "apps_guestbook"}},
		{name: "unknown method", ann: map[string]string{manifest.AppAnnotationArgoTracking: "annotations"}, wantErr: `annotations: annotation windlass.dev/argocd-tracking: tracking method "annotations"`},
		{name: "bad label key", ann: map[string]string{manifest.AppAnnotationArgoTracking: "label", manifest.AppAnnotationArgoInstanceLabelKey: "-x"}, wantErr: `label key "-x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := good
			a.Annotations = tt.ann
			err := a.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate() = %v, want an invalid-field error with %q", err, tt.wantErr)
			}
		})
	}
}
