package appset

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/windlass-cd/windlass/internal/secretstore"
)

const testToken = "tok-7c1f9e"

// tokens is a secret store holding testToken under the name a set's
// tokenRef names (secretName scm, key token).
func tokens(t *testing.T) *secretstore.Memory {
	t.Helper()
	s := &secretstore.Memory{}
	if err := s.Put(t.Context(), TokenSecretPrefix+"scm", map[string][]byte{"token": []byte(testToken + "\n")}); err != nil {
		t.Fatal(err)
	}
	return s
}

// api is a loopback provider API: routes answer JSON, and every request
// must carry the token in the provider's header.
type api struct {
	t       *testing.T
	kind    string
	mu      sync.Mutex
	paths   []string
	routes  map[string]func(r *http.Request) (int, any)
	srv     *httptest.Server
	noToken bool
}

func newAPI(t *testing.T, kind string, routes map[string]func(r *http.Request) (int, any)) *api {
	a := &api{t: t, kind: kind, routes: routes}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *api) serve(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.paths = append(a.paths, r.URL.Path)
	a.mu.Unlock()
	want := map[string][2]string{"github": {"Authorization", "Bearer " + testToken}, "gitlab": {"PRIVATE-TOKEN", testToken},
		"gitea": {"Authorization", "token " + testToken}}[a.kind]
	if got := r.Header.Get(want[0]); !a.noToken && got != want[1] {
		http.Error(w, "bad credentials", http.StatusUnauthorized)
		return
	}
	h, ok := a.routes[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	code, body := h(r)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}

func fixed(v any) func(*http.Request) (int, any) {
	return func(*http.Request) (int, any) { return http.StatusOK, v }
}

func parseSet(t *testing.T, generator, name, revision, ns string) ApplicationSet {
	t.Helper()
	s, err := Parse([]byte(`apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: previews}
spec:
  generators:
  - ` + generator + `
  template:
    metadata: {name: '` + name + `'}
    spec:
      project: default
      source: {repoURL: 'https://git.example/r.git', targetRevision: '` + revision + `', path: deploy}
      destination: {server: 'https://kubernetes.default.svc', namespace: '` + ns + `'}
`))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// revisions maps each app to its target revision and namespace.
func revisions(apps []App) map[string]string {
	out := map[string]string{}
	for _, a := range apps {
		out[a.Application.Name] = a.Application.Source.TargetRevision + " " + a.Application.Destination.Namespace
	}
	return out
}

const (
	sha1 = "1111111111aaaaaaaaaa1111111111aaaaaaaaaa"
	sha2 = "2222222222bbbbbbbbbb2222222222bbbbbbbbbb"
)

// The pull request generator against each provider's documented API: open
// requests, the token in the provider's header, a branch filter.
func TestPullRequests(t *testing.T) {
	ghPulls := []map[string]any{
		{"number": 12, "title": "Add login", "head": map[string]any{"ref": "feature/Login", "sha": sha1}, "base": map[string]any{"ref": "main"},
			"labels": []any{map[string]any{"name": "preview"}}, "user": map[string]any{"login": "alice"}},
		{"number": 13, "title": "Docs", "head": map[string]any{"ref": "docs", "sha": sha2}, "base": map[string]any{"ref": "main"},
			"labels": []any{}, "user": map[string]any{"login": "bob"}},
	}
	glMerges := []map[string]any{
		{"iid": 12, "title": "Add login", "source_branch": "feature/Login", "target_branch": "main", "sha": sha1, "labels": []string{"preview"},
			"author": map[string]any{"username": "alice"}},
		{"iid": 13, "title": "Docs", "source_branch": "docs", "target_branch": "main", "sha": sha2, "labels": []string{},
			"author": map[string]any{"username": "bob"}},
	}
	tests := []struct {
		kind, path, spec string
		body             any
		query            string
	}{
		{kind: "github", path: "/repos/acme/shop/pulls", spec: "owner: acme, repo: shop", body: ghPulls, query: "state=open"},
		{kind: "gitlab", path: "/api/v4/projects/acme/shop/merge_requests", spec: "project: acme/shop", body: glMerges, query: "state=opened"},
		{kind: "gitea", path: "/api/v1/repos/acme/shop/pulls", spec: "owner: acme, repo: shop", body: ghPulls, query: "state=open"},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			var query string
			a := newAPI(t, tt.kind, map[string]func(*http.Request) (int, any){tt.path: func(r *http.Request) (int, any) {
				query = r.URL.RawQuery
				return http.StatusOK, tt.body
			}})
			set := parseSet(t, `pullRequest:
      `+tt.kind+`: {`+tt.spec+`, api: '`+a.srv.URL+`', tokenRef: {secretName: scm, key: token}}
      filters:
      - branchMatch: '^feature/'`, "pr-{{number}}", "{{head_sha}}", "{{branch_slug}}-{{head_short_sha_7}}")
			apps, err := New(nil, nil, tokens(t), WithAllowedAPIs(a.srv.URL)).Generate(t.Context(), set)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"pr-12": sha1 + " feature-login-1111111"}
			if d := cmp.Diff(want, revisions(apps)); d != "" {
				t.Errorf("apps (-want +got):\n%s", d)
			}
			if !strings.Contains(query, tt.query) {
				t.Errorf("query %q lacks %q", query, tt.query)
			}
		})
	}
}

// A list longer than a page is read page by page.
func TestPullRequestPages(t *testing.T) {
	var all []map[string]any
	for i := 1; i <= pageSize+5; i++ {
		all = append(all, map[string]any{"number": i, "head": map[string]any{"ref": "b" + strconv.Itoa(i), "sha": sha1},
			"base": map[string]any{"ref": "main"}})
	}
	a := newAPI(t, "github", map[string]func(*http.Request) (int, any){"/repos/acme/shop/pulls": func(r *http.Request) (int, any) {
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		size, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
		lo, hi := min((page-1)*size, len(all)), min(page*size, len(all))
		return http.StatusOK, all[lo:hi]
	}})
	set := parseSet(t, `pullRequest: {github: {owner: acme, repo: shop, api: '`+a.srv.URL+`', tokenRef: {secretName: scm, key: token}}}`,
		"pr-{{number}}", "{{head_sha}}", "{{branch}}")
	apps, err := New(nil, nil, tokens(t), WithAllowedAPIs(a.srv.URL)).Generate(t.Context(), set)
	if err != nil {
		t.Fatal(err)
	}
	if len(apps) != pageSize+5 || len(a.paths) != 2 {
		t.Errorf("apps %d over %d requests; want %d over 2", len(apps), len(a.paths), pageSize+5)
	}
}

// A provider API that answers 500 fails the set with the status and no
// apps, and the token is nowhere in the error.
func TestPullRequestAPIError(t *testing.T) {
	for _, kind := range []string{"github", "gitlab", "gitea"} {
		t.Run(kind, func(t *testing.T) {
			a := newAPI(t, kind, nil)
			a.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "internal failure", http.StatusInternalServerError)
			})
			spec := "owner: acme, repo: shop"
			if kind == "gitlab" {
				spec = "project: '42'"
			}
			set := parseSet(t, `pullRequest: {`+kind+`: {`+spec+`, api: '`+a.srv.URL+`', tokenRef: {secretName: scm, key: token}}}`,
				"pr-{{number}}", "{{head_sha}}", "x")
			apps, err := New(nil, nil, tokens(t), WithAllowedAPIs(a.srv.URL)).Generate(t.Context(), set)
			if !errors.Is(err, ErrSource) || !strings.Contains(err.Error(), "HTTP 500: internal failure") {
				t.Fatalf("err = %v, want ErrSource with HTTP 500", err)
			}
			if apps != nil || strings.Contains(err.Error(), testToken) {
				t.Errorf("apps %v, error %q", apps, err)
			}
		})
	}
}

// A tokenRef to a secret or key that does not exist is a clear error
// before any request.
func TestTokenRefMissing(t *testing.T) {
	a := newAPI(t, "github", nil)
	for _, ref := range []string{"{secretName: nope, key: token}", "{secretName: scm, key: nope}"} {
		set := parseSet(t, `pullRequest: {github: {owner: acme, repo: shop, api: '`+a.srv.URL+`', tokenRef: `+ref+`}}`,
			"pr-{{number}}", "x", "x")
		if _, err := New(nil, nil, tokens(t), WithAllowedAPIs(a.srv.URL)).Generate(t.Context(), set); err == nil || !strings.Contains(err.Error(), "tokenRef") {
			t.Errorf("tokenRef %s: err = %v", ref, err)
		}
	}
	if len(a.paths) != 0 {
		t.Errorf("requests made: %v", a.paths)
	}
}

// A token is sent only to an allowed API: a set naming another server
// with a tokenRef fails before any request.
func TestTokenOnlyToAllowedAPIs(t *testing.T) {
	a := newAPI(t, "github", map[string]func(*http.Request) (int, any){"/repos/acme/shop/pulls": fixed([]any{})})
	set := parseSet(t, `pullRequest: {github: {owner: acme, repo: shop, api: '`+a.srv.URL+`', tokenRef: {secretName: scm, key: token}}}`,
		"pr-{{number}}", "x", "x")
	_, err := New(nil, nil, tokens(t)).Generate(t.Context(), set)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "not an allowed provider API") {
		t.Fatalf("err = %v", err)
	}
	if len(a.paths) != 0 {
		t.Errorf("requests made: %v", a.paths)
	}
	if _, err := New(nil, nil, tokens(t), WithAllowedAPIs(a.srv.URL+"/")).Generate(t.Context(), set); err != nil {
		t.Errorf("allowed: %v", err)
	}
}

// The SCM provider generator lists an organization's repositories, keeps
// those the filter matches, and reads their default branch's commit.
func TestSCMProvider(t *testing.T) {
	ghRepos := []map[string]any{
		{"id": 1, "name": "shop-api", "clone_url": "https://git.example/acme/shop-api.git", "ssh_url": "git@git.example:acme/shop-api.git",
			"default_branch": "main", "topics": []string{"deploy"}, "owner": map[string]any{"login": "acme"}},
		{"id": 2, "name": "handbook", "clone_url": "https://git.example/acme/handbook.git", "default_branch": "main",
			"owner": map[string]any{"login": "acme"}},
	}
	glProjects := []map[string]any{
		{"id": 1, "path": "shop-api", "http_url_to_repo": "https://git.example/acme/shop-api.git", "ssh_url_to_repo": "git@git.example:acme/shop-api.git",
			"default_branch": "main", "topics": []string{"deploy"}, "namespace": map[string]any{"full_path": "acme"}},
		{"id": 2, "path": "handbook", "http_url_to_repo": "https://git.example/acme/handbook.git", "default_branch": "main",
			"namespace": map[string]any{"full_path": "acme"}},
	}
	tests := []struct {
		kind, spec string
		routes     map[string]func(*http.Request) (int, any)
	}{
		{kind: "github", spec: "organization: acme", routes: map[string]func(*http.Request) (int, any){
			"/orgs/acme/repos": fixed(ghRepos), "/repos/acme/shop-api/branches/main": fixed(map[string]any{"name": "main", "commit": map[string]any{"sha": sha1}})}},
		{kind: "gitlab", spec: "group: acme", routes: map[string]func(*http.Request) (int, any){
			"/api/v4/groups/acme/projects": fixed(glProjects), "/api/v4/projects/1/repository/branches/main": fixed(map[string]any{"name": "main", "commit": map[string]any{"id": sha1}})}},
		{kind: "gitea", spec: "owner: acme", routes: map[string]func(*http.Request) (int, any){
			"/api/v1/orgs/acme/repos": fixed(ghRepos), "/api/v1/repos/acme/shop-api/branches/main": fixed(map[string]any{"name": "main", "commit": map[string]any{"id": sha1}})}},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			a := newAPI(t, tt.kind, tt.routes)
			set := parseSet(t, `scmProvider:
      `+tt.kind+`: {`+tt.spec+`, api: '`+a.srv.URL+`', tokenRef: {secretName: scm, key: token}}
      cloneProtocol: ssh
      filters:
      - labelMatch: ^deploy$`, "{{repository}}-{{branch}}", "{{sha}}", "{{organization}}")
			apps, err := New(nil, nil, tokens(t), WithAllowedAPIs(a.srv.URL)).Generate(t.Context(), set)
			if err != nil {
				t.Fatalf("%v (requests %v)", err, a.paths)
			}
			if d := cmp.Diff(map[string]string{"shop-api-main": sha1 + " acme"}, revisions(apps)); d != "" {
				t.Errorf("apps (-want +got):\n%s", d)
			}
		})
	}
}

// The plugin generator POSTs the set's name and input to the plugin's
// getparams.execute with its token, and yields the sets it answers.
func TestPlugin(t *testing.T) {
	var got pluginRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/api/v1/getparams.execute" || r.Header.Get("Authorization") != "Bearer "+testToken {
			http.Error(w, "wrong request", http.StatusBadRequest)
			return
		}
		_ = json.NewDecoder(r.Body).Decode(&got)
		fmt.Fprint(w, `{"output": {"parameters": [{"name": "one", "rev": "v1"}, {"name": "two", "rev": "v2"}]}}`)
	}))
	t.Cleanup(srv.Close)
	secrets := &secretstore.Memory{}
	if err := secrets.Put(t.Context(), PluginSecretPrefix+"envs", map[string][]byte{"baseUrl": []byte(srv.URL), "token": []byte(testToken)}); err != nil {
		t.Fatal(err)
	}
	set := parseSet(t, `plugin:
      configMapRef: {name: envs}
      input: {parameters: {team: blue}}
      values: {ns: 'team-{{name}}'}`, "{{name}}-{{generator.input.parameters.team}}", "{{rev}}", "{{values.ns}}")
	apps, err := New(nil, nil, secrets).Generate(t.Context(), set)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]string{"one-blue": "v1 team-one", "two-blue": "v2 team-two"}, revisions(apps)); d != "" {
		t.Errorf("apps (-want +got):\n%s", d)
	}
	want := pluginRequest{ApplicationSetName: "previews", Input: PluginInput{Parameters: map[string]any{"team": "blue"}}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("request (-want +got):\n%s", d)
	}
}

// A plugin that does not answer within its requestTimeout fails the set
// with a clear error and no apps.
func TestPluginTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	secrets := &secretstore.Memory{}
	if err := secrets.Put(t.Context(), PluginSecretPrefix+"slow", map[string][]byte{"baseUrl": []byte(srv.URL), "requestTimeout": []byte("1")}); err != nil {
		t.Fatal(err)
	}
	set := parseSet(t, `plugin: {configMapRef: {name: slow}}`, "{{name}}", "x", "x")
	apps, err := New(nil, nil, secrets).Generate(t.Context(), set)
	if !errors.Is(err, ErrSource) || !strings.Contains(err.Error(), "plugin slow did not answer within 1s") {
		t.Fatalf("err = %v, want a timeout", err)
	}
	if apps != nil {
		t.Errorf("apps = %v", apps)
	}
}
