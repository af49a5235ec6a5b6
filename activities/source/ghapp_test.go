package source

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/windlass-cd/windlass/internal/ghapp"
	"github.com/windlass-cd/windlass/internal/secretstore"
	"github.com/windlass-cd/windlass/internal/settings"
	"github.com/windlass-cd/windlass/internal/testbed"
)

// testClock moves only when told; the token endpoint, the Git server
// and the token cache share it.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *testClock) advance(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }

// TestGitHubApp resolves and checks out a repository from a Git server
// that accepts only live installation tokens of a GitHub App, with the
// app registered on the repository or on a credential template. The
// token is replaced once it expires and when the server revokes it; a
// revoked key and a wrong installation are permanent errors that name
// the app and the installation and never the key.
func TestGitHubApp(t *testing.T) {
	clock := &testClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	gh := testbed.StartGitHubApps(testbed.GitHubAppsOptions{Now: clock.now})
	t.Cleanup(gh.Close)
	key, err := gh.NewApp(7, 70)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	// Push anonymously; serve the same repositories behind the app's tokens.
	_, w := fixtureRepo(t, gitServerAt(t, root), "org/app.git", nil)
	sha := commit(t, w, "one", map[string]string{"app/cm.yaml": "a: 1\n"})
	var seen sync.Map // the passwords the Git server was sent
	var refused atomic.Int32
	srv := gitServerAt(t, root, testbed.GitServerOptions{Authorize: func(user, pass string) bool {
		seen.Store(pass, true)
		ok := user == "x-access-token" && gh.TokenValid(pass)
		if !ok {
			refused.Add(1)
		}
		return ok
	}})
	url := srv.URL("org/app.git")
	app := settings.Repository{URL: url, GitHubAppID: 7, GitHubAppInstallationID: 70, GitHubAppPrivateKey: key,
		GitHubAppEnterpriseBaseURL: gh.EnterpriseBaseURL()}

	setup := func(t *testing.T, repo, tmpl *settings.Repository) *Activities {
		t.Helper()
		st, err := settings.New(&secretstore.Memory{})
		if err != nil {
			t.Fatal(err)
		}
		if repo != nil {
			if err := st.PutRepo(t.Context(), *repo); err != nil {
				t.Fatal(err)
			}
		}
		if tmpl != nil {
			if err := st.PutRepoCreds(t.Context(), *tmpl); err != nil {
				t.Fatal(err)
			}
		}
		return newActivities(t, &RegisteredAuth{Repos: st, GitHubApps: ghapp.NewTokens(ghapp.WithClock(clock.now))})
	}
	checkout := func(t *testing.T, a *Activities, want string) {
		t.Helper()
		out, err := a.ResolveRevision(t.Context(), ResolveInput{RepoURL: url, Revision: "main", Hard: true})
		if err != nil || out.SHA != want {
			t.Fatalf("ResolveRevision() = %+v, %v; want %s", out, err, want)
		}
		dir, err := a.Checkout(t.Context(), url, want)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "app", "cm.yaml")); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("registered repository", func(t *testing.T) {
		a := setup(t, &app, nil)
		before := gh.Exchanges()
		checkout(t, a, sha)
		if n := gh.Exchanges() - before; n != 1 {
			t.Errorf("token exchanges = %d, want 1 for a resolve and a checkout", n)
		}
		// 56 minutes on, the token is near its expiry: a new one serves
		// the next sync, before the Git server refuses the old one.
		clock.advance(56 * time.Minute)
		sha2 := commit(t, w, "two", map[string]string{"app/cm.yaml": "a: 2\n"})
		checkout(t, a, sha2)
		if n := gh.Exchanges() - before; n != 2 || refused.Load() != 0 {
			t.Errorf("token exchanges = %d, refusals %d; want 2 and none as the first token neared its expiry", n, refused.Load())
		}
		// A token the server revoked before its expiry is replaced.
		gh.RevokeTokens()
		sha = commit(t, w, "three", map[string]string{"app/cm.yaml": "a: 3\n"})
		checkout(t, a, sha)
		if refused.Load() == 0 || gh.Exchanges()-before != 3 {
			t.Errorf("revoked token: refusals %d, exchanges %d; want some and 3", refused.Load(), gh.Exchanges()-before)
		}
	})

	t.Run("credential template", func(t *testing.T) {
		tmpl := app
		tmpl.URL = strings.TrimSuffix(url, "org/app.git")
		checkout(t, setup(t, nil, &tmpl), sha)
	})

	key8, err := gh.NewApp(8, 80)
	if err != nil {
		t.Fatal(err)
	}
	gh.RevokeKey(8)
	revoked := app
	revoked.GitHubAppID, revoked.GitHubAppInstallationID, revoked.GitHubAppPrivateKey = 8, 80, key8
	wrongInst := app
	wrongInst.GitHubAppInstallationID = 71
	for _, tt := range []struct {
		name, typ, mention string
		repo               settings.Repository
	}{
		{"revoked key", "GitHubAppRefused", "GitHub App 8 installation 80", revoked},
		{"wrong installation", "GitHubAppInstallationNotFound", "GitHub App 7 installation 71", wrongInst},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := setup(t, &tt.repo, nil)
			_, err := a.ResolveRevision(t.Context(), ResolveInput{RepoURL: url, Revision: "main", Hard: true})
			wantErrType(t, err, tt.typ)
			if !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("error %q does not name %q", err, tt.mention)
			}
			body := strings.Split(tt.repo.GitHubAppPrivateKey, "\n")[1]
			if strings.Contains(err.Error(), body[:24]) {
				t.Errorf("error holds the key: %v", err)
			}
			if _, err := a.Checkout(t.Context(), url, sha); !ghapp.Refused(err) {
				t.Errorf("Checkout() = %v, want the app refused", err)
			}
		})
	}

	// The Git server saw tokens only, never the key.
	seen.Range(func(k, _ any) bool {
		if p := k.(string); strings.Contains(p, "PRIVATE KEY") || !strings.HasPrefix(p, "ghs_") {
			t.Errorf("the Git server was sent %q", p)
		}
		return true
	})
}
