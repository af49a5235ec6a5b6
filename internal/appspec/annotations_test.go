package appspec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAnnotationValues(t *testing.T) {
	tests := []struct {
		name, key, value string
		field            string // "" when valid
	}{
		{name: "refresh normal", key: AnnotationRefresh, value: "normal"},
		{name: "refresh hard", key: AnnotationRefresh, value: "hard"},
		{name: "refresh sideways", key: AnnotationRefresh, value: "sideways", field: "annotations." + AnnotationRefresh},
		{name: "skip true", key: AnnotationSkipReconcile, value: "true"},
		{name: "skip false", key: AnnotationSkipReconcile, value: "false"},
		{name: "skip yes", key: AnnotationSkipReconcile, value: "yes", field: "annotations." + AnnotationSkipReconcile},
		{name: "other annotation", key: "example.com/anything", value: "sideways"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := Application{Name: "a", Project: DefaultProject,
				Source:      Source{RepoURL: "https://git.example.org/a.git", Path: "."},
				Annotations: map[string]string{tt.key: tt.value}}
			err := app.Defaulted().Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			fe, ok := err.(*FieldError)
			if !ok || fe.Field != tt.field {
				t.Fatalf("Validate = %v, want a FieldError on %s", err, tt.field)
			}
		})
	}
}

func TestParseArgoRefreshSideways(t *testing.T) {
	_, err := ParseApplication([]byte(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: a
  annotations:
    argocd.argoproj.io/refresh: sideways
spec:
  source: {repoURL: "https://git.example.org/a.git", path: .}
  destination: {server: "https://kubernetes.default.svc", namespace: a}
`))
	fe, ok := err.(*FieldError)
	if !ok || fe.Field != "metadata.annotations."+AnnotationRefresh {
		t.Fatalf("ParseApplication = %v, want a FieldError naming the annotation", err)
	}
}

func TestManifestPaths(t *testing.T) {
	tests := []struct {
		value, src string
		want       []string
	}{
		{value: ".", src: "apps/guestbook", want: []string{"apps/guestbook"}},
		{value: "..;/shared/lib", src: "apps/guestbook", want: []string{"apps", "shared/lib"}},
		{value: " values ; ;/", src: "apps/a", want: []string{"apps/a/values", ""}},
		{value: ".", src: "", want: []string{""}},
	}
	for _, tt := range tests {
		app := Application{Annotations: map[string]string{AnnotationManifestPaths: tt.value}}
		got, ok := app.ManifestPaths(tt.src)
		if !ok {
			t.Fatalf("%q: no paths", tt.value)
		}
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("ManifestPaths(%q, %q) (-want +got):\n%s", tt.value, tt.src, d)
		}
	}
	if _, ok := (Application{}).ManifestPaths("x"); ok {
		t.Error("ManifestPaths without the annotation says ok")
	}
}

func TestWithoutRefreshAnnotation(t *testing.T) {
	app := Application{Annotations: map[string]string{AnnotationRefresh: "hard"}}
	if hard, ok := app.RefreshAnnotation(); !hard || !ok {
		t.Fatalf("RefreshAnnotation = %v, %v", hard, ok)
	}
	got := app.WithoutRefreshAnnotation()
	if got.Annotations != nil {
		t.Errorf("annotations left: %v", got.Annotations)
	}
	if app.Annotations[AnnotationRefresh] != "hard" {
		t.Error("WithoutRefreshAnnotation changed its receiver")
	}
}
