package appspec

import (
	"errors"
	"strings"
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
		{name: "oci digest", edit: func(a *Application) {
			a.Source.RepoURL, a.Source.TargetRevision = "oci://registry.local/app", "sha256:"+strings.Repeat("ab", 32)
		}},
		{name: "oci semver range", edit: func(a *Application) { a.Source.RepoURL, a.Source.TargetRevision = "oci://registry.local/app", "^1.2" }},
		{name: "digest of a git source", edit: func(a *Application) { a.Source.TargetRevision = "sha256:" + strings.Repeat("ab", 32) },
			field: "source.targetRevision"},
		{name: "bad oci digest", edit: func(a *Application) {
			a.Source.RepoURL, a.Source.TargetRevision = "oci://registry.local/app", "sha256:a b"
		},
			field: "source.targetRevision"},
		{name: "bad namespace", edit: func(a *Application) { a.Destination.Namespace = "A_B" }, field: "destination.namespace"},
		{name: "negative refresh", edit: func(a *Application) { a.RefreshSeconds = -1 }, field: "refreshSeconds"},
		{name: "named sources", edit: func(a *Application) {
			a.Sources = []Source{{RepoURL: "http://git.local/a.git", Name: "app"}, {RepoURL: "http://git.local/b.git", Name: "config"}}
		}},
		{name: "two sources of one name", edit: func(a *Application) {
			a.Sources = []Source{{RepoURL: "http://git.local/a.git", Name: "app"}, {RepoURL: "http://git.local/b.git", Name: "app"}}
		}, field: "sources[1].name"},
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

// TestValidateAppName checks that application names are DNS subdomains,
// as Argo CD's are: dots allowed, up to 253 characters.
func TestValidateAppName(t *testing.T) {
	long := strings.Repeat(strings.Repeat("a", 62)+".", 4)[:MaxAppName-1] + "z"
	tests := []struct {
		name, app string
		reason    string // "" when accepted
	}{
		{name: "label", app: "guestbook"},
		{name: "dotted", app: "example.guestbook"},
		{name: "dots and dashes", app: "a-1.b-2.c3"},
		{name: "digits", app: "0.1"},
		{name: "one character", app: "a"},
		{name: "longer than a label", app: strings.Repeat("a", 64)},
		{name: "253 characters", app: long},
		{name: "empty", app: "", reason: "is required"},
		{name: "254 characters", app: long + "z", reason: "at most 253"},
		{name: "upper case", app: "Example.guestbook", reason: "DNS subdomain"},
		{name: "underscore", app: "example_guestbook", reason: "DNS subdomain"},
		{name: "leading dot", app: ".guestbook", reason: "DNS subdomain"},
		{name: "trailing dot", app: "guestbook.", reason: "DNS subdomain"},
		{name: "two dots", app: "example..guestbook", reason: "DNS subdomain"},
		{name: "dash before a dot", app: "example-.guestbook", reason: "DNS subdomain"},
		{name: "dash after a dot", app: "example.-guestbook", reason: "DNS subdomain"},
		{name: "leading dash", app: "-guestbook", reason: "DNS subdomain"},
		{name: "slash", app: "default/guestbook", reason: "DNS subdomain"},
		{name: "dot-dot", app: "..", reason: "DNS subdomain"},
		{name: "colon", app: "a:b", reason: "DNS subdomain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateAppName(tt.app)
			if tt.reason == "" {
				if err != nil {
					t.Fatalf("ValidateAppName(%q) = %v, want nil", tt.app, err)
				}
				a := Application{Name: tt.app, Project: "default", Source: Source{RepoURL: "http://git.local/repo.git"}}
				if err := a.Validate(); err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != "name" || !strings.Contains(fe.Reason, tt.reason) {
				t.Fatalf("ValidateAppName(%q) = %v, want a FieldError on name containing %q", tt.app, err, tt.reason)
			}
		})
	}
}

// TestValidateRepoURLPassword: a repoURL that holds a password is refused,
// in source and in sources[], and the reason never repeats the URL.
func TestValidateRepoURLPassword(t *testing.T) {
	const password = "typed-in-PASSWORD"
	tests := []struct {
		name    string
		url     string
		multi   bool
		refused bool
	}{
		{name: "https with password", url: "https://deploy:" + password + "@git.example.com/team/infra.git", refused: true},
		{name: "ssh with password", url: "ssh://git:" + password + "@git.example.com/team/infra.git", refused: true},
		{name: "helm repository with password", url: "https://u:" + password + "@charts.example.com", refused: true},
		{name: "unparsable with password", url: "https://deploy:" + password + "@git.example.com:port/infra.git", refused: true},
		{name: "multi-source with password", url: "https://deploy:" + password + "@git.example.com/team/infra.git", multi: true, refused: true},
		{name: "user without password", url: "https://deploy@git.example.com/team/infra.git"},
		{name: "ssh user", url: "ssh://git@git.example.com/team/infra.git"},
		{name: "scp-like", url: "git@git.example.com:team/infra.git"},
		{name: "plain https", url: "https://git.example.com/team/infra.git"},
		{name: "multi-source plain", url: "https://git.example.com/team/infra.git", multi: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := Application{Name: "guestbook", Project: "default", Source: Source{RepoURL: tt.url, Path: "."}}
			field := "source.repoURL"
			if tt.multi {
				a.Source = Source{}
				a.Sources = []Source{{RepoURL: "https://git.example.com/plain.git", Path: "."}, {RepoURL: tt.url, Path: "."}}
				field = "sources[1].repoURL"
			}
			err := a.Validate()
			if !tt.refused {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != field || !strings.Contains(fe.Reason, "register the repository's credentials") {
				t.Fatalf("Validate() = %v, want a FieldError on %s that says to register the credentials", err, field)
			}
			if strings.Contains(err.Error(), password) {
				t.Errorf("the error repeats the password: %v", err)
			}
		})
	}
}

// A spec is refused when it is saved if it is larger than MaxSpecBytes:
// a 500 KB Jsonnet argument wedged its app's workflow.
func TestParseApplicationSize(t *testing.T) {
	doc := func(tla, values int) []byte {
		return []byte(`{"name": "big", "project": "default", "source": {"repoURL": "https://git.example.com/r.git", "path": "p",` +
			`"directory": {"jsonnet": {"tlas": [{"name": "x", "value": "` + strings.Repeat("x", tla) + `"}]}},` +
			`"helm": {"values": "` + strings.Repeat("k: v\\n", values) + `"}}}`)
	}
	if _, err := ParseApplication(doc(10, 20000)); err != nil {
		t.Fatalf("100 KB of Helm values: %v", err)
	}
	_, err := ParseApplication(doc(500<<10, 0))
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "spec" || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "more than the 128 KiB") {
		t.Fatalf("a 500 KB Jsonnet argument: %v; want a FieldError on spec naming the limit", err)
	}
}
