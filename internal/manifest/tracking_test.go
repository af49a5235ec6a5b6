package manifest

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// dotted253 is the longest application name, with dots.
var dotted253 = strings.Repeat(strings.Repeat("a", 62)+".", 4)[:252] + "z"

// TestAppLabelValueOfDottedNames checks that every application name,
// dotted or as long as a DNS subdomain, gives a valid label value of its
// own, readable when it fits.
func TestAppLabelValueOfDottedNames(t *testing.T) {
	tests := []struct {
		project, app string
		want         string // "" for a digest
	}{
		{project: "default", app: "guestbook", want: "default.guestbook"},
		{project: "default", app: "example.guestbook", want: "default.example.guestbook"},
		{project: "team-a", app: "a.b.c", want: "team-a.a.b.c"},
		{project: "default", app: strings.Repeat("x", 55), want: "default." + strings.Repeat("x", 55)},
		{project: "default", app: strings.Repeat("x", 56)},
		{project: "default", app: "example." + strings.Repeat("x", 60)},
		{project: "default", app: dotted253},
		{project: strings.Repeat("p", 63), app: dotted253},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		got := AppLabelValue(tt.project, tt.app)
		if errs := validation.IsValidLabelValue(got); len(errs) > 0 {
			t.Errorf("AppLabelValue(%q, %q) = %q: %v", tt.project, tt.app, got, errs)
		}
		switch {
		case tt.want != "" && got != tt.want:
			t.Errorf("AppLabelValue(%q, %q) = %q, want %q", tt.project, tt.app, got, tt.want)
		case tt.want == "" && strings.Contains(got, "."):
			t.Errorf("AppLabelValue(%q, %q) = %q, want a digest", tt.project, tt.app, got)
		}
		if other, ok := seen[got]; ok {
			t.Errorf("%s/%s and %s share the label value %q", tt.project, tt.app, other, got)
		}
		seen[got] = tt.project + "/" + tt.app
	}
}

// TestTrackingOfDottedNames checks that the tracking annotation of a
// dotted or 253-character name names its app and no other.
func TestTrackingOfDottedNames(t *testing.T) {
	for _, app := range []string{"example.guestbook", dotted253} {
		o := &unstructured.Unstructured{}
		o.SetGroupVersionKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
		o.SetNamespace("web")
		o.SetName("web.v1")
		SetTracking("default", app, o)
		if got := OwnerApp(o); got != "default/"+app {
			t.Errorf("OwnerApp = %q, want default/%s", got, app)
		}
		if !OwnedBy("default", app, o) || OwnedBy("default", app+"x", o) || OwnedBy("default", "example", o) {
			t.Errorf("OwnedBy of %q is wrong", app)
		}
		if got, want := o.GetLabels()[AppLabel], AppLabelValue("default", app); got != want {
			t.Errorf("label %q, want %q", got, want)
		}
	}
}
