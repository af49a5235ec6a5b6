package appspec

import (
	"errors"
	"testing"
)

func TestValidate(t *testing.T) {
	good := Application{Name: "guestbook", Project: "default",
		Source: Source{RepoURL: "http://git.local/repo.git", Path: "guestbook"}}
	tests := []struct {
		name  string
		edit  func(*Application)
		field string
	}{
		{name: "valid", edit: func(*Application) {}},
		{name: "missing name", edit: func(a *Application) { a.Name = "" }, field: "name"},
		{name: "upper-case name", edit: func(a *Application) { a.Name = "Guest" }, field: "name"},
		{name: "missing repo", edit: func(a *Application) { a.Source.RepoURL = " " }, field: "source.repoURL"},
		{name: "absolute path", edit: func(a *Application) { a.Source.Path = "/etc" }, field: "source.path"},
		{name: "path traversal", edit: func(a *Application) { a.Source.Path = "a/../../etc" }, field: "source.path"},
		{name: "dot-dot", edit: func(a *Application) { a.Source.Path = ".." }, field: "source.path"},
		{name: "inner dot-dot stays inside", edit: func(a *Application) { a.Source.Path = "a/../b" }},
		{name: "bad revision", edit: func(a *Application) { a.Source.TargetRevision = "main~1" }, field: "source.targetRevision"},
		{name: "bad namespace", edit: func(a *Application) { a.Destination.Namespace = "A_B" }, field: "destination.namespace"},
		{name: "negative refresh", edit: func(a *Application) { a.RefreshSeconds = -1 }, field: "refreshSeconds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := good
			tt.edit(&a)
			err := a.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Fatalf("Validate() = %v, want a FieldError on %q", err, tt.field)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
		})
	}
}

func TestWorse(t *testing.T) {
	tests := []struct{ a, b, want HealthStatus }{
		{HealthHealthy, HealthProgressing, HealthProgressing},
		{HealthDegraded, HealthProgressing, HealthDegraded},
		{HealthMissing, HealthHealthy, HealthMissing},
		{HealthHealthy, HealthHealthy, HealthHealthy},
	}
	for _, tt := range tests {
		if got := Worse(tt.a, tt.b); got != tt.want {
			t.Errorf("Worse(%s, %s) = %s, want %s", tt.a, tt.b, got, tt.want)
		}
	}
}
