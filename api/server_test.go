package api

import (
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/windlass-cd/windlass/api/auth"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/settings"
)

// step is one request of a handler test, run in order with the others.
type step struct {
	name string
	req  request // sent with admin's session unless it has a token
	// status is the expected status; a 4xx or 5xx must be a problem
	// naming field, whose detail contains detail.
	status        int
	field, detail string
	// check inspects a successful response.
	check func(t *testing.T, res response)
	// save keeps the token of a TokenResponse under this name, for the
	// later steps whose req.token is "{name}".
	save string
}

func runSteps(t *testing.T, en *env, steps []step) {
	t.Helper()
	saved := map[string]string{}
	for _, s := range steps {
		ok := t.Run(s.name, func(t *testing.T) {
			req := s.req
			if req.token == "" {
				req.token = en.tokens[auth.AdminAccount]
			}
			if name, ok := strings.CutPrefix(req.token, "{"); ok {
				req.token = saved[strings.TrimSuffix(name, "}")]
			}
			res := en.do(req)
			if s.status >= 400 {
				res.wantProblem(t, s.status, s.field, s.detail)
				return
			}
			res.wantStatus(t, s.status)
			if s.save != "" {
				var tr TokenResponse
				res.decode(t, &tr)
				if tr.Token == "" || tr.ID == "" {
					t.Fatalf("token response %s: want a token and an ID", res.body)
				}
				saved[s.save] = tr.Token
			}
			if s.check != nil {
				s.check(t, res)
			}
		})
		if !ok {
			t.FailNow() // later steps depend on this one
		}
	}
}

// wantJSON returns a check that the body decodes into a T equal to want.
func wantJSON[T any](want T, opts ...cmp.Option) func(t *testing.T, res response) {
	return func(t *testing.T, res response) {
		t.Helper()
		var got T
		res.decode(t, &got)
		if diff := cmp.Diff(want, got, opts...); diff != "" {
			t.Errorf("body (-want +got):\n%s", diff)
		}
	}
}

// wantNames returns a check that a list's items have these key fields.
func wantNames(key string, want ...string) func(t *testing.T, res response) {
	return func(t *testing.T, res response) {
		t.Helper()
		if diff := cmp.Diff(want, res.listNames(t, key)); diff != "" {
			t.Errorf("items (-want +got):\n%s", diff)
		}
	}
}

func testdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// waitIndexed waits until the visibility index lists the running apps
// with their search attributes, which the deletion checks count.
func waitIndexed(t *testing.T, en *env) {
	t.Helper()
	eventually(t, visibilityWait, func() error {
		n, err := en.srv.countApps(t.Context(), "WindlassProject", teamProject)
		if err == nil && n == 0 {
			err = errors.New("team-a's application is not indexed yet")
		}
		return err
	})
}

func TestProjects(t *testing.T) {
	en := newEnv(t)
	waitIndexed(t, en)
	teamB := appspec.Project{Name: "team-b", Description: "Team B", SourceRepos: []string{"https://git.example.com/team-b/*"},
		Destinations: []appspec.ProjectDestination{{Server: "*", Namespace: "team-b"}}}
	renamed := teamB
	renamed.Name = "team-x"
	changedB := teamB
	changedB.Description = "Team B, changed"
	imported, err := appspec.ParseProject([]byte(testdata(t, "appproject.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	myDefault := appspec.DefaultProjectSpec()
	myDefault.Description = "replaced"
	myDefault.SourceRepos = []string{"https://git.example.com/*"}
	runSteps(t, en, []step{
		{name: "create", req: request{method: http.MethodPost, path: "/api/v1/projects", body: jsonBody(t, teamB)},
			status: http.StatusCreated, check: wantJSON(teamB)},
		{name: "create again", req: request{method: http.MethodPost, path: "/api/v1/projects", body: jsonBody(t, teamB)},
			status: http.StatusConflict, detail: "project team-b already exists"},
		{name: "get", req: request{method: http.MethodGet, path: "/api/v1/projects/team-b"},
			status: http.StatusOK, check: wantJSON(teamB)},
		{name: "update", req: request{method: http.MethodPut, path: "/api/v1/projects/team-b", body: jsonBody(t, changedB)},
			status: http.StatusOK, check: wantJSON(changedB)},
		{name: "get updated", req: request{method: http.MethodGet, path: "/api/v1/projects/team-b"},
			status: http.StatusOK, check: wantJSON(changedB)},
		{name: "update renames", req: request{method: http.MethodPut, path: "/api/v1/projects/team-b", body: jsonBody(t, renamed)},
			status: http.StatusBadRequest, field: "name", detail: "does not match the URL"},
		{name: "update unknown", req: request{method: http.MethodPut, path: "/api/v1/projects/team-x", body: jsonBody(t, renamed)},
			status: http.StatusNotFound, detail: "team-x"},
		{name: "import Argo CD AppProject", req: request{method: http.MethodPost, path: "/api/v1/projects", body: testdata(t, "appproject.yaml")},
			status: http.StatusCreated, check: wantJSON(imported)},
		{name: "get imported", req: request{method: http.MethodGet, path: "/api/v1/projects/team-c"},
			status: http.StatusOK, check: func(t *testing.T, res response) {
				wantJSON(imported)(t, res)
				if imported.Roles[0].Name != "deployer" || imported.Destinations[1].Namespace != "shared" {
					t.Errorf("the AppProject was not converted as expected: %+v", imported)
				}
			}},
		// The imported role is in force at once.
		{name: "mint a token of the imported role", req: request{method: http.MethodPost, path: "/api/v1/projects/team-c/roles/deployer/tokens"},
			status: http.StatusCreated, save: "deployer"},
		{name: "imported role may sync", req: request{method: http.MethodPost, path: "/api/v1/applications/ghost/sync?project=team-c", token: "{deployer}"},
			status: http.StatusNotFound, detail: "application not found"},
		{name: "imported role may not get", req: request{method: http.MethodGet, path: "/api/v1/applications/ghost?project=team-c", token: "{deployer}"},
			status: http.StatusForbidden, detail: "permission denied: applications, get, team-c/ghost"},
		{name: "role policy outside its project", req: request{method: http.MethodPost, path: "/api/v1/projects", body: jsonBody(t, appspec.Project{
			Name: "team-d", Roles: []appspec.ProjectRole{{Name: "sneaky", Policies: []string{"p, proj:team-d:sneaky, applications, get, team-a/*, allow"}}},
		})}, status: http.StatusBadRequest, field: "roles", detail: "team-a/*"},
		{name: "rejected project is not stored", req: request{method: http.MethodGet, path: "/api/v1/projects/team-d"},
			status: http.StatusNotFound, detail: "team-d"},
		{name: "invalid name", req: request{method: http.MethodPost, path: "/api/v1/projects", body: `{"name": "Team_D"}`},
			status: http.StatusBadRequest, field: "name"},
		{name: "invalid name in URL", req: request{method: http.MethodGet, path: "/api/v1/projects/Team_D"},
			status: http.StatusBadRequest, field: "project"},
		{name: "malformed body", req: request{method: http.MethodPost, path: "/api/v1/projects", body: "name: [unclosed"},
			status: http.StatusBadRequest},
		{name: "list", req: request{method: http.MethodGet, path: "/api/v1/projects"},
			status: http.StatusOK, check: wantNames("name", "default", "team-a", "team-b", "team-c")},
		{name: "delete a project with applications", req: request{method: http.MethodDelete, path: "/api/v1/projects/team-a"},
			status: http.StatusConflict, detail: "project team-a still has 1 applications"},
		{name: "delete", req: request{method: http.MethodDelete, path: "/api/v1/projects/team-b"}, status: http.StatusNoContent},
		{name: "get deleted", req: request{method: http.MethodGet, path: "/api/v1/projects/team-b"},
			status: http.StatusNotFound, detail: "team-b"},
		{name: "delete again", req: request{method: http.MethodDelete, path: "/api/v1/projects/team-b"},
			status: http.StatusNotFound, detail: "team-b"},
		{name: "replace default", req: request{method: http.MethodPut, path: "/api/v1/projects/default", body: jsonBody(t, myDefault)},
			status: http.StatusOK, check: wantJSON(myDefault)},
		{name: "get replaced default", req: request{method: http.MethodGet, path: "/api/v1/projects/default"},
			status: http.StatusOK, check: wantJSON(myDefault)},
		{name: "delete default", req: request{method: http.MethodDelete, path: "/api/v1/projects/default"}, status: http.StatusNoContent},
		{name: "built-in default remains", req: request{method: http.MethodGet, path: "/api/v1/projects/default"},
			status: http.StatusOK, check: wantJSON(appspec.DefaultProjectSpec())},
	})
}

func TestRepositories(t *testing.T) {
	en := newEnv(t)
	const repo = "https://git.example.com/team-a/infra.git"
	path := "/api/v1/repositories/" + url.PathEscape(repo)
	view := settings.RepositoryView{URL: repo, Project: teamProject, Username: "deploy", HasPassword: true}
	create := jsonBody(t, settings.Repository{URL: repo, Project: teamProject, Username: "deploy", Password: "pa55-SECRET"})
	runSteps(t, en, []step{
		{name: "create", req: request{method: http.MethodPost, path: "/api/v1/repositories", body: create},
			status: http.StatusCreated, check: wantJSON(view)},
		{name: "duplicate", req: request{method: http.MethodPost, path: "/api/v1/repositories", body: create},
			status: http.StatusConflict, detail: "already registered"},
		{name: "upsert", req: request{method: http.MethodPost, path: "/api/v1/repositories?upsert=true", body: create},
			status: http.StatusCreated, check: wantJSON(view)},
		{name: "connection test fails", req: request{method: http.MethodPost, path: "/api/v1/repositories",
			body: jsonBody(t, settings.Repository{URL: "https://git.example.com/" + checkFailure + ".git", Password: "x"})},
			status: http.StatusUnprocessableEntity, field: "url", detail: "connection test failed: authentication required: " + checkFailure},
		{name: "failed repository is not registered", req: request{method: http.MethodGet,
			path: "/api/v1/repositories/" + url.PathEscape("https://git.example.com/"+checkFailure+".git")},
			status: http.StatusNotFound},
		{name: "not JSON", req: request{method: http.MethodPost, path: "/api/v1/repositories", body: "{"},
			status: http.StatusBadRequest, detail: "not a valid repository"},
		{name: "no URL", req: request{method: http.MethodPost, path: "/api/v1/repositories", body: `{"username": "x"}`},
			status: http.StatusBadRequest},
		{name: "list", req: request{method: http.MethodGet, path: "/api/v1/repositories"},
			status: http.StatusOK, check: wantJSON(RepoList{Items: []settings.RepositoryView{view}})},
		{name: "get", req: request{method: http.MethodGet, path: path}, status: http.StatusOK, check: wantJSON(view)},
		{name: "delete", req: request{method: http.MethodDelete, path: path}, status: http.StatusNoContent},
		{name: "get deleted", req: request{method: http.MethodGet, path: path}, status: http.StatusNotFound},
		{name: "delete again", req: request{method: http.MethodDelete, path: path}, status: http.StatusNotFound},
		{name: "list empty", req: request{method: http.MethodGet, path: "/api/v1/repositories"},
			status: http.StatusOK, check: wantJSON(RepoList{Items: []settings.RepositoryView{}})},
	})
}

// TestRepoCreds stores, lists, gets and deletes credential templates,
// never showing their secrets, and refuses bad ones.
func TestRepoCreds(t *testing.T) {
	en := newEnv(t)
	const prefix = "https://git.example.com/team-a/"
	path := "/api/v1/repocreds/" + url.PathEscape(prefix)
	view := settings.RepositoryView{URL: prefix, Username: "bot", HasPassword: true, Proxy: "http://proxy.example:3128", NoProxy: ".internal"}
	create := jsonBody(t, settings.Repository{URL: prefix, Username: "bot", Password: "tmpl-SECRET", Proxy: "http://proxy.example:3128", NoProxy: ".internal"})
	runSteps(t, en, []step{
		{name: "create", req: request{method: http.MethodPost, path: "/api/v1/repocreds", body: create},
			status: http.StatusCreated, check: wantJSON(view)},
		{name: "duplicate", req: request{method: http.MethodPost, path: "/api/v1/repocreds", body: create},
			status: http.StatusConflict, detail: "exists"},
		{name: "upsert", req: request{method: http.MethodPost, path: "/api/v1/repocreds?upsert=true", body: create},
			status: http.StatusCreated, check: wantJSON(view)},
		{name: "with a project", req: request{method: http.MethodPost, path: "/api/v1/repocreds",
			body: jsonBody(t, settings.Repository{URL: "https://x.example/", Project: teamProject})},
			status: http.StatusBadRequest, detail: "has no project"},
		{name: "half a client certificate", req: request{method: http.MethodPost, path: "/api/v1/repocreds",
			body: jsonBody(t, settings.Repository{URL: "https://x.example/", TLSClientCertKey: "-----BEGIN EC PRIVATE KEY-----"})},
			status: http.StatusBadRequest, detail: "set both tlsClientCertData and tlsClientCertKey"},
		{name: "the viewer may not create", req: request{method: http.MethodPost, path: "/api/v1/repocreds", body: create, token: en.tokens[viewerAccount]},
			status: http.StatusForbidden},
		{name: "list", req: request{method: http.MethodGet, path: "/api/v1/repocreds"},
			status: http.StatusOK, check: wantJSON(RepoList{Items: []settings.RepositoryView{view}})},
		{name: "not a repository", req: request{method: http.MethodGet, path: "/api/v1/repositories"},
			status: http.StatusOK, check: wantJSON(RepoList{Items: []settings.RepositoryView{}})},
		{name: "get", req: request{method: http.MethodGet, path: path}, status: http.StatusOK, check: wantJSON(view)},
		{name: "delete", req: request{method: http.MethodDelete, path: path}, status: http.StatusNoContent},
		{name: "get deleted", req: request{method: http.MethodGet, path: path}, status: http.StatusNotFound},
	})
}

// An app may not use a repository registered for another project.
func TestProjectScopedRepository(t *testing.T) {
	en := newEnv(t)
	const repo = "https://git.example.com/team-a/scoped.git"
	if err := en.settings.PutRepo(t.Context(), settings.Repository{URL: repo, Project: teamProject}); err != nil {
		t.Fatal(err)
	}
	app := func(project string) string {
		return `{"name": "scoped", "project": "` + project + `", "source": {"repoURL": "` + repo + `", "path": "."}, "destination": {"server": "https://kubernetes.default.svc", "namespace": "team-a"}}`
	}
	runSteps(t, en, []step{
		{name: "another project", req: request{method: http.MethodPost, path: "/api/v1/applications", body: app("default")},
			status: http.StatusForbidden, field: "source.repoURL", detail: "registered for another project than default"},
	})
	// Its own project passes the scope check (what follows is the
	// workflow's business).
	res := en.admin(request{method: http.MethodPost, path: "/api/v1/applications", body: app(teamProject)})
	if strings.Contains(string(res.body), "registered for another project") {
		t.Fatalf("the repository's own project was refused: %s", res.body)
	}
}

func TestClusters(t *testing.T) {
	en := newEnv(t)
	waitIndexed(t, en)
	prod := settings.ClusterView{Name: "prod", Server: "https://prod.example.com:6443", HasCredentials: true}
	staging := settings.ClusterView{Name: "staging", Server: "https://staging.example.com:6443", HasCredentials: true}
	runSteps(t, en, []step{
		{name: "create from server and token", req: request{method: http.MethodPost, path: "/api/v1/clusters",
			body: `{"name": "prod", "server": "https://prod.example.com:6443", "bearerToken": "tok-SECRET"}`},
			status: http.StatusCreated, check: wantJSON(prod)},
		{name: "create from kubeconfig", req: request{method: http.MethodPost, path: "/api/v1/clusters",
			body: jsonBody(t, ClusterRequest{Kubeconfig: testdata(t, "kubeconfig.yaml"), Cluster: settings.Cluster{Name: "staging"}})},
			status: http.StatusCreated, check: wantJSON(staging)},
		{name: "kubeconfig without that context", req: request{method: http.MethodPost, path: "/api/v1/clusters",
			body: jsonBody(t, ClusterRequest{Kubeconfig: testdata(t, "kubeconfig.yaml"), Context: "nope"})},
			status: http.StatusBadRequest},
		{name: "kubeconfig that is not YAML", req: request{method: http.MethodPost, path: "/api/v1/clusters",
			body: jsonBody(t, ClusterRequest{Kubeconfig: "clusters: [unclosed"})},
			status: http.StatusBadRequest},
		{name: "connection test fails", req: request{method: http.MethodPost, path: "/api/v1/clusters",
			body: `{"name": "down", "server": "https://` + checkFailure + `.example.com", "bearerToken": "t"}`},
			status: http.StatusUnprocessableEntity, field: "server", detail: "connection test failed: dial tcp: " + checkFailure},
		{name: "no server", req: request{method: http.MethodPost, path: "/api/v1/clusters", body: `{"name": "nowhere"}`},
			status: http.StatusBadRequest},
		{name: "not JSON", req: request{method: http.MethodPost, path: "/api/v1/clusters", body: "["},
			status: http.StatusBadRequest, detail: "not a valid cluster"},
		{name: "list includes in-cluster", req: request{method: http.MethodGet, path: "/api/v1/clusters"},
			status: http.StatusOK, check: wantJSON(ClusterList{Items: []settings.ClusterView{inCluster, prod, staging}},
				cmpopts.SortSlices(func(a, b settings.ClusterView) bool { return a.Name < b.Name }))},
		{name: "delete in-cluster", req: request{method: http.MethodDelete, path: "/api/v1/clusters/in-cluster"},
			status: http.StatusBadRequest, detail: "in-cluster is built in"},
		{name: "create the destination of an application", req: request{method: http.MethodPost, path: "/api/v1/clusters",
			body: `{"name": "team-a", "server": "` + teamCluster + `", "bearerToken": "t"}`}, status: http.StatusCreated},
		{name: "delete the destination of an application", req: request{method: http.MethodDelete, path: "/api/v1/clusters/team-a"},
			status: http.StatusConflict, detail: "cluster team-a is the destination of 1 applications"},
		{name: "delete", req: request{method: http.MethodDelete, path: "/api/v1/clusters/prod"}, status: http.StatusNoContent},
		{name: "delete again", req: request{method: http.MethodDelete, path: "/api/v1/clusters/prod"},
			status: http.StatusNotFound, detail: "cluster prod is not registered"},
		{name: "list after delete", req: request{method: http.MethodGet, path: "/api/v1/clusters"},
			status: http.StatusOK, check: wantNames("name", "in-cluster", "staging", "team-a")},
	})
}

func TestAccounts(t *testing.T) {
	en := newEnv(t)
	viewer, nobody := en.tokens[viewerAccount], en.tokens[nobodyAccount]
	const newPassword = "viewer-new-password-456"
	password := func(name, current, next string) string {
		return jsonBody(t, PasswordRequest{Name: name, CurrentPassword: current, NewPassword: next})
	}
	runSteps(t, en, []step{
		{name: "list", req: request{method: http.MethodGet, path: "/api/v1/accounts"}, status: http.StatusOK,
			check: wantJSON(AccountList{Items: []Account{
				{Name: auth.AdminAccount, Enabled: true, Capabilities: []string{auth.CapabilityLogin}},
				{Name: nobodyAccount, Enabled: true, Capabilities: []string{auth.CapabilityLogin, auth.CapabilityAPIKey}},
				{Name: svcAccount, Enabled: true, Capabilities: []string{auth.CapabilityAPIKey}},
				{Name: viewerAccount, Enabled: true, Capabilities: []string{auth.CapabilityLogin}},
			}})},
		{name: "wrong current password", req: request{method: http.MethodPut, path: "/api/v1/account/password", token: viewer,
			body: password("", "not-my-password", newPassword)}, status: http.StatusUnauthorized},
		{name: "new password too short", req: request{method: http.MethodPut, path: "/api/v1/account/password", token: viewer,
			body: password("", testPasswords[viewerAccount], "short")}, status: http.StatusBadRequest},
		{name: "another account's password", req: request{method: http.MethodPut, path: "/api/v1/account/password", token: viewer,
			body: password(nobodyAccount, testPasswords[viewerAccount], newPassword)}, status: http.StatusForbidden},
		{name: "change own password", req: request{method: http.MethodPut, path: "/api/v1/account/password", token: viewer,
			body: password("", testPasswords[viewerAccount], newPassword)}, status: http.StatusNoContent},
		{name: "old password no longer logs in", req: request{method: http.MethodPost, path: "/api/v1/session",
			body: jsonBody(t, map[string]string{"username": viewerAccount, "password": testPasswords[viewerAccount]})},
			status: http.StatusUnauthorized},
		{name: "new password logs in", req: request{method: http.MethodPost, path: "/api/v1/session",
			body: jsonBody(t, map[string]string{"username": viewerAccount, "password": newPassword})}, status: http.StatusOK},
		{name: "admin sets another account's password", req: request{method: http.MethodPut, path: "/api/v1/account/password",
			body: password(viewerAccount, en.adminPassword, testPasswords[viewerAccount])}, status: http.StatusNoContent},
		{name: "mint own token", req: request{method: http.MethodPost, path: "/api/v1/accounts/nobody/tokens", token: nobody,
			body: `{"id": "laptop", "description": "my laptop", "expiresIn": "720h"}`}, status: http.StatusCreated, save: "laptop",
			check: func(t *testing.T, res response) {
				var tr TokenResponse
				res.decode(t, &tr)
				if tr.ID != "laptop" || time.Until(tr.ExpiresAt) < 719*time.Hour || time.Until(tr.ExpiresAt) > 721*time.Hour {
					t.Errorf("token response %+v: want ID laptop, expiring in 720h", tr)
				}
			}},
		{name: "the token authenticates", req: request{method: http.MethodGet, path: "/api/v1/session/userinfo", token: "{laptop}"},
			status: http.StatusOK, check: func(t *testing.T, res response) {
				var p auth.Principal
				res.decode(t, &p)
				if p.Name != nobodyAccount || p.Kind != auth.KindAPIToken {
					t.Errorf("userinfo %+v: want %s with an API token", p, nobodyAccount)
				}
			}},
		{name: "passwords are not changed with a token", req: request{method: http.MethodPut, path: "/api/v1/account/password", token: "{laptop}",
			body: password("", testPasswords[nobodyAccount], "nobody-new-password")},
			status: http.StatusForbidden, detail: "passwords are changed with a login session"},
		{name: "duplicate token ID", req: request{method: http.MethodPost, path: "/api/v1/accounts/nobody/tokens", token: nobody,
			body: `{"id": "laptop"}`}, status: http.StatusConflict},
		{name: "bad lifetime", req: request{method: http.MethodPost, path: "/api/v1/accounts/nobody/tokens", token: nobody,
			body: `{"expiresIn": "soon"}`}, status: http.StatusBadRequest, field: "expiresIn"},
		{name: "list own tokens", req: request{method: http.MethodGet, path: "/api/v1/accounts/nobody/tokens", token: nobody},
			status: http.StatusOK, check: func(t *testing.T, res response) {
				var list TokenList
				res.decode(t, &list)
				want := []auth.TokenInfo{{ID: "laptop", Subject: nobodyAccount, Description: "my laptop"}}
				if diff := cmp.Diff(want, list.Items, cmpopts.IgnoreFields(auth.TokenInfo{}, "IssuedAt", "ExpiresAt")); diff != "" {
					t.Errorf("tokens (-want +got):\n%s", diff)
				}
			}},
		{name: "another account's tokens", req: request{method: http.MethodPost, path: "/api/v1/accounts/svc/tokens", token: nobody},
			status: http.StatusForbidden, detail: "permission denied: accounts, update, svc"},
		{name: "own token without the apiKey capability", req: request{method: http.MethodPost, path: "/api/v1/accounts/viewer/tokens", token: viewer},
			status: http.StatusForbidden, detail: "apiKey"},
		{name: "admin mints for svc", req: request{method: http.MethodPost, path: "/api/v1/accounts/svc/tokens", body: `{"id": "svc-ci"}`},
			status: http.StatusCreated},
		{name: "delete another account's token as its own", req: request{method: http.MethodDelete, path: "/api/v1/accounts/nobody/tokens/svc-ci", token: nobody},
			status: http.StatusNotFound},
		{name: "delete own token", req: request{method: http.MethodDelete, path: "/api/v1/accounts/nobody/tokens/laptop", token: nobody},
			status: http.StatusNoContent},
		{name: "the deleted token is refused", req: request{method: http.MethodGet, path: "/api/v1/session/userinfo", token: "{laptop}"},
			status: http.StatusUnauthorized},
		{name: "list after delete", req: request{method: http.MethodGet, path: "/api/v1/accounts/nobody/tokens", token: nobody},
			status: http.StatusOK, check: wantJSON(TokenList{Items: []auth.TokenInfo{}})},
	})
}

func TestProjectRoleTokens(t *testing.T) {
	en := newEnv(t)
	tokens := "/api/v1/projects/team-a/roles/ci/tokens"
	runSteps(t, en, []step{
		{name: "mint", req: request{method: http.MethodPost, path: tokens, body: `{"id": "pipeline", "description": "CI"}`},
			status: http.StatusCreated, save: "pipeline"},
		{name: "duplicate ID", req: request{method: http.MethodPost, path: tokens, body: `{"id": "pipeline"}`},
			status: http.StatusConflict},
		{name: "unknown role", req: request{method: http.MethodPost, path: "/api/v1/projects/team-a/roles/nope/tokens"},
			status: http.StatusNotFound, detail: "project team-a has no role nope"},
		{name: "unknown project", req: request{method: http.MethodPost, path: "/api/v1/projects/ghost/roles/ci/tokens"},
			status: http.StatusNotFound},
		{name: "list", req: request{method: http.MethodGet, path: tokens}, status: http.StatusOK,
			check: func(t *testing.T, res response) {
				var list TokenList
				res.decode(t, &list)
				want := []auth.TokenInfo{{ID: envCIToken, Subject: "proj:team-a:ci"}, {ID: "pipeline", Subject: "proj:team-a:ci", Description: "CI"}}
				if diff := cmp.Diff(want, list.Items, cmpopts.IgnoreFields(auth.TokenInfo{}, "IssuedAt", "ExpiresAt")); diff != "" {
					t.Errorf("tokens (-want +got):\n%s", diff)
				}
			}},
		{name: "the token may sync team-a's apps", req: request{method: http.MethodPost, path: "/api/v1/applications/ghost/sync?project=team-a", token: "{pipeline}"},
			status: http.StatusNotFound, detail: "application not found"},
		{name: "the token may not read the project", req: request{method: http.MethodGet, path: "/api/v1/projects/team-a", token: "{pipeline}"},
			status: http.StatusForbidden, detail: "permission denied: projects, get, team-a"},
		// An account's token is not the role's to delete.
		{name: "mint for svc", req: request{method: http.MethodPost, path: "/api/v1/accounts/svc/tokens", body: `{"id": "svc-token"}`},
			status: http.StatusCreated},
		{name: "delete another subject's token", req: request{method: http.MethodDelete, path: tokens + "/svc-token"},
			status: http.StatusNotFound},
		{name: "delete", req: request{method: http.MethodDelete, path: tokens + "/pipeline"}, status: http.StatusNoContent},
		{name: "the deleted token is refused", req: request{method: http.MethodPost, path: "/api/v1/applications/ghost/sync?project=team-a", token: "{pipeline}"},
			status: http.StatusUnauthorized},
		{name: "delete again", req: request{method: http.MethodDelete, path: tokens + "/pipeline"}, status: http.StatusNotFound},
	})
}

func TestCreateApplication(t *testing.T) {
	en := newEnv(t)
	runSteps(t, en, []step{
		{name: "project forbids the namespace", req: request{method: http.MethodPost, path: "/api/v1/applications", body: testdata(t, "app-forbidden-namespace.yaml")},
			status: http.StatusForbidden, field: "destination", detail: `namespace "kube-system" is not permitted in project team-a`},
		{name: "callers who may not create learn nothing of the project", req: request{method: http.MethodPost, path: "/api/v1/applications",
			body: testdata(t, "app-forbidden-namespace.yaml"), token: en.tokens[viewerAccount]},
			status: http.StatusForbidden, detail: "permission denied: applications, create, team-a/intruder"},
		{name: "unsupported Argo CD field", req: request{method: http.MethodPost, path: "/api/v1/applications", body: testdata(t, "app-unsupported-field.yaml")},
			status: http.StatusBadRequest, field: "spec.sourceHydrator", detail: "not supported"},
		{name: "unknown destination cluster name", req: request{method: http.MethodPost, path: "/api/v1/applications",
			body: `{"name": "edge", "source": {"repoURL": "https://git.example.com/x.git"}, "destination": {"name": "nowhere", "namespace": "x"}}`},
			status: http.StatusBadRequest, field: "destination.name", detail: "no cluster is registered under the name nowhere"},
		{name: "a project that lists source namespaces", req: request{method: http.MethodPost, path: "/api/v1/projects",
			body: `{"name": "team-ns", "sourceRepos": ["*"], "destinations": [{"server": "*", "namespace": "*"}], "sourceNamespaces": ["team-ns-*"]}`},
			status: http.StatusCreated},
		{name: "application from a namespace its project does not list", req: request{method: http.MethodPost, path: "/api/v1/applications",
			body: "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: ns-app, namespace: elsewhere}\n" +
				"spec: {project: team-ns, source: {repoURL: 'https://git.example.com/x.git'}, destination: {namespace: web}}\n"},
			status: http.StatusForbidden, field: "sourceNamespace", detail: "applications from namespace elsewhere are not permitted in project team-ns"},
		{name: "destination name and server both", req: request{method: http.MethodPost, path: "/api/v1/applications",
			body: `{"name": "edge", "source": {"repoURL": "https://git.example.com/x.git"}, "destination": {"name": "prod", "server": "https://prod.example.com", "namespace": "x"}}`},
			status: http.StatusBadRequest, field: "destination", detail: "sets both server (https://prod.example.com) and name (prod)"},
		{name: "malformed YAML", req: request{method: http.MethodPost, path: "/api/v1/applications", body: testdata(t, "app-malformed.yaml")},
			status: http.StatusBadRequest},
		{name: "empty body", req: request{method: http.MethodPost, path: "/api/v1/applications"}, status: http.StatusBadRequest},
		{name: "unknown project", req: request{method: http.MethodPost, path: "/api/v1/applications", body: testdata(t, "app-unknown-project.yaml")},
			status: http.StatusForbidden, field: "project", detail: "project nowhere does not exist"},
		{name: "invalid name", req: request{method: http.MethodPost, path: "/api/v1/applications",
			body: `{"name": "Bad_Name", "source": {"repoURL": "https://git.example.com/x.git", "path": "."}, "destination": {"namespace": "x"}}`},
			status: http.StatusBadRequest, field: "name"},
		{name: "exists", req: request{method: http.MethodPost, path: "/api/v1/applications", body: testdata(t, "guestbook.yaml")},
			status: http.StatusConflict, detail: "application default/guestbook already exists"},
		{name: "update with another name", req: request{method: http.MethodPut, path: "/api/v1/applications/web", body: testdata(t, "guestbook.yaml")},
			status: http.StatusBadRequest, field: "name", detail: "does not match the URL"},
	})
}

// TestAppNames checks that names and projects that are not DNS labels,
// path traversal among them, are refused before they reach Temporal.
func TestAppNames(t *testing.T) {
	en := newEnv(t)
	for _, tc := range []struct{ method, path string }{
		{http.MethodGet, "/api/v1/applications/..%2F..%2Fetc"},
		{http.MethodGet, "/api/v1/applications/..%2F..%2Fetc%2Fpasswd/history"},
		{http.MethodGet, "/api/v1/applications/%2E%2E"},
		{http.MethodGet, "/api/v1/applications/guestbook%2F..%2Fweb?project=team-a"},
		{http.MethodGet, "/api/v1/applications/guestbook?project=..%2Fteam-a"},
		{http.MethodGet, "/api/v1/applications/web?project=default%2F..%2Fteam-a"},
		{http.MethodPost, "/api/v1/applications/..%2F..%2Fetc/sync"},
		{http.MethodDelete, "/api/v1/applications/..%2F..%2Fetc"},
		{http.MethodGet, "/api/v1/stream/applications/..%2F..%2Fetc"},
		{http.MethodGet, "/api/v1/projects/..%2F..%2Fetc"},
		{http.MethodGet, "/api/v1/repositories/..%2F..%2Fetc"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			res := en.admin(request{method: tc.method, path: tc.path})
			if res.code != http.StatusBadRequest && res.code != http.StatusNotFound {
				t.Fatalf("status %d, want 400 or 404: %s", res.code, res.body)
			}
			res.problem(t)
		})
	}
}

// TestListQueries checks the list's filters, sort and paging parameters.
func TestListQueries(t *testing.T) {
	en := newEnv(t)
	for _, tc := range []struct {
		path   string
		status int
		field  string
	}{
		{"/api/v1/applications?sort=size", http.StatusBadRequest, "sort"},
		{"/api/v1/applications?sort=-created", http.StatusOK, ""},
		{"/api/v1/applications?sort=name&cursor=bm90LWEtc29ydC1jdXJzb3I", http.StatusBadRequest, "cursor"},
		{"/api/v1/applications?project=team-a%27%20OR%20%27x%27%3D%27x", http.StatusBadRequest, "project"},
		{"/api/v1/applications?search=gu%27", http.StatusBadRequest, "search"},
		{"/api/v1/applications?health=Healthy%22", http.StatusBadRequest, "health"},
		{"/api/v1/applications?namespace=a%5Cb", http.StatusBadRequest, "namespace"},
		{"/api/v1/applications?repo=https://git.example.com/x%27", http.StatusBadRequest, "repo"},
		{"/api/v1/applications?limit=0", http.StatusBadRequest, "limit"},
		{"/api/v1/applications?limit=1001", http.StatusBadRequest, "limit"},
		{"/api/v1/applications?limit=ten", http.StatusBadRequest, "limit"},
		{"/api/v1/applications?cursor=%21%21%21", http.StatusBadRequest, "cursor"},
		{"/api/v1/stream/applications?sort=name", http.StatusBadRequest, "sort"},
		{"/api/v1/applications/guestbook/syncs?limit=0", http.StatusBadRequest, "limit"},
		{"/api/v1/applications/guestbook/syncs", http.StatusOK, ""},
		// A valid base64 cursor that is not one of the list's.
		{"/api/v1/applications/guestbook/syncs?cursor=bm90LWEtc3luYy1jdXJzb3I", http.StatusBadRequest, "cursor"},
		{"/api/v1/applications/guestbook/syncs/0/events", http.StatusBadRequest, "seq"},
		{"/api/v1/applications/guestbook/syncs/-1/events", http.StatusBadRequest, "seq"},
		{"/api/v1/applications/guestbook/syncs/99/events", http.StatusNotFound, ""},
	} {
		t.Run(tc.path, func(t *testing.T) {
			res := en.admin(request{method: http.MethodGet, path: tc.path})
			if tc.status >= 400 {
				res.wantProblem(t, tc.status, tc.field, "")
				return
			}
			res.wantStatus(t, tc.status)
		})
	}
	t.Run("filters and pages", func(t *testing.T) {
		eventually(t, visibilityWait, func() error {
			got := appNames(t, en.admin(request{method: http.MethodGet, path: "/api/v1/applications?project=team-a&search=we"}))
			if !slices.Equal(got, []string{"team-a/web"}) {
				return errors.New("project=team-a&search=we lists " + jsonBody(t, got))
			}
			return nil
		})
		var page AppList
		en.admin(request{method: http.MethodGet, path: "/api/v1/applications?limit=1"}).decode(t, &page)
		if len(page.Items) != 1 || page.Next == "" {
			t.Fatalf("limit=1: %+v, want one item and a next cursor", page)
		}
		var next AppList
		en.admin(request{method: http.MethodGet, path: "/api/v1/applications?limit=1&cursor=" + page.Next}).decode(t, &next)
		if len(next.Items) != 1 || next.Items[0].Name == page.Items[0].Name {
			t.Errorf("second page %+v after %+v: want the other application", next, page)
		}
	})
	t.Run("sorted pages", func(t *testing.T) {
		for _, tc := range []struct {
			sort string
			want []string
		}{
			{"name", []string{"default/guestbook", "team-a/web"}},
			{"-name", []string{"team-a/web", "default/guestbook"}},
			{"created", []string{"default/guestbook", "team-a/web"}}, // TestMain starts them in this order
		} {
			var got []string
			path := "/api/v1/applications?limit=1&sort=" + tc.sort
			for pages := 0; path != ""; pages++ {
				if pages > 200 {
					t.Fatalf("sort=%s: more pages than apps", tc.sort)
				}
				var p AppList
				en.admin(request{method: http.MethodGet, path: path}).decode(t, &p)
				for _, it := range p.Items {
					// Other tests create apps too; these two always run.
					if k := it.Project + "/" + it.Name; k == "default/guestbook" || k == teamProject+"/web" {
						got = append(got, k)
					}
				}
				path = ""
				if p.Next != "" {
					path = "/api/v1/applications?limit=1&sort=" + tc.sort + "&cursor=" + p.Next
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("sort=%s pages list %v, want %v", tc.sort, got, tc.want)
			}
		}
	})
}
