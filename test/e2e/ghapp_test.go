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
	r := testbed.StartGitHubAppRepo(t, testbed.GitHubAppsOptions{}, 424242, 4242, "acme/"+name+".git", map[string]string{"app/svc.yaml": serviceYAML})
	gh, pem := r.API, r.Key
	prefix := r.Git.URL("acme") + "/"
	tmpl := settings.Repository{URL: prefix, GitHubAppID: 424242, GitHubAppInstallationID: 4242, GitHubAppPrivateKey: pem,
		GitHubAppEnterpriseBaseURL: gh.EnterpriseBaseURL()}
	if code := call(t, http.MethodPost, "/api/v1/repocreds", tmpl, nil); code != http.StatusCreated {
		t.Fatalf("create credential template: status %d", code)
	}
	t.Cleanup(func() { _ = bed.settings.DeleteRepoCreds(t.Context(), prefix) })
	body := appBody(name, r.URL, "app", ns)
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
