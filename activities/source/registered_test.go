package source

import (
	"testing"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/google/go-cmp/cmp"

	"github.com/windlass-cd/windlass/internal/secretstore"
	"github.com/windlass-cd/windlass/internal/settings"
)

// Registered repositories resolve to their credentials, before the
// file-configured ones; a repository with none is anonymous.
func TestRegisteredAuth(t *testing.T) {
	ctx := t.Context()
	s, err := settings.New(&secretstore.Memory{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []settings.Repository{
		{URL: "https://git.example/org/app.git", Username: "deploy", Password: "pa55-do-not-show"},
		{URL: "https://git.example/org/tok", BearerToken: "tok-do-not-show"},
	} {
		if err := s.PutRepo(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	auth := &RegisteredAuth{Repos: s, Fallback: Credentials{Repos: []RepoCredential{{URLPrefix: "https://other.example/"}}}}
	tests := []struct {
		url  string
		want any
	}{
		{"https://git.example/org/app.git", &githttp.BasicAuth{Username: "deploy", Password: "pa55-do-not-show"}},
		{"https://git.example/org/tok", &githttp.TokenAuth{Token: "tok-do-not-show"}},
		{"https://git.example/org/public", nil},
	}
	for _, tt := range tests {
		m, err := auth.Auth(ctx, tt.url)
		if err != nil {
			t.Fatal(err)
		}
		if tt.want == nil {
			if m != nil {
				t.Fatalf("%s: auth = %v, want none", tt.url, m)
			}
			continue
		}
		if diff := cmp.Diff(tt.want, m); diff != "" {
			t.Fatalf("%s (-want +got):\n%s", tt.url, diff)
		}
	}
}
