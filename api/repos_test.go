package api

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/settings"
	"github.com/windlass-cd/windlass/internal/testbed"
)

// TestRepositoryConnectionTimeout: the connection test of a Git server
// that accepts and never answers (SSH, or HTTPS in the TLS handshake), or
// that stalls after its headers, fails with a timeout.
func TestRepositoryConnectionTimeout(t *testing.T) {
	silent := testbed.SilentListener(t)
	stalled := testbed.StallingServer(t, testbed.Stall{Headers: true, ContentType: "application/x-git-upload-pack-advertisement"})
	en := newEnv(t, func(o *Options) { o.RepoCheck, o.GitTimeout = nil, 200*time.Millisecond })
	var steps []step
	for _, tt := range []struct {
		name string
		repo settings.Repository
	}{
		{"ssh", settings.Repository{URL: "ssh://git@" + silent + "/team/app.git", SSHPrivateKey: testSSHKey(t), InsecureIgnoreHostKey: true}},
		{"https handshake", settings.Repository{URL: "https://" + silent + "/team/app.git"}},
		{"after the headers", settings.Repository{URL: stalled.URL + "/team/app.git"}},
	} {
		steps = append(steps, step{name: tt.name, req: request{method: http.MethodPost, path: "/api/v1/repositories", body: jsonBody(t, tt.repo)},
			status: http.StatusUnprocessableEntity, field: "url", detail: "timed out after 200ms"})
	}
	runSteps(t, en, steps)
}

// testSSHKey is a new ed25519 private key in PEM.
func testSSHKey(t *testing.T) string {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(block))
}

// TestRepositoryURLPassword: a URL with a password is refused, and the
// password shows in no response and no log line.
func TestRepositoryURLPassword(t *testing.T) {
	const password = "typed-in-PASSWORD"
	var logs bytes.Buffer
	en := newEnv(t, logTo(&logs))
	withPassword := "https://deploy:" + password + "@git.example.com/team-a/infra.git"
	var bodies []response
	for _, tt := range []struct {
		name string
		url  string
	}{
		{name: "https", url: withPassword},
		{name: "ssh", url: "ssh://git:" + password + "@git.example.com/team-a/infra.git"},
		{name: "unparsable", url: "https://deploy:" + password + "@git.example.com:port/infra.git"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, path := range []string{"/api/v1/repositories", "/api/v1/repositories?upsert=true"} {
				res := en.admin(request{method: http.MethodPost, path: path, body: jsonBody(t, settings.Repository{URL: tt.url})})
				res.wantProblem(t, http.StatusBadRequest, "", "use the username and password")
				bodies = append(bodies, res)
			}
		})
	}
	bodies = append(bodies, en.admin(request{method: http.MethodGet, path: "/api/v1/repositories"}),
		en.admin(request{method: http.MethodGet, path: "/api/v1/repositories/" + url.PathEscape(withPassword)}))
	for _, res := range bodies {
		if strings.Contains(string(res.body), password) {
			t.Errorf("a response shows the password: %s", res.body)
		}
	}
	if strings.Contains(logs.String(), password) {
		t.Errorf("the log shows the password:\n%s", logs.String())
	}
	if _, err := en.settings.Repo(t.Context(), withPassword); err == nil {
		t.Error("the repository was stored")
	}
}

// TestRepositoryTransport: a URL of a transport other than Git's usual
// ones is refused as such.
func TestRepositoryTransport(t *testing.T) {
	en := newEnv(t)
	runSteps(t, en, []step{
		{name: "ext", req: request{method: http.MethodPost, path: "/api/v1/repositories", body: jsonBody(t, settings.Repository{URL: "ext::ssh-evil%S"})},
			status: http.StatusBadRequest, detail: `transport "ext" is not allowed; use https, http, ssh`},
	})
}

// TestApplicationURLPassword: an application whose repoURL holds a password
// is refused with 400, and the password shows in no response and no log.
func TestApplicationURLPassword(t *testing.T) {
	const password = "app-url-PASSWORD"
	var logs bytes.Buffer
	en := newEnv(t, logTo(&logs))
	withPassword := "https://deploy:" + password + "@git.example.com/default/guestbook.git"
	single := runningDefaultApp
	single.Name = "url-password"
	single.Source.RepoURL = withPassword
	multi := single
	multi.Source = appspec.Source{}
	multi.Sources = []appspec.Source{runningDefaultApp.Source, {RepoURL: withPassword, Path: "."}}
	replace := runningDefaultApp
	replace.Source.RepoURL = withPassword
	apps := "/api/v1/applications"
	for _, tt := range []struct {
		name  string
		req   request
		field string
	}{
		{name: "create", req: request{method: http.MethodPost, path: apps, body: jsonBody(t, single)}, field: "source.repoURL"},
		{name: "upsert", req: request{method: http.MethodPost, path: apps + "?upsert=true", body: jsonBody(t, single)}, field: "source.repoURL"},
		{name: "multi-source", req: request{method: http.MethodPost, path: apps, body: jsonBody(t, multi)}, field: "sources[1].repoURL"},
		{name: "replace", req: request{method: http.MethodPut, path: apps + "/" + replace.Name, body: jsonBody(t, replace)}, field: "source.repoURL"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := en.admin(tt.req)
			res.wantProblem(t, http.StatusBadRequest, tt.field, "register the repository's credentials")
			if strings.Contains(string(res.body), password) {
				t.Errorf("the response shows the password: %s", res.body)
			}
		})
	}
	if strings.Contains(logs.String(), password) {
		t.Errorf("the log shows the password:\n%s", logs.String())
	}
}

// logTo makes the server log at debug level into w.
func logTo(w *bytes.Buffer) envOption {
	return func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
}

// TestRepositoryGitHubApp: a repository with a GitHub App passes the
// connection test against a Git server that takes only the app's
// installation tokens; a wrong installation fails it naming the app and
// installation; bad fields are 400s naming the field. No response and no
// log line holds the key.
func TestRepositoryGitHubApp(t *testing.T) {
	var logs bytes.Buffer
	en := newEnv(t, logTo(&logs), func(o *Options) { o.RepoCheck = nil })
	gh := testbed.StartGitHubAppRepo(t, testbed.GitHubAppsOptions{}, 5, 50, "acme/app.git", map[string]string{"a.yaml": "a: 1\n"})
	key, repoURL := gh.Key, gh.URL
	app := settings.Repository{URL: repoURL, GitHubAppID: 5, GitHubAppInstallationID: 50, GitHubAppPrivateKey: key,
		GitHubAppEnterpriseBaseURL: gh.API.EnterpriseBaseURL()}
	with := func(f func(r *settings.Repository)) string { r := app; f(&r); return jsonBody(t, r) }
	post := func(body string) request {
		return request{method: http.MethodPost, path: "/api/v1/repositories?upsert=true", body: body}
	}
	runSteps(t, en, []step{
		{name: "connection test passes", req: post(jsonBody(t, app)), status: http.StatusCreated, check: func(t *testing.T, res response) {
			var v settings.RepositoryView
			if err := json.Unmarshal(res.body, &v); err != nil || v.GitHubAppID != 5 || v.GitHubAppInstallationID != 50 || !v.HasGitHubAppPrivateKey {
				t.Errorf("view = %s, %v", res.body, err)
			}
		}},
		{name: "wrong installation", req: post(with(func(r *settings.Repository) { r.GitHubAppInstallationID = 51 })),
			status: http.StatusUnprocessableEntity, field: "url", detail: "GitHub App 5 installation 51"},
		{name: "key not PEM", req: post(with(func(r *settings.Repository) { r.GitHubAppPrivateKey = "MIIE" + key[40:80] })),
			status: http.StatusBadRequest, field: "githubAppPrivateKey", detail: "not an RSA key in PEM"},
		{name: "no installation", req: post(with(func(r *settings.Repository) { r.GitHubAppInstallationID = 0 })),
			status: http.StatusBadRequest, field: "githubAppInstallationID", detail: "installation ID"},
		{name: "template without app ID", req: request{method: http.MethodPost, path: "/api/v1/repocreds",
			body: with(func(r *settings.Repository) { r.URL, r.GitHubAppID = "https://github.example/acme/", 0 })},
			status: http.StatusBadRequest, field: "githubAppID", detail: "app ID"},
		{name: "get", req: request{method: http.MethodGet, path: "/api/v1/repositories/" + url.PathEscape(repoURL)}, status: http.StatusOK},
	})
	body := strings.Split(key, "\n")[1][:32]
	for _, where := range []string{logs.String()} {
		if strings.Contains(where, body) || strings.Contains(where, "PRIVATE KEY") {
			t.Errorf("the log shows the key:\n%s", where)
		}
	}
	if r, err := en.settings.Repo(t.Context(), repoURL); err != nil || r.GitHubAppPrivateKey != key {
		t.Errorf("stored repository: %+v, %v; want its key", r.View(), err)
	}
}
