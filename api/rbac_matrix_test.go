package api

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/windlass-cd/windlass/api/auth"
	"github.com/windlass-cd/windlass/api/webhook"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/gpgkey"
	"github.com/windlass-cd/windlass/internal/settings"
	"github.com/windlass-cd/windlass/internal/testbed"
)

// The callers of the matrix.
const (
	// admin holds a session of the admin account (role:admin).
	admin = "admin"
	// readonly holds a session of viewer, bound to role:readonly.
	readonly = "readonly"
	// ci holds an API token of the team-a project role ci, which may get
	// and sync team-a's applications.
	ci = "ci"
	// norole holds a session of nobody, an account without a role.
	norole = "norole"
	// anonymous presents no token.
	anonymous = "anonymous"
)

var matrixCallers = []string{admin, readonly, ci, norole, anonymous}

// everyone lists the authenticated callers.
var everyone = []string{admin, readonly, ci, norole}

// matrixRoute is one request to one route, and who may make it.
type matrixRoute struct {
	// method and pattern name the route as the server registers it.
	method, pattern string
	// path is the request's path and query (default: pattern); path,
	// body and denied have {caller} replaced by the caller's name and
	// body {password} by the caller's password.
	path, body string
	// public routes need no token: every caller gets ok.
	public bool
	// fresh routes use up the token (logout): each caller sends a new one.
	fresh bool
	// allow lists the callers that may make the request; they get ok.
	allow []string
	ok    int
	// denied is what the 403 of the other authenticated callers says
	// (default: RBAC's "permission denied: " + perm).
	perm, denied string
}

// Repositories of the :url routes (path-escaped in the requests): the
// first is registered, the second is not.
const (
	matrixRepo        = "https://git.example.com/team-a/app.git"
	matrixMissingRepo = "https://git.example.com/team-a/missing.git"
	matrixTemplate    = "https://git.example.com/team-a/"
)

// matrixRoutes covers every route of the server (TestRBACMatrixCoversEveryRoute
// checks that). Application routes are requested for ghost, which does
// not exist, in both projects: allowed callers get a quick 404 (or 400,
// 200, 501), not a wait on application workflows that no worker runs.
func matrixRoutes(t *testing.T) []matrixRoute {
	ghost := func(project string) appspec.Application {
		return appspec.Application{Name: "ghost", Project: project,
			Source:      appspec.Source{RepoURL: "https://git.example.com/ghost.git", Path: "."},
			Destination: appspec.Destination{Server: appspec.InClusterServer, Namespace: "team-a-ghost"}}
	}
	routes := []matrixRoute{
		{method: http.MethodGet, pattern: "/healthz", public: true, ok: http.StatusOK},
		{method: http.MethodGet, pattern: "/api/v1/openapi.json", public: true, ok: http.StatusOK},
		{method: http.MethodPost, pattern: "/api/v1/session", public: true, ok: http.StatusOK,
			body: jsonBody(t, map[string]string{"username": nobodyAccount, "password": testPasswords[nobodyAccount]})},
		// A signed GitHub ping (see githubPing).
		{method: http.MethodPost, pattern: webhook.Path, public: true, ok: http.StatusOK},
		// Single sign-on is off on these servers: its config says so, the
		// rest is 404 (api/sso's tests run it against a real Dex).
		{method: http.MethodGet, pattern: "/api/v1/sso/config", public: true, ok: http.StatusOK},
		{method: http.MethodGet, pattern: "/api/v1/sso/login", public: true, ok: http.StatusNotFound},
		{method: http.MethodGet, pattern: "/api/v1/sso/callback", public: true, ok: http.StatusNotFound},
		{method: http.MethodPost, pattern: "/api/v1/sso/token", public: true, ok: http.StatusNotFound},
		{method: http.MethodDelete, pattern: "/api/v1/session", fresh: true, allow: everyone, ok: http.StatusNoContent},
		{method: http.MethodGet, pattern: "/api/v1/session/userinfo", allow: everyone, ok: http.StatusOK},
		{method: http.MethodGet, pattern: "/api/v1/session/can", path: "/api/v1/session/can?check=applications,sync,default/guestbook",
			allow: everyone, ok: http.StatusOK},
		{method: http.MethodGet, pattern: "/api/v1/settings/rbac", allow: []string{admin, readonly}, ok: http.StatusOK, perm: "accounts, get, *"},
		{method: http.MethodGet, pattern: "/api/v1/settings/resource-customizations", allow: []string{admin, readonly}, ok: http.StatusOK, perm: "repositories, get, *"},
		{method: http.MethodGet, pattern: "/api/v1/settings/notifications", allow: []string{admin, readonly}, ok: http.StatusOK, perm: "repositories, get, *"},
		{method: http.MethodPut, pattern: "/api/v1/settings/notifications", body: `{"config": ""}`, allow: []string{admin}, ok: http.StatusOK, perm: "repositories, update, *"},
		{method: http.MethodGet, pattern: "/api/v1/settings/notifications/secret", allow: []string{admin, readonly}, ok: http.StatusOK, perm: "repositories, get, *"},
		{method: http.MethodPatch, pattern: "/api/v1/settings/notifications/secret", body: `{"data": {"k": "v"}}`, allow: []string{admin}, ok: http.StatusOK, perm: "repositories, update, *"},
		{method: http.MethodPut, pattern: "/api/v1/settings/resource-customizations", body: `{"repoURL":""}`,
			allow: []string{admin}, ok: http.StatusOK, perm: "repositories, update, *"},
		// The web UI: its pages and files hold no data (the API calls
		// behind them authenticate).
		{method: http.MethodGet, pattern: "/", public: true, ok: http.StatusOK},
		{method: http.MethodGet, pattern: "/login", public: true, ok: http.StatusOK},
		{method: http.MethodGet, pattern: "/applications", public: true, ok: http.StatusOK},
		{method: http.MethodGet, pattern: "/applications/:project/:name", path: "/applications/default/guestbook", public: true, ok: http.StatusOK},
		{method: http.MethodGet, pattern: "/settings", public: true, ok: http.StatusOK},
		{method: http.MethodGet, pattern: "/settings/:section", path: "/settings/rbac", public: true, ok: http.StatusOK},
		{method: http.MethodGet, pattern: "/assets/:file", path: "/assets/missing.js", public: true, ok: http.StatusNotFound},
		{method: http.MethodGet, pattern: "/favicon.svg", public: true, ok: http.StatusOK},

		{method: http.MethodGet, pattern: "/api/v1/applications", allow: everyone, ok: http.StatusOK},
		{method: http.MethodGet, pattern: "/api/v1/stream/applications", allow: everyone, ok: http.StatusOK},
		{method: http.MethodPost, pattern: "/api/v1/applications", body: jsonBody(t, runningDefaultApp),
			allow: []string{admin}, ok: http.StatusConflict, perm: "applications, create, default/guestbook"},
		{method: http.MethodPost, pattern: "/api/v1/applications", body: jsonBody(t, runningTeamApp),
			allow: []string{admin}, ok: http.StatusConflict, perm: "applications, create, team-a/web"},
	}
	for _, r := range []struct {
		method, pattern, action, body string
		ok                            int
		allowDefault, allowTeam       []string
	}{
		{http.MethodGet, "/api/v1/applications/:name", "get", "", http.StatusNotFound,
			[]string{admin, readonly}, []string{admin, readonly, ci}},
		{http.MethodGet, "/api/v1/stream/applications/:name", "get", "", http.StatusNotFound,
			[]string{admin, readonly}, []string{admin, readonly, ci}},
		{http.MethodPut, "/api/v1/applications/:name", "update", "{spec}", http.StatusNotFound,
			[]string{admin}, []string{admin}},
		{http.MethodPatch, "/api/v1/applications/:name", "update", `{"refreshSeconds": 60}`, http.StatusNotFound,
			[]string{admin}, []string{admin}},
		{http.MethodPost, "/api/v1/applications/:name/sync", "sync", "", http.StatusNotFound,
			[]string{admin}, []string{admin, ci}},
		{http.MethodPost, "/api/v1/applications/:name/refresh", "get", "", http.StatusNotFound,
			[]string{admin, readonly}, []string{admin, readonly, ci}},
		{http.MethodPost, "/api/v1/applications/:name/rollback", "rollback", "", http.StatusBadRequest,
			[]string{admin}, []string{admin}},
		{http.MethodPost, "/api/v1/applications/:name/terminate", "sync", "", http.StatusNotFound,
			[]string{admin}, []string{admin, ci}},
		{http.MethodPost, "/api/v1/applications/:name/confirm-deletion", "delete", "", http.StatusNotFound,
			[]string{admin}, []string{admin}},
		{http.MethodDelete, "/api/v1/applications/:name", "delete", "", http.StatusNotFound,
			[]string{admin}, []string{admin}},
		{http.MethodGet, "/api/v1/applications/:name/history", "get", "", http.StatusNotFound,
			[]string{admin, readonly}, []string{admin, readonly, ci}},
		{http.MethodGet, "/api/v1/applications/:name/notifications", "get", "", http.StatusNotFound,
			[]string{admin, readonly}, []string{admin, readonly, ci}},
		{http.MethodGet, "/api/v1/applications/:name/syncs", "get", "", http.StatusOK,
			[]string{admin, readonly}, []string{admin, readonly, ci}},
		// ":seq" is no sync number: 400 after the permission check.
		{http.MethodGet, "/api/v1/applications/:name/syncs/:seq/events", "get", "", http.StatusBadRequest,
			[]string{admin, readonly}, []string{admin, readonly, ci}},
		{http.MethodGet, "/api/v1/applications/:name/resources", "get", "", http.StatusNotFound,
			[]string{admin, readonly}, []string{admin, readonly, ci}},
		{http.MethodGet, "/api/v1/applications/:name/operation", "get", "", http.StatusNotFound,
			[]string{admin, readonly}, []string{admin, readonly, ci}},
		// These servers have no Inspector: 501 after the permission check.
		{http.MethodGet, "/api/v1/applications/:name/diff", "get", "", http.StatusNotImplemented,
			[]string{admin, readonly}, []string{admin, readonly, ci}},
		{http.MethodGet, "/api/v1/applications/:name/manifests", "get", "", http.StatusNotImplemented,
			[]string{admin, readonly}, []string{admin, readonly, ci}},
		{http.MethodGet, "/api/v1/applications/:name/tree", "get", "", http.StatusNotImplemented,
			[]string{admin, readonly}, []string{admin, readonly, ci}},
		{http.MethodGet, "/api/v1/applications/:name/events", "get", "", http.StatusNotImplemented,
			[]string{admin, readonly}, []string{admin, readonly, ci}},
		// Nor a health log.
		{http.MethodGet, "/api/v1/applications/:name/health-history", "get", "", http.StatusNotImplemented,
			[]string{admin, readonly}, []string{admin, readonly, ci}},
	} {
		for _, proj := range []struct {
			name  string
			allow []string
		}{{appspec.DefaultProject, r.allowDefault}, {teamProject, r.allowTeam}} {
			body := r.body
			if body == "{spec}" {
				body = jsonBody(t, ghost(proj.name))
			}
			routes = append(routes, matrixRoute{
				method: r.method, pattern: r.pattern, body: body,
				path:  strings.Replace(r.pattern, ":name", "ghost", 1) + "?project=" + proj.name,
				allow: proj.allow, ok: r.ok, perm: "applications, " + r.action + ", " + proj.name + "/ghost",
			})
		}
	}
	// Resource actions: listing needs get (501: no Inspector), running
	// needs action/<group>/<Kind>/<action>, which only admin has.
	for _, proj := range []string{appspec.DefaultProject, teamProject} {
		const pattern = "/api/v1/applications/:name/resource/actions"
		path := "/api/v1/applications/ghost/resource/actions?project=" + proj + "&group=apps&kind=Deployment&name=web"
		allowGet := []string{admin, readonly}
		if proj == teamProject {
			allowGet = append(allowGet, ci)
		}
		routes = append(routes,
			matrixRoute{method: http.MethodGet, pattern: pattern, path: path, allow: allowGet, ok: http.StatusNotImplemented,
				perm: "applications, get, " + proj + "/ghost"},
			matrixRoute{method: http.MethodPost, pattern: pattern, path: path, body: `{"action": "restart"}`, allow: []string{admin},
				ok: http.StatusNotFound, perm: "applications, action/apps/Deployment/restart, " + proj + "/ghost"})
	}
	// One of ghost's resources: the fine-grained permission is checked
	// before get on the app, then the missing Inspector answers 501.
	const res = "group=apps&kind=Deployment&namespace=team-a-ghost&name=web"
	for _, r := range []struct {
		method, pattern, perm, body string
		allowDefault, allowTeam     []string
	}{
		{http.MethodGet, "/api/v1/applications/:name/resource", "applications, get", "",
			[]string{admin, readonly}, []string{admin, readonly, ci}},
		{http.MethodPatch, "/api/v1/applications/:name/resource", "applications, update/apps/Deployment/team-a-ghost/web", `{"spec":{}}`,
			[]string{admin}, []string{admin}},
		{http.MethodDelete, "/api/v1/applications/:name/resource", "applications, delete/apps/Deployment/team-a-ghost/web", "",
			[]string{admin}, []string{admin}},
		{http.MethodGet, "/api/v1/applications/:name/logs", "logs, get", "",
			[]string{admin, readonly}, []string{admin, readonly}},
	} {
		for _, proj := range []struct {
			name  string
			allow []string
		}{{appspec.DefaultProject, r.allowDefault}, {teamProject, r.allowTeam}} {
			routes = append(routes, matrixRoute{
				method: r.method, pattern: r.pattern, body: r.body,
				path:  strings.Replace(r.pattern, ":name", "ghost", 1) + "?project=" + proj.name + "&" + res,
				allow: proj.allow, ok: http.StatusNotImplemented, perm: r.perm + ", " + proj.name + "/ghost",
			})
		}
	}
	return append(routes,
		matrixRoute{method: http.MethodGet, pattern: "/api/v1/projects", allow: everyone, ok: http.StatusOK},
		matrixRoute{method: http.MethodPost, pattern: "/api/v1/projects", body: `{"name": "team-a"}`,
			allow: []string{admin}, ok: http.StatusConflict, perm: "projects, create, team-a"},
		matrixRoute{method: http.MethodGet, pattern: "/api/v1/projects/:project", path: "/api/v1/projects/team-a",
			allow: []string{admin, readonly}, ok: http.StatusOK, perm: "projects, get, team-a"},
		matrixRoute{method: http.MethodPut, pattern: "/api/v1/projects/:project", path: "/api/v1/projects/ghost", body: `{"name": "ghost"}`,
			allow: []string{admin}, ok: http.StatusNotFound, perm: "projects, update, ghost"},
		matrixRoute{method: http.MethodDelete, pattern: "/api/v1/projects/:project", path: "/api/v1/projects/ghost",
			allow: []string{admin}, ok: http.StatusNotFound, perm: "projects, delete, ghost"},
		matrixRoute{method: http.MethodPost, pattern: "/api/v1/projects/:project/roles/:role/tokens", path: "/api/v1/projects/team-a/roles/ci/tokens",
			allow: []string{admin}, ok: http.StatusCreated, perm: "projects, update, team-a"},
		matrixRoute{method: http.MethodGet, pattern: "/api/v1/projects/:project/roles/:role/tokens", path: "/api/v1/projects/team-a/roles/ci/tokens",
			allow: []string{admin, readonly}, ok: http.StatusOK, perm: "projects, get, team-a"},
		matrixRoute{method: http.MethodDelete, pattern: "/api/v1/projects/:project/roles/:role/tokens/:id", path: "/api/v1/projects/team-a/roles/ci/tokens/none",
			allow: []string{admin}, ok: http.StatusNotFound, perm: "projects, update, team-a"},

		matrixRoute{method: http.MethodGet, pattern: "/api/v1/repositories", allow: everyone, ok: http.StatusOK},
		matrixRoute{method: http.MethodPost, pattern: "/api/v1/repositories", body: `{"url": "https://git.example.com/matrix/{caller}.git"}`,
			allow: []string{admin}, ok: http.StatusCreated, perm: "repositories, create, https://git.example.com/matrix/{caller}.git"},
		matrixRoute{method: http.MethodGet, pattern: "/api/v1/repositories/:url", path: "/api/v1/repositories/" + url.PathEscape(matrixRepo),
			allow: []string{admin, readonly}, ok: http.StatusOK, perm: "repositories, get, " + matrixRepo},
		matrixRoute{method: http.MethodDelete, pattern: "/api/v1/repositories/:url", path: "/api/v1/repositories/" + url.PathEscape(matrixMissingRepo),
			allow: []string{admin}, ok: http.StatusNotFound, perm: "repositories, delete, " + matrixMissingRepo},
		matrixRoute{method: http.MethodGet, pattern: "/api/v1/repocreds", allow: everyone, ok: http.StatusOK},
		matrixRoute{method: http.MethodPost, pattern: "/api/v1/repocreds", body: `{"url": "https://git.example.com/matrix/{caller}/"}`,
			allow: []string{admin}, ok: http.StatusCreated, perm: "repositories, create, https://git.example.com/matrix/{caller}/"},
		matrixRoute{method: http.MethodGet, pattern: "/api/v1/repocreds/:url", path: "/api/v1/repocreds/" + url.PathEscape(matrixTemplate),
			allow: []string{admin, readonly}, ok: http.StatusOK, perm: "repositories, get, " + matrixTemplate},
		matrixRoute{method: http.MethodDelete, pattern: "/api/v1/repocreds/:url", path: "/api/v1/repocreds/" + url.PathEscape(matrixMissingRepo),
			allow: []string{admin}, ok: http.StatusNotFound, perm: "repositories, delete, " + matrixMissingRepo},

		matrixRoute{method: http.MethodGet, pattern: "/api/v1/gpgkeys", allow: everyone, ok: http.StatusOK},
		matrixRoute{method: http.MethodPost, pattern: "/api/v1/gpgkeys", body: jsonBody(t, GPGKeyCreate{KeyData: matrixGPGKeys(t)[1].KeyData}),
			allow: []string{admin}, ok: http.StatusCreated, perm: "gpgkeys, create, " + matrixGPGKeys(t)[1].KeyID},
		matrixRoute{method: http.MethodGet, pattern: "/api/v1/gpgkeys/:keyID", path: "/api/v1/gpgkeys/" + matrixGPGKeys(t)[0].KeyID,
			allow: []string{admin, readonly}, ok: http.StatusOK, perm: "gpgkeys, get, " + matrixGPGKeys(t)[0].KeyID},
		matrixRoute{method: http.MethodDelete, pattern: "/api/v1/gpgkeys/:keyID", path: "/api/v1/gpgkeys/0123456789ABCDEF",
			allow: []string{admin}, ok: http.StatusNotFound, perm: "gpgkeys, delete, 0123456789ABCDEF"},

		matrixRoute{method: http.MethodGet, pattern: "/api/v1/clusters", allow: everyone, ok: http.StatusOK},
		matrixRoute{method: http.MethodPost, pattern: "/api/v1/clusters",
			body:  `{"name": "new-{caller}", "server": "https://new-{caller}.example.com:6443", "bearerToken": "t"}`,
			allow: []string{admin}, ok: http.StatusCreated, perm: "clusters, create, https://new-{caller}.example.com:6443"},
		// del-<caller> is registered for each caller.
		matrixRoute{method: http.MethodDelete, pattern: "/api/v1/clusters/:name", path: "/api/v1/clusters/del-{caller}",
			allow: []string{admin}, ok: http.StatusNoContent, perm: "clusters, delete, https://del-{caller}.example.com:6443"},

		// Previewing an ApplicationSet needs create on applicationsets.
		matrixRoute{method: http.MethodPost, pattern: "/api/v1/applicationsets/generate",
			body:  appSetYAML("matrix", "team-a", "list: {elements: [{name: x}]}", "matrix-{{name}}"),
			allow: []string{admin}, ok: http.StatusOK, perm: "applicationsets, create, team-a/matrix"},
		// Sets: new-<caller> is created (it never runs: no worker); ghost
		// does not exist, which only callers that may act on a set of
		// that name in every project learn.
		matrixRoute{method: http.MethodGet, pattern: "/api/v1/applicationsets", allow: everyone, ok: http.StatusOK},
		matrixRoute{method: http.MethodPost, pattern: "/api/v1/applicationsets",
			body:  appSetYAML("new-{caller}", "team-a", "list: {elements: [{name: x}]}", "new-{caller}-{{name}}"),
			allow: []string{admin}, ok: http.StatusCreated, perm: "applicationsets, create, team-a/new-{caller}"},
		matrixRoute{method: http.MethodGet, pattern: "/api/v1/applicationsets/:name", path: "/api/v1/applicationsets/ghost",
			allow: []string{admin, readonly}, ok: http.StatusNotFound, perm: "applicationsets, get, */ghost"},
		matrixRoute{method: http.MethodPut, pattern: "/api/v1/applicationsets/:name", path: "/api/v1/applicationsets/ghost",
			body:  appSetYAML("ghost", "team-a", "list: {elements: [{name: x}]}", "ghost-{{name}}"),
			allow: []string{admin}, ok: http.StatusNotFound, perm: "applicationsets, update, */ghost"},
		matrixRoute{method: http.MethodDelete, pattern: "/api/v1/applicationsets/:name", path: "/api/v1/applicationsets/ghost",
			allow: []string{admin}, ok: http.StatusNotFound, perm: "applicationsets, delete, */ghost"},
		matrixRoute{method: http.MethodPost, pattern: "/api/v1/applicationsets/:name/refresh", path: "/api/v1/applicationsets/ghost/refresh",
			allow: []string{admin, readonly}, ok: http.StatusNotFound, perm: "applicationsets, get, */ghost"},
		matrixRoute{method: http.MethodGet, pattern: "/api/v1/stream/applicationsets", allow: everyone, ok: http.StatusOK},
		matrixRoute{method: http.MethodGet, pattern: "/api/v1/stream/applicationsets/:name", path: "/api/v1/stream/applicationsets/ghost",
			allow: []string{admin, readonly}, ok: http.StatusNotFound, perm: "applicationsets, get, */ghost"},
		// A set without a rollout: learning that needs the action on
		// */<set>.
		matrixRoute{method: http.MethodGet, pattern: "/api/v1/applicationsets/:name/rollout", path: "/api/v1/applicationsets/ghost/rollout",
			allow: []string{admin, readonly}, ok: http.StatusNotFound, perm: "applicationsets, get, */ghost"},
		matrixRoute{method: http.MethodPost, pattern: "/api/v1/applicationsets/:name/rollout/pause", path: "/api/v1/applicationsets/ghost/rollout/pause",
			allow: []string{admin}, ok: http.StatusNotFound, perm: "applicationsets, update, */ghost"},
		matrixRoute{method: http.MethodPost, pattern: "/api/v1/applicationsets/:name/rollout/resume", path: "/api/v1/applicationsets/ghost/rollout/resume",
			allow: []string{admin}, ok: http.StatusNotFound, perm: "applicationsets, update, */ghost"},
		matrixRoute{method: http.MethodPost, pattern: "/api/v1/applicationsets/:name/rollout/abort", path: "/api/v1/applicationsets/ghost/rollout/abort",
			allow: []string{admin}, ok: http.StatusNotFound, perm: "applicationsets, update, */ghost"},

		matrixRoute{method: http.MethodGet, pattern: "/api/v1/accounts", allow: everyone, ok: http.StatusOK},
		// Every session may change its own password (here: too short).
		matrixRoute{method: http.MethodPut, pattern: "/api/v1/account/password", body: `{"currentPassword": "{password}", "newPassword": "short"}`,
			allow: []string{admin, readonly, norole}, ok: http.StatusBadRequest, denied: "passwords are changed with a login session"},
		matrixRoute{method: http.MethodPost, pattern: "/api/v1/accounts/:account/tokens", path: "/api/v1/accounts/svc/tokens",
			allow: []string{admin}, ok: http.StatusCreated, perm: "accounts, update, svc"},
		matrixRoute{method: http.MethodGet, pattern: "/api/v1/accounts/:account/tokens", path: "/api/v1/accounts/svc/tokens",
			allow: []string{admin, readonly}, ok: http.StatusOK, perm: "accounts, get, svc"},
		matrixRoute{method: http.MethodDelete, pattern: "/api/v1/accounts/:account/tokens/:id", path: "/api/v1/accounts/svc/tokens/none",
			allow: []string{admin}, ok: http.StatusNotFound, perm: "accounts, update, svc"},
	)
}

// routeKey names a route as "METHOD pattern".
func routeKey(method, pattern string) string { return method + " " + pattern }

func TestRBACMatrixCoversEveryRoute(t *testing.T) {
	en := newEnv(t)
	var served, tested []string
	for _, r := range en.srv.e.Router().Routes() {
		served = append(served, routeKey(r.Method, r.Path))
	}
	for _, r := range matrixRoutes(t) {
		key := routeKey(r.method, r.pattern)
		tested = append(tested, key)
		if got := slices.Contains(publicRoutes, key); got != r.public {
			t.Errorf("%s: public in the matrix is %v, in publicRoutes %v", key, r.public, got)
		}
		if r.ok == http.StatusUnauthorized || r.ok == http.StatusForbidden {
			t.Errorf("%s: allowed callers must get neither 401 nor 403, not %d", key, r.ok)
		}
		if !r.public && len(r.allow) < len(everyone) && r.perm == "" && r.denied == "" {
			t.Errorf("%s: some callers are denied, but the row does not say what their 403 names", key)
		}
	}
	slices.Sort(served)
	slices.Sort(tested)
	if diff := cmp.Diff(slices.Compact(served), slices.Compact(tested)); diff != "" {
		t.Errorf("routes served (-) and routes in the RBAC matrix (+) differ:\n%s", diff)
	}
}

// matrixEnv is an env with what the matrix's requests need, and a token
// (and a way to get a new one) per caller.
func matrixEnv(t *testing.T) (en *env, tokens map[string]string, fresh map[string]func() string, passwords map[string]string) {
	t.Helper()
	en = newEnv(t)
	ctx := t.Context()
	if err := en.settings.PutRepo(ctx, settings.Repository{URL: matrixRepo, Username: "git", Password: "pw"}); err != nil {
		t.Fatal(err)
	}
	if err := en.settings.PutRepoCreds(ctx, settings.Repository{URL: matrixTemplate, Username: "git", Password: "pw"}); err != nil {
		t.Fatal(err)
	}
	if _, err := en.settings.AddGPGKeys(ctx, matrixGPGKeys(t)[0].KeyData); err != nil {
		t.Fatal(err)
	}
	for _, c := range matrixCallers {
		cl := settings.Cluster{Name: "del-" + c, Server: "https://del-" + c + ".example.com:6443", BearerToken: "t"}
		if err := en.settings.PutCluster(ctx, cl); err != nil {
			t.Fatal(err)
		}
	}
	tokens = map[string]string{
		admin: en.tokens[auth.AdminAccount], readonly: en.tokens[viewerAccount],
		norole: en.tokens[nobodyAccount], ci: en.ciToken,
	}
	passwords = map[string]string{admin: en.adminPassword, readonly: testPasswords[viewerAccount], norole: testPasswords[nobodyAccount]}
	fresh = map[string]func() string{
		admin:     func() string { return en.login(auth.AdminAccount, en.adminPassword) },
		readonly:  func() string { return en.login(viewerAccount, testPasswords[viewerAccount]) },
		norole:    func() string { return en.login(nobodyAccount, testPasswords[nobodyAccount]) },
		ci:        func() string { return en.mintCIToken("") },
		anonymous: func() string { return "" },
	}
	return en, tokens, fresh, passwords
}

// TestRBACMatrix sends each route's request as each caller: anonymous
// callers get 401 on every route but the public ones, the callers the
// route allows get its status (never 401 or 403), and the others 403 with
// a problem naming the permission they lack.
func TestRBACMatrix(t *testing.T) {
	en, tokens, fresh, passwords := matrixEnv(t)
	for _, rt := range matrixRoutes(t) {
		path := rt.path
		if path == "" {
			path = rt.pattern
		}
		t.Run(rt.method+" "+path, func(t *testing.T) {
			for _, caller := range matrixCallers {
				t.Run(caller, func(t *testing.T) {
					subst := strings.NewReplacer("{caller}", caller, "{password}", passwords[caller])
					req := request{method: rt.method, path: subst.Replace(path), body: subst.Replace(rt.body), token: tokens[caller]}
					if rt.pattern == webhook.Path {
						req = githubPing(hookSecret)
					}
					if rt.fresh {
						req.token = fresh[caller]()
					}
					res := doOn(t, en.http.URL, req)
					switch {
					case rt.public || slices.Contains(rt.allow, caller):
						if res.code != rt.ok {
							t.Errorf("status %d, want %d: %s", res.code, rt.ok, res.body)
						}
					case caller == anonymous:
						res.wantProblem(t, http.StatusUnauthorized, "", "")
						if got := res.header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
							t.Errorf("WWW-Authenticate = %q, want Bearer", got)
						}
					default:
						denied := rt.denied
						if denied == "" {
							denied = "permission denied: " + rt.perm
						}
						res.wantProblem(t, http.StatusForbidden, "", subst.Replace(denied))
					}
				})
			}
		})
	}
}

// TestListFilters checks that the list endpoints filter by RBAC rather
// than deny: every caller gets 200, with only what it may get.
func TestListFilters(t *testing.T) {
	en := newEnv(t)
	ctx := t.Context()
	if err := en.settings.PutRepo(ctx, settings.Repository{URL: matrixRepo}); err != nil {
		t.Fatal(err)
	}
	if err := en.settings.PutRepoCreds(ctx, settings.Repository{URL: matrixTemplate}); err != nil {
		t.Fatal(err)
	}
	if err := en.settings.PutCluster(ctx, settings.Cluster{Name: "prod", Server: "https://prod.example.com:6443", BearerToken: "t"}); err != nil {
		t.Fatal(err)
	}
	tokens := map[string]string{
		admin: en.tokens[auth.AdminAccount], readonly: en.tokens[viewerAccount],
		norole: en.tokens[nobodyAccount], ci: en.ciToken,
	}
	allProjects := []string{appspec.DefaultProject, teamProject}
	allAccounts := []string{auth.AdminAccount, nobodyAccount, svcAccount, viewerAccount}
	allClusters := []string{"in-cluster", "prod"}
	allApps := []string{"default/guestbook", "team-a/web"}
	for _, tc := range []struct {
		path, key string
		want      map[string][]string
	}{
		{"/api/v1/projects", "name", map[string][]string{
			admin: allProjects, readonly: allProjects, ci: {}, norole: {}}},
		{"/api/v1/repositories", "url", map[string][]string{
			admin: {matrixRepo}, readonly: {matrixRepo}, ci: {}, norole: {}}},
		{"/api/v1/repocreds", "url", map[string][]string{
			admin: {matrixTemplate}, readonly: {matrixTemplate}, ci: {}, norole: {}}},
		{"/api/v1/clusters", "name", map[string][]string{
			admin: allClusters, readonly: allClusters, ci: {}, norole: {}}},
		// An account always sees itself.
		{"/api/v1/accounts", "name", map[string][]string{
			admin: allAccounts, readonly: allAccounts, ci: {}, norole: {nobodyAccount}}},
		{"/api/v1/applications", "", map[string][]string{
			admin: allApps, readonly: allApps, ci: {"team-a/web"}, norole: {}}},
	} {
		for _, caller := range everyone {
			t.Run(tc.path+"/"+caller, func(t *testing.T) {
				// The applications come from the visibility index,
				// which is updated shortly after the workflows start.
				eventually(t, visibilityWait, func() error {
					res := en.do(request{method: http.MethodGet, path: tc.path, token: tokens[caller]})
					var got []string
					if tc.key == "" {
						got = appNames(t, res)
					} else {
						got = res.listNames(t, tc.key)
					}
					slices.Sort(got)
					if diff := cmp.Diff(tc.want[caller], got); diff != "" {
						return errors.New("items (-want +got):\n" + diff)
					}
					return nil
				})
			})
		}
	}
}

// gpgKeysOnce holds the matrix's GPG keys: the first is stored, the
// second is created by the POST row.
var gpgKeysOnce = sync.OnceValues(func() ([]gpgkey.Key, error) {
	var out []gpgkey.Key
	for _, name := range []string{"stored", "created"} {
		_, pub, err := testbed.NewGPGKey(name)
		if err != nil {
			return nil, err
		}
		keys, err := gpgkey.Parse(pub)
		if err != nil {
			return nil, err
		}
		out = append(out, keys[0])
	}
	return out, nil
})

func matrixGPGKeys(t *testing.T) []gpgkey.Key {
	t.Helper()
	keys, err := gpgKeysOnce()
	if err != nil {
		t.Fatal(err)
	}
	return keys
}
