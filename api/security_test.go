package api

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/client"

	"github.com/windlass-cd/windlass/api/auth"
	"github.com/windlass-cd/windlass/api/webhook"
	"github.com/windlass-cd/windlass/internal/settings"

	"github.com/windlass-cd/windlass/internal/testbed"
)

// signingKey reads the env's current JWT signing key from its secret
// store, as the auth package stores it.
func (en *env) signingKey() (kid string, secret []byte) {
	en.t.Helper()
	data, err := en.secrets.Get(en.t.Context(), "windlass-jwt")
	if err != nil {
		en.t.Fatal(err)
	}
	var keys []struct {
		ID        string    `json:"kid"`
		Secret    []byte    `json:"secret"`
		RetiredAt time.Time `json:"retiredAt"`
	}
	if err := json.Unmarshal(data["keys.json"], &keys); err != nil {
		en.t.Fatal(err)
	}
	for _, k := range keys {
		if k.RetiredAt.IsZero() {
			return k.ID, k.Secret
		}
	}
	en.t.Fatal("no current signing key")
	return "", nil
}

// forged describes a token to craft; the zero value is a valid admin
// session signed with the env's current key.
type forged struct {
	method  jwt.SigningMethod // default HS256
	key     any               // default the current key
	kid     string            // default the current key's
	claims  func(jwt.MapClaims)
	noneAlg bool
}

func (en *env) forge(f forged) string {
	en.t.Helper()
	kid, secret := en.signingKey()
	now := time.Now()
	rdb := redis.NewClient(&redis.Options{Addr: bed.redisAddr})
	defer rdb.Close()
	gen, err := auth.RedisRevocations{Client: rdb}.Generation(en.t.Context())
	if err != nil {
		en.t.Fatal(err)
	}
	claims := jwt.MapClaims{
		"iss": auth.Issuer, "sub": auth.AdminAccount, "jti": rand.Text(), "kind": auth.KindSession,
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix(), "rgen": gen,
	}
	if f.claims != nil {
		f.claims(claims)
	}
	method, key := jwt.SigningMethod(jwt.SigningMethodHS256), any(secret)
	switch {
	case f.noneAlg:
		method, key = jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType
	case f.method != nil:
		method = f.method
	}
	if f.key != nil {
		key = f.key
	}
	tok := jwt.NewWithClaims(method, claims)
	tok.Header["kid"] = kid
	if f.kid != "" {
		tok.Header["kid"] = f.kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		en.t.Fatal(err)
	}
	return s
}

// cookies returns the cookies a response sets.
func (r response) cookies() []*http.Cookie {
	return (&http.Response{Header: r.header}).Cookies()
}

func TestSecurity(t *testing.T) {
	en := newEnv(t)
	t.Run("tokens", func(t *testing.T) {
		viewer := en.tokens[viewerAccount]
		parts := strings.Split(viewer, ".")
		payload, err := base64.RawURLEncoding.DecodeString(parts[1])
		if err != nil {
			t.Fatal(err)
		}
		tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString(
			[]byte(strings.Replace(string(payload), `"sub":"viewer"`, `"sub":"admin"`, 1))) + "." + parts[2]
		if tampered == viewer {
			t.Fatalf("the payload %s has no sub viewer to tamper with", payload)
		}
		logout := en.login(viewerAccount, testPasswords[viewerAccount])
		en.do(request{method: http.MethodDelete, path: "/api/v1/session", token: logout}).wantStatus(t, http.StatusNoContent)
		wrongKey := make([]byte, 32)
		_, _ = rand.Read(wrongKey)
		set := func(k string, v any) func(jwt.MapClaims) { return func(c jwt.MapClaims) { c[k] = v } }
		for _, tc := range []struct {
			name, authorization string
			status              int
		}{
			// The crafting is right: the valid token passes.
			{"valid forged session", "Bearer " + en.forge(forged{}), http.StatusOK},
			{"alg none", "Bearer " + en.forge(forged{noneAlg: true}), http.StatusUnauthorized},
			{"wrong key", "Bearer " + en.forge(forged{key: wrongKey}), http.StatusUnauthorized},
			{"unknown kid", "Bearer " + en.forge(forged{kid: "0123456789abcdef"}), http.StatusUnauthorized},
			{"HS512 with the right key", "Bearer " + en.forge(forged{method: jwt.SigningMethodHS512}), http.StatusUnauthorized},
			{"expired", "Bearer " + en.forge(forged{claims: set("exp", time.Now().Add(-time.Hour).Unix())}), http.StatusUnauthorized},
			{"not yet valid", "Bearer " + en.forge(forged{claims: set("nbf", time.Now().Add(time.Hour).Unix())}), http.StatusUnauthorized},
			{"no expiry", "Bearer " + en.forge(forged{claims: func(c jwt.MapClaims) { delete(c, "exp") }}), http.StatusUnauthorized},
			{"wrong issuer", "Bearer " + en.forge(forged{claims: set("iss", "argocd")}), http.StatusUnauthorized},
			{"unknown account", "Bearer " + en.forge(forged{claims: set("sub", "mallory")}), http.StatusUnauthorized},
			{"API token without a record", "Bearer " + en.forge(forged{claims: set("kind", auth.KindAPIToken)}), http.StatusUnauthorized},
			{"tampered payload", "Bearer " + tampered, http.StatusUnauthorized},
			{"logged out session", "Bearer " + logout, http.StatusUnauthorized},
			{"not a JWT", "Bearer not-a-jwt", http.StatusUnauthorized},
			{"empty bearer", "Bearer ", http.StatusUnauthorized},
			{"basic auth", "Basic " + base64.StdEncoding.EncodeToString([]byte("admin:"+en.adminPassword)), http.StatusUnauthorized},
		} {
			t.Run(tc.name, func(t *testing.T) {
				res := en.do(request{method: http.MethodGet, path: "/api/v1/accounts/svc/tokens", header: map[string]string{"Authorization": tc.authorization}})
				if tc.status != http.StatusOK {
					res.wantProblem(t, tc.status, "", "")
					return
				}
				res.wantStatus(t, tc.status)
			})
		}
	})

	t.Run("oversized bodies", func(t *testing.T) {
		big := `{"name": "big", "x": "` + strings.Repeat("a", maxBodyBytes) + `"}`
		for _, r := range []request{
			{method: http.MethodPost, path: "/api/v1/applications", body: big, token: en.tokens[auth.AdminAccount]},
			{method: http.MethodPost, path: "/api/v1/projects", body: big, token: en.tokens[auth.AdminAccount]},
			{method: http.MethodPost, path: webhook.Path, body: big},
		} {
			t.Run(r.path, func(t *testing.T) {
				en.do(r).wantProblem(t, http.StatusRequestEntityTooLarge, "", "")
			})
		}
	})

	t.Run("credentials never in a response", func(t *testing.T) {
		const repoPassword, repoToken, clusterToken, kubeToken = "pa55-SECRET", "bearer-SECRET", "tok-SECRET", "kube-tok-SECRET"
		const urlPassword = "url-pa55-SECRET"
		const tmplPassword, certKeyMark = "tmpl-pa55-SECRET", "PRIVATE KEY"
		secrets := []string{repoPassword, repoToken, clusterToken, kubeToken, urlPassword, tmplPassword, certKeyMark}
		pki, err := testbed.NewTLSPKI()
		if err != nil {
			t.Fatal(err)
		}
		gh := testbed.StartGitHubApps(testbed.GitHubAppsOptions{})
		t.Cleanup(gh.Close)
		appKey, err := gh.NewApp(1, 2)
		if err != nil {
			t.Fatal(err)
		}
		repoA, repoB := "https://git.example.com/secret/a.git", "https://git.example.com/secret/b.git"
		repoC := "https://u:" + urlPassword + "@git.example.com/secret/c.git"
		var bodies []response
		for _, r := range []request{
			{method: http.MethodPost, path: "/api/v1/repositories", body: jsonBody(t, settings.Repository{URL: repoA, Username: "u", Password: repoPassword})},
			{method: http.MethodPost, path: "/api/v1/repositories", body: jsonBody(t, settings.Repository{URL: repoB, BearerToken: repoToken})},
			{method: http.MethodPost, path: "/api/v1/repositories", body: jsonBody(t, settings.Repository{URL: repoA, Username: "u", Password: repoPassword})},
			{method: http.MethodPost, path: "/api/v1/repositories?upsert=true", body: jsonBody(t, settings.Repository{URL: repoA, Username: "u", Password: repoPassword})},
			{method: http.MethodPost, path: "/api/v1/repositories", body: jsonBody(t, settings.Repository{URL: repoC})},
			{method: http.MethodPost, path: "/api/v1/clusters", body: jsonBody(t, settings.Cluster{Name: "secret", Server: "https://secret.example.com", BearerToken: clusterToken})},
			{method: http.MethodPost, path: "/api/v1/clusters", body: jsonBody(t, ClusterRequest{Kubeconfig: testdata(t, "kubeconfig.yaml")})},
			{method: http.MethodPost, path: "/api/v1/clusters", body: jsonBody(t, settings.Cluster{Name: "down", Server: "https://" + checkFailure, BearerToken: clusterToken})},
			{method: http.MethodPost, path: "/api/v1/repocreds", body: jsonBody(t, settings.Repository{URL: "https://git.example.com/secret/", Username: "u", Password: tmplPassword,
				TLSClientCertData: pki.ClientCert, TLSClientCertKey: pki.ClientKey})},
			{method: http.MethodPost, path: "/api/v1/repositories", body: jsonBody(t, settings.Repository{URL: "https://git.example.com/secret/d.git",
				TLSClientCertData: pki.ClientCert, TLSClientCertKey: pki.ClientKey, CAData: pki.CA})},
			{method: http.MethodPost, path: "/api/v1/repocreds", body: jsonBody(t, settings.Repository{URL: "https://github.example.com/apps/",
				GitHubAppID: 1, GitHubAppInstallationID: 2, GitHubAppPrivateKey: appKey})},
			{method: http.MethodGet, path: "/api/v1/repocreds"},
			{method: http.MethodGet, path: "/api/v1/repocreds/" + url.PathEscape("https://git.example.com/secret/")},
			{method: http.MethodGet, path: "/api/v1/repositories"},
			{method: http.MethodGet, path: "/api/v1/repositories/" + url.PathEscape(repoA)},
			{method: http.MethodGet, path: "/api/v1/repositories/" + url.PathEscape(repoB)},
			{method: http.MethodGet, path: "/api/v1/clusters"},
			{method: http.MethodGet, path: "/api/v1/projects"},
			{method: http.MethodGet, path: "/api/v1/projects/default"},
			{method: http.MethodGet, path: "/api/v1/accounts"},
			{method: http.MethodGet, path: "/api/v1/accounts/admin/tokens"},
			{method: http.MethodGet, path: "/api/v1/session/userinfo"},
			{method: http.MethodGet, path: "/api/v1/applications"},
		} {
			res := en.admin(r)
			if res.code >= 500 {
				t.Errorf("%s %s: %d %s", r.method, r.path, res.code, res.body)
			}
			bodies = append(bodies, res)
		}
		for _, res := range bodies {
			for _, s := range secrets {
				if strings.Contains(string(res.body), s) || strings.Contains(strings.Join(res.header.Values("Set-Cookie"), ";"), s) {
					t.Errorf("a response shows %q: %s", s, res.body)
				}
			}
		}
		// The secrets were stored, so the check above is not vacuous.
		r, err := en.settings.Repo(t.Context(), repoA)
		if err != nil || r.Password != repoPassword {
			t.Errorf("stored repository %s: %+v, %v; want its password", repoA, r.View(), err)
		}
		if r, err := en.settings.RepoCredsTemplate(t.Context(), "https://github.example.com/apps/"); err != nil || r.GitHubAppPrivateKey != appKey {
			t.Errorf("stored GitHub App template: %+v, %v; want its key", r.View(), err)
		}
	})

	t.Run("webhook signatures", func(t *testing.T) {
		good := githubPing(hookSecret)
		wrong := githubPing("not-the-secret")
		unsigned := githubPing(hookSecret)
		unsigned.header = map[string]string{"X-GitHub-Event": "ping"}
		tampered := githubPing(hookSecret)
		tampered.body = strings.Replace(tampered.body, "awesome", "AWESOME", 1)
		en.do(good).wantStatus(t, http.StatusOK)
		for name, r := range map[string]request{"wrong secret": wrong, "unsigned": unsigned, "tampered body": tampered} {
			t.Run(name, func(t *testing.T) {
				en.do(r).wantProblem(t, http.StatusUnauthorized, "", "")
			})
		}
	})

	t.Run("CSRF", func(t *testing.T) {
		body := jsonBody(t, map[string]string{"username": auth.AdminAccount, "password": en.adminPassword})
		login := en.do(request{method: http.MethodPost, path: "/api/v1/session", body: body})
		login.wantStatus(t, http.StatusOK)
		var cookie []string
		var csrf string
		for _, c := range login.cookies() {
			cookie = append(cookie, c.Name+"="+c.Value)
			if c.Name == auth.CSRFCookie {
				csrf = c.Value
			}
		}
		withCookies := map[string]string{"Cookie": strings.Join(cookie, "; ")}
		create := request{method: http.MethodPost, path: "/api/v1/projects", body: `{"name": "team-a"}`, header: withCookies}
		// Reads need no CSRF token.
		en.do(request{method: http.MethodGet, path: "/api/v1/projects", header: withCookies}).wantStatus(t, http.StatusOK)
		en.do(create).wantProblem(t, http.StatusForbidden, "", "")
		create.header = map[string]string{"Cookie": withCookies["Cookie"], auth.CSRFHeader: csrf}
		en.do(create).wantProblem(t, http.StatusConflict, "", "team-a already exists")
	})
}

// TestProblems checks that every kind of error is an RFC 9457 problem:
// application/problem+json with the status, its title and a detail.
func TestProblems(t *testing.T) {
	en := newEnv(t)
	adminTok := en.tokens[auth.AdminAccount]

	// down answers with a Temporal client of a server that is not there.
	lazy, err := client.NewLazyClient(client.Options{HostPort: testbed.ClosedAddr(t), Namespace: bed.namespace})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lazy.Close)
	downSrv, err := New(lazy, en.srv.opts)
	if err != nil {
		t.Fatal(err)
	}
	down := httptest.NewServer(downSrv)
	t.Cleanup(down.Close)

	// noRedis authenticates against a revocation store that is not there.
	rdb := redis.NewClient(&redis.Options{Addr: testbed.ClosedAddr(t), DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	authNoRedis, err := auth.New(auth.Config{}, en.secrets, auth.RedisRevocations{Client: rdb}, en.srv.opts.Logger)
	if err != nil {
		t.Fatal(err)
	}
	opts := en.srv.opts
	opts.Auth = authNoRedis
	noRedisSrv, err := New(bed.temporal, opts)
	if err != nil {
		t.Fatal(err)
	}
	noRedis := httptest.NewServer(noRedisSrv)
	t.Cleanup(noRedis.Close)

	for _, tc := range []struct {
		name          string
		base          string // default: the env's server
		req           request
		status        int
		field, detail string
	}{
		{name: "unauthenticated", req: request{method: http.MethodGet, path: "/api/v1/projects"}, status: http.StatusUnauthorized},
		{name: "forbidden", req: request{method: http.MethodPost, path: "/api/v1/projects", body: `{"name": "x"}`, token: en.tokens[nobodyAccount]},
			status: http.StatusForbidden, detail: "permission denied: projects, create, x"},
		{name: "unknown project", req: request{method: http.MethodGet, path: "/api/v1/projects/ghost", token: adminTok},
			status: http.StatusNotFound, detail: "ghost"},
		{name: "unknown application", req: request{method: http.MethodGet, path: "/api/v1/applications/ghost", token: adminTok},
			status: http.StatusNotFound, detail: "application not found"},
		{name: "unknown route", req: request{method: http.MethodGet, path: "/api/v1/nothing", token: adminTok}, status: http.StatusNotFound},
		{name: "unknown route, anonymous", req: request{method: http.MethodGet, path: "/api/v1/nothing"}, status: http.StatusUnauthorized},
		{name: "method not allowed", req: request{method: http.MethodPatch, path: "/api/v1/projects", token: adminTok}, status: http.StatusMethodNotAllowed},
		{name: "bad JSON", req: request{method: http.MethodPost, path: "/api/v1/repositories", body: "{", token: adminTok},
			status: http.StatusBadRequest, detail: "not a valid repository"},
		{name: "bad login", req: request{method: http.MethodPost, path: "/api/v1/session", body: `{"username": "admin", "password": "wrong"}`},
			status: http.StatusUnauthorized},
		{name: "conflict", req: request{method: http.MethodPost, path: "/api/v1/projects", body: `{"name": "team-a"}`, token: adminTok},
			status: http.StatusConflict, detail: "already exists"},
		{name: "too large", req: request{method: http.MethodPost, path: "/api/v1/repositories", body: strings.Repeat(" ", maxBodyBytes+1), token: adminTok},
			status: http.StatusRequestEntityTooLarge},
		{name: "connection test failed", req: request{method: http.MethodPost, path: "/api/v1/repositories",
			body: `{"url": "https://` + checkFailure + `.example.com/x.git"}`, token: adminTok},
			status: http.StatusUnprocessableEntity, field: "url", detail: "connection test failed"},
		{name: "no inspector", req: request{method: http.MethodGet, path: "/api/v1/applications/ghost/diff", token: adminTok},
			status: http.StatusNotImplemented, detail: "no Inspector configured"},
		{name: "Temporal unreachable: list", base: down.URL, req: request{method: http.MethodGet, path: "/api/v1/applications", token: adminTok},
			status: http.StatusServiceUnavailable, detail: "the workflow engine is unavailable"},
		{name: "Temporal unreachable: get", base: down.URL, req: request{method: http.MethodGet, path: "/api/v1/applications/ghost", token: adminTok},
			status: http.StatusServiceUnavailable, detail: "the workflow engine is unavailable"},
		{name: "Temporal unreachable: sync", base: down.URL, req: request{method: http.MethodPost, path: "/api/v1/applications/ghost/sync", token: adminTok},
			status: http.StatusServiceUnavailable, detail: "the workflow engine is unavailable"},
		{name: "Temporal unreachable: delete project", base: down.URL, req: request{method: http.MethodDelete, path: "/api/v1/projects/team-a", token: adminTok},
			status: http.StatusServiceUnavailable, detail: "the workflow engine is unavailable"},
		{name: "revocation store unreachable", base: noRedis.URL, req: request{method: http.MethodGet, path: "/api/v1/projects", token: adminTok},
			status: http.StatusServiceUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := tc.base
			if base == "" {
				base = en.http.URL
			}
			res := doOn(t, base, tc.req)
			res.wantProblem(t, tc.status, tc.field, tc.detail)
			p := res.problem(t)
			if p.Title != http.StatusText(tc.status) || p.Detail == "" {
				t.Errorf("problem %+v: want title %q and a detail", p, http.StatusText(tc.status))
			}
		})
	}
}
