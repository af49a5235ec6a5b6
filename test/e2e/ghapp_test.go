package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/settings"
	"github.com/windlass-cd/windlass/internal/testbed"
)

// createGitHubAppApp syncs an app from a Git server that takes only the
// installation tokens of a GitHub App, registered with a credential
// template through the API, its token endpoint a loopback server. It
// returns a piece of the app's private key and a function that lists
// the tokens issued, for the secrets scan.
func createGitHubAppApp(t *testing.T) (key []byte, tokens func() []string) {
	t.Helper()
	ns, name := uniq("sec"), uniq("ghapp")
	gh := testbed.StartGitHubApps(testbed.GitHubAppsOptions{})
	t.Cleanup(gh.Close)
	pem, err := gh.NewApp(424242, 4242)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	open, err := testbed.StartGitServer(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = open.Close() })
	pushURL, err := open.CreateRepo("acme/" + name + ".git")
	if err != nil {
		t.Fatal(err)
	}
	work, err := testbed.NewWorkRepo(t.Context(), t.TempDir(), pushURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	push(t, work, map[string]string{"app/svc.yaml": serviceYAML})
	git, err := testbed.StartGitServer(root, testbed.GitServerOptions{Authorize: func(user, pass string) bool {
		return user == "x-access-token" && gh.TokenValid(pass)
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = git.Close() })
	prefix := git.URL("acme") + "/"
	tmpl := settings.Repository{URL: prefix, GitHubAppID: 424242, GitHubAppInstallationID: 4242, GitHubAppPrivateKey: pem,
		GitHubAppEnterpriseBaseURL: gh.EnterpriseBaseURL()}
	if code := call(t, http.MethodPost, "/api/v1/repocreds", tmpl, nil); code != http.StatusCreated {
		t.Fatalf("create credential template: status %d", code)
	}
	t.Cleanup(func() { _ = bed.settings.DeleteRepoCreds(t.Context(), prefix) })
	body := appBody(name, git.URL("acme/"+name+".git"), "app", ns)
	body["syncPolicy"].(map[string]any)["automated"] = map[string]any{"prune": true}
	if code := call(t, http.MethodPost, "/api/v1/applications", body, nil); code != http.StatusCreated {
		t.Fatalf("create: status %d", code)
	}
	eventually(t, 60*time.Second, "GitHub App repository synced", func() (bool, string) {
		v := appView(t, name)
		return v.Status.Sync == appspec.SyncSynced, string(v.Status.Sync) + ": " + v.Status.Message
	})
	if gh.Exchanges() == 0 {
		t.Fatal("no installation token was issued")
	}
	line := strings.Split(pem, "\n")[2] // a line of the key's body
	return []byte(line), gh.Issued
}
