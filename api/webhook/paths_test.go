package webhook

import (
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// An app's manifest-generate-paths keep the pushes that change none of
// its files from refreshing it, where the payload lists the files
// (GitHub, GitLab); Bitbucket's lists none, so they refresh it.
func TestHandleManifestPaths(t *testing.T) {
	apps := map[string][]App{
		// The push changes apps/guestbook/deployment.yaml.
		"github.com/acme/gitops": {
			{ID: "app/default/hit", TargetRevisions: []string{"main"}, Paths: []string{"apps/other", "apps/guestbook"}},
			{ID: "app/default/glob", TargetRevisions: []string{"main"}, Paths: []string{"apps/*/deployment.yaml"}},
			{ID: "app/default/miss", TargetRevisions: []string{"main"}, Paths: []string{"apps/guest", "apps/guestbook/base"}},
		},
		// The push changes ingress/values.yaml.
		"gitlab.example.com/infra/platform-config": {
			{ID: "app/infra/ingress", TargetRevisions: []string{"staging"}, Paths: []string{"ingress"}},
			{ID: "app/infra/miss", TargetRevisions: []string{"staging"}, Paths: []string{"apps"}},
		},
		"bitbucket.org/acme-team/deploy-config": {
			{ID: "app/ops/unlisted", TargetRevisions: []string{"main"}, Paths: []string{"nothing"}},
		},
	}
	for _, tc := range []struct {
		name string
		d    delivery
		want []string
	}{
		{"github", github("push", fixture(t, "github-push-branch.json")), []string{"app/default/glob", "app/default/hit"}},
		{"gitlab", gitlab("Push Hook", fixture(t, "gitlab-push.json")), []string{"app/infra/ingress"}},
		{"bitbucket", bitbucket("repo:push", fixture(t, "bitbucket-push.json")), []string{"app/ops/unlisted"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHandler(Config{Secrets: testSecrets}, &fakeFinder{apps: apps}, &fakeRefresher{}, slog.New(slog.DiscardHandler))
			got := serve(t, h, tc.d.request(t))
			if d := cmp.Diff(served{status: 200, res: result{Refreshed: tc.want}}, got, cmp.AllowUnexported(served{})); d != "" {
				t.Errorf("response (-want +got):\n%s", d)
			}
		})
	}
}

func TestChangedFiles(t *testing.T) {
	got := changedFiles([]pushCommit{
		{Added: []string{"a/new.yaml"}, Modified: []string{"/b/x.yaml"}},
		{Removed: []string{"a/new.yaml", "c/gone.yaml"}},
	})
	if d := cmp.Diff([]string{"a/new.yaml", "b/x.yaml", "c/gone.yaml"}, got); d != "" {
		t.Errorf("files (-want +got):\n%s", d)
	}
	if got := changedFiles([]pushCommit{{}}); got != nil {
		t.Errorf("no files: %v, want nil", got)
	}
}

func TestTouches(t *testing.T) {
	push := Push{Files: []string{"apps/guestbook/deployment.yaml", "README.md"}}
	for _, tc := range []struct {
		name  string
		paths []string
		p     Push
		want  bool
	}{
		{"no paths", nil, push, true},
		{"no files listed", []string{"nothing"}, Push{}, true},
		{"directory", []string{"apps/guestbook"}, push, true},
		{"the file itself", []string{"README.md"}, push, true},
		{"the root", []string{""}, push, true},
		{"a prefix that is not a directory", []string{"apps/guest"}, push, false},
		{"a directory below", []string{"apps/guestbook/overlays"}, push, false},
		{"glob", []string{"apps/*/deployment.yaml"}, push, true},
		{"glob that misses", []string{"apps/*/service.yaml"}, push, false},
	} {
		if got := touches(tc.paths, tc.p); got != tc.want {
			t.Errorf("%s: touches(%v) = %v, want %v", tc.name, tc.paths, got, tc.want)
		}
	}
}
