package manifest

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestParseArgoTrackingID(t *testing.T) {
	tests := []struct {
		in      string
		want    ArgoTrackingID
		wantErr string
	}{
		{in: "guestbook:apps/Deployment:default/web", want: ArgoTrackingID{App: "guestbook", Group: "apps", Kind: "Deployment", Namespace: "default", Name: "web"}},
		{in: "guestbook:/ConfigMap:default/cfg", want: ArgoTrackingID{App: "guestbook", Kind: "ConfigMap", Namespace: "default", Name: "cfg"}},
		{in: "guestbook:rbac.authorization.k8s.io/ClusterRole:/reader", want: ArgoTrackingID{App: "guestbook", Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "reader"}},
		{in: "team-a_guestbook:/Service:team-a/web", want: ArgoTrackingID{App: "team-a_guestbook", Kind: "Service", Namespace: "team-a", Name: "web"}},
		{in: "", wantErr: "want <app>:<group>/<kind>:<namespace>/<name>"},
		{in: "guestbook", wantErr: "want <app>"},
		{in: "guestbook:apps/Deployment:default/web:extra", wantErr: "want <app>"},
		{in: "guestbook:Deployment:default/web", wantErr: "want <app>"},
		{in: "guestbook:apps/Deployment:web", wantErr: "want <app>"},
		{in: "guestbook:apps/v1/Deployment:default/web", wantErr: "want <app>"},
		{in: ":apps/Deployment:default/web", wantErr: "no app"},
		{in: "guestbook:apps/:default/web", wantErr: "no kind"},
		{in: "guestbook:apps/Deployment:default/", wantErr: "no name"},
	}
	for _, tt := range tests {
		got, err := ParseArgoTrackingID(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseArgoTrackingID(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseArgoTrackingID(%q): %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ParseArgoTrackingID(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestSplitArgoApp(t *testing.T) {
	for in, want := range map[string][2]string{
		"guestbook": {"", "guestbook"}, "team-a_guestbook": {"team-a", "guestbook"}, "a_b.c": {"a", "b.c"},
	} {
		ns, name := SplitArgoApp(in)
		if ns != want[0] || name != want[1] {
			t.Errorf("SplitArgoApp(%q) = %q, %q; want %q, %q", in, ns, name, want[0], want[1])
		}
	}
}

func TestArgoTrackingOf(t *testing.T) {
	tests := []struct {
		name    string
		ann     map[string]string
		want    *ArgoTracking
		wantErr string
	}{
		{name: "unset", ann: map[string]string{"other": "x"}},
		{name: "annotation", ann: map[string]string{AppAnnotationArgoTracking: "annotation"},
			want: &ArgoTracking{Method: ArgoTrackAnnotation, LabelKey: ArgoDefaultInstanceLabel, App: "web"}},
		{name: "label with key and app", ann: map[string]string{AppAnnotationArgoTracking: "label", AppAnnotationArgoInstanceLabelKey: "argocd.argoproj.io/instance", AppAnnotationArgoApp: "apps_web"},
			want: &ArgoTracking{Method: ArgoTrackLabel, LabelKey: "argocd.argoproj.io/instance", App: "apps_web"}},
		{name: "annotation+label", ann: map[string]string{AppAnnotationArgoTracking: "annotation+label"},
			want: &ArgoTracking{Method: ArgoTrackAnnotationAndLabel, LabelKey: ArgoDefaultInstanceLabel, App: "web"}},
		{name: "unknown method", ann: map[string]string{AppAnnotationArgoTracking: "labels"}, wantErr: `tracking method "labels" is not label, annotation or annotation+label`},
		{name: "bad label key", ann: map[string]string{AppAnnotationArgoTracking: "label", AppAnnotationArgoInstanceLabelKey: "a b"}, wantErr: `label key "a b"`},
		{name: "bad app", ann: map[string]string{AppAnnotationArgoTracking: "label", AppAnnotationArgoApp: "Web:x"}, wantErr: "is not an Argo CD app name"},
		{name: "bad app namespace", ann: map[string]string{AppAnnotationArgoTracking: "label", AppAnnotationArgoApp: "a.b_web"}, wantErr: `namespace "a.b"`},
		{name: "key without method", ann: map[string]string{AppAnnotationArgoApp: "web"}, wantErr: "needs " + AppAnnotationArgoTracking},
		{name: "installation ID", ann: map[string]string{AppAnnotationArgoTracking: "annotation", AppAnnotationArgoInstallationID: "prod"},
			want: &ArgoTracking{Method: ArgoTrackAnnotation, LabelKey: ArgoDefaultInstanceLabel, App: "web", InstallationID: "prod"}},
	}
	for _, tt := range tests {
		got, err := ArgoTrackingOf(tt.ann, "web")
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: error = %v, want %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestArgoTrackingOwner(t *testing.T) {
	deploy := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	role := schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}
	ann := func(v string) map[string]string { return map[string]string{ArgoTrackingIDAnnotation: v} }
	inst := map[string]string{ArgoDefaultInstanceLabel: "web"}
	byAnn := &ArgoTracking{Method: ArgoTrackAnnotation, LabelKey: ArgoDefaultInstanceLabel}
	both := &ArgoTracking{Method: ArgoTrackAnnotationAndLabel, LabelKey: ArgoDefaultInstanceLabel}
	byLabel := &ArgoTracking{Method: ArgoTrackLabel, LabelKey: ArgoDefaultInstanceLabel}
	custom := &ArgoTracking{Method: ArgoTrackLabel, LabelKey: "argocd.argoproj.io/instance"}
	prod := &ArgoTracking{Method: ArgoTrackAnnotation, InstallationID: "prod"}
	withID := func(v, id string) map[string]string {
		return map[string]string{ArgoTrackingIDAnnotation: v, ArgoInstallationIDAnnotation: id}
	}
	tests := []struct {
		name      string
		t         *ArgoTracking
		gk        schema.GroupKind
		ns        string
		labels    map[string]string
		ann       map[string]string
		wantOwner string
	}{
		{"annotation names it", byAnn, deploy, "ns", nil, ann("web:apps/Deployment:ns/d"), "web"},
		{"annotation of another app", byAnn, deploy, "ns", nil, ann("other:apps/Deployment:ns/d"), "other"},
		{"annotation copied from another object", byAnn, deploy, "ns", nil, ann("web:apps/Deployment:ns/other"), ""},
		{"annotation of another kind", byAnn, deploy, "ns", nil, ann("web:/ConfigMap:ns/d"), ""},
		{"annotation of another namespace", byAnn, deploy, "ns", nil, ann("web:apps/Deployment:elsewhere/d"), ""},
		{"malformed annotation", byAnn, deploy, "ns", nil, ann("web"), ""},
		{"cluster-scoped, any namespace", byAnn, role, "", nil, ann("web:rbac.authorization.k8s.io/ClusterRole:dest/d"), "web"},
		{"annotation method ignores the label", byAnn, deploy, "ns", inst, nil, ""},
		{"annotation+label ignores the label", both, deploy, "ns", inst, nil, ""},
		{"annotation+label reads the annotation", both, deploy, "ns", inst, ann("apps_web:apps/Deployment:ns/d"), "apps_web"},
		{"label", byLabel, deploy, "ns", inst, nil, "web"},
		{"label method ignores the annotation", byLabel, deploy, "ns", nil, ann("web:apps/Deployment:ns/d"), ""},
		{"custom label key", custom, deploy, "ns", map[string]string{"argocd.argoproj.io/instance": "web"}, nil, "web"},
		{"custom label key ignores the default", custom, deploy, "ns", inst, nil, ""},
		{"this installation", prod, deploy, "ns", nil, withID("web:apps/Deployment:ns/d", "prod"), "web"},
		{"no installation ID on the object", prod, deploy, "ns", nil, ann("web:apps/Deployment:ns/d"), "web"},
		{"another installation", prod, deploy, "ns", nil, withID("web:apps/Deployment:ns/d", "staging"), "web (installation staging)"},
		{"installation IDs not configured", byAnn, deploy, "ns", nil, withID("web:apps/Deployment:ns/d", "staging"), "web"},
	}
	for _, tt := range tests {
		if got := tt.t.Owner(tt.gk, tt.ns, "d", tt.labels, tt.ann); got != tt.wantOwner {
			t.Errorf("%s: Owner = %q, want %q", tt.name, got, tt.wantOwner)
		}
	}
}
