package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
	"golang.org/x/crypto/bcrypt"

	"github.com/windlass-cd/windlass/api"
	"github.com/windlass-cd/windlass/api/auth"
	"github.com/windlass-cd/windlass/api/rbac"
	"github.com/windlass-cd/windlass/api/sso"
	"github.com/windlass-cd/windlass/internal/dexserver"
	"github.com/windlass-cd/windlass/internal/dexserver/dextest"
)

// The Dex users of the SSO tests (static passwords) and their groups:
// windlass-admins is bound to role:admin, windlass-viewers to
// role:readonly; eve's groups are unmapped or reserved (dropped), so she
// has only the default role.
const (
	ssoPassword = "sso-password-e2e"
	janeEmail   = "jane@example.com"
	bobEmail    = "bob@example.com"
	eveEmail    = "eve@example.com"
	ssoPolicy   = "g, windlass-admins, role:admin\ng, windlass-viewers, role:readonly\n" +
		"p, role:sso-default, projects, get, *, allow\n"
)

// ssoAPI is a second API server on the test bed's Temporal, settings,
// secret store (its signing keys) and Redis, with single sign-on through a
// real Dex in process at <URL>/api/dex, as `windlass server` runs it with an
// sso.dex section.
type ssoAPI struct {
	url string
}

var (
	ssoOnce   sync.Once
	ssoServer ssoAPI
	ssoErr    error
)

// startSSOAPI starts the ssoAPI once for the test binary.
func startSSOAPI(t *testing.T) ssoAPI {
	t.Helper()
	ssoOnce.Do(func() { ssoServer, ssoErr = newSSOAPI() })
	if ssoErr != nil {
		t.Fatal(ssoErr)
	}
	return ssoServer
}

func newSSOAPI() (ssoAPI, error) {
	ctx := context.Background() // Dex's background work lasts as long as the test binary
	ts := httptest.NewUnstartedServer(nil)
	base := "http://" + ts.Listener.Addr().String()
	hash, err := bcrypt.GenerateFromPassword([]byte(ssoPassword), bcrypt.DefaultCost)
	if err != nil {
		return ssoAPI{}, err
	}
	user := func(email string, groups ...string) dexserver.Password {
		return dexserver.Password{Email: email, Hash: string(hash), Groups: groups}
	}
	secret := "e2e-web-client-secret-" + uniq("s")
	callback := base + "/api/v1" + sso.PathCallback
	dex, err := dexserver.New(ctx, dexserver.Config{StaticPasswords: []dexserver.Password{
		user(janeEmail, "windlass-admins"), user(bobEmail, "windlass-viewers"),
		user(eveEmail, "admin", "role:admin", "windlass-nobody"),
	}}, dexserver.Options{Issuer: base + dexserver.Path, RedirectURI: callback, ClientSecret: secret, Logger: bed.log})
	if err != nil {
		return ssoAPI{}, err
	}
	rdb := redis.NewClient(&redis.Options{Addr: bed.env.RedisAddr})
	authSvc, err := auth.New(auth.Config{}, bed.store, auth.RedisRevocations{Client: rdb}, bed.log)
	if err != nil {
		return ssoAPI{}, err
	}
	h, err := sso.New(sso.Config{
		Name: "Dex", Issuer: dex.Issuer(), ClientID: dexserver.WebClientID, ClientSecret: secret,
		CLIClientID: dexserver.CLIClientID, RedirectURL: callback, HTTPClient: dex.Client(),
	}, authSvc, sso.RedisFlows{Client: rdb}, bed.log)
	if err != nil {
		return ssoAPI{}, err
	}
	enf, err := rbac.New(rbac.Config{PolicyCSV: ssoPolicy, DefaultRole: "role:sso-default"}, nil)
	if err != nil {
		return ssoAPI{}, err
	}
	srv, err := api.New(bed.temporal, api.Options{
		Logger: bed.log, Namespace: bed.namespace, Auth: authSvc, RBAC: enf, Settings: bed.settings, SSO: h, Dex: dex,
	})
	if err != nil {
		return ssoAPI{}, err
	}
	ts.Config.Handler = srv
	ts.Start() // closed with the test process
	return ssoAPI{url: base}, nil
}

// ssoUser is a browser logged in through single sign-on.
type ssoUser struct {
	t    *testing.T
	api  ssoAPI
	b    *dextest.Browser
	csrf string
}

// ssoLogin logs email in with a browser: the login page, Dex's password
// form (and approval page, if any), the callback, back to /applications.
func ssoLogin(t *testing.T, a ssoAPI, email string) *ssoUser {
	t.Helper()
	b := dextest.NewBrowser(email, ssoPassword)
	page, err := b.Visit(t.Context(), a.url+"/api/v1/sso/login?return=%2Fapplications", func(u *url.URL) bool {
		return !strings.HasPrefix(u.Path, dexserver.Path) && !strings.HasPrefix(u.Path, "/api/v1/sso/")
	})
	if err != nil {
		t.Fatal(err)
	}
	if page.Status != http.StatusSeeOther || page.Location().String() != a.url+"/applications" {
		t.Fatalf("the login of %s ended with %d at %s (Location %q): %.300s", email, page.Status, page.URL, page.Header.Get("Location"), page.Body)
	}
	u := &ssoUser{t: t, api: a, b: b}
	base, _ := url.Parse(a.url)
	var names []string
	for _, c := range b.HTTP.Jar.Cookies(base) {
		names = append(names, c.Name)
		if c.Name == auth.CSRFCookie {
			u.csrf = c.Value
		}
	}
	if !slices.Contains(names, auth.TokenCookie) || u.csrf == "" {
		t.Fatalf("after the login of %s the browser holds the cookies %v", email, names)
	}
	return u
}

// do sends a request with the browser's cookies (and the CSRF header on
// unsafe methods, as the UI does) and decodes the answer into out.
func (u *ssoUser) do(method, path string, body any, out any) int {
	u.t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(u.t.Context(), method, u.api.url+path, r)
	if err != nil {
		u.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if method != http.MethodGet {
		req.Header.Set(auth.CSRFHeader, u.csrf)
	}
	res, err := u.b.HTTP.Do(req)
	if err != nil {
		u.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			u.t.Fatalf("%s %s: %d %q: %v", method, path, res.StatusCode, data, err)
		}
	}
	return res.StatusCode
}

type ssoUserInfo struct {
	Name   string   `json:"name"`
	Groups []string `json:"groups"`
	Kind   string   `json:"kind"`
	SSO    bool     `json:"sso"`
}

// TestSSOLogin: proof 7, SSO login through a real Dex. Three users log in
// with the full redirect flow over HTTP; their groups map to roles: jane
// (windlass-admins → role:admin) may create a project, bob
// (windlass-viewers → role:readonly) may read but gets 403 on the create,
// and eve (no mapped group; her groups "admin" and "role:admin" are
// dropped) has only the default role. Logout ends the session.
func TestSSOLogin(t *testing.T) {
	a := startSSOAPI(t)
	var cfg struct {
		Enabled bool   `json:"enabled"`
		Issuer  string `json:"issuer"`
	}
	if code := callAt(t, a.url+"/api/v1/sso/config", &cfg); code != http.StatusOK || !cfg.Enabled || cfg.Issuer != a.url+dexserver.Path {
		t.Fatalf("sso config: %d %+v", code, cfg)
	}

	jane, bob, eve := ssoLogin(t, a, janeEmail), ssoLogin(t, a, bobEmail), ssoLogin(t, a, eveEmail)
	for _, tc := range []struct {
		u    *ssoUser
		want ssoUserInfo
	}{
		{jane, ssoUserInfo{Name: janeEmail, Groups: []string{"windlass-admins"}, Kind: auth.KindSession, SSO: true}},
		{bob, ssoUserInfo{Name: bobEmail, Groups: []string{"windlass-viewers"}, Kind: auth.KindSession, SSO: true}},
		{eve, ssoUserInfo{Name: eveEmail, Groups: []string{"windlass-nobody"}, Kind: auth.KindSession, SSO: true}},
	} {
		var got ssoUserInfo
		if code := tc.u.do(http.MethodGet, "/api/v1/session/userinfo", nil, &got); code != http.StatusOK {
			t.Fatalf("userinfo of %s: %d", tc.want.Name, code)
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("userinfo (-want +got):\n%s", d)
		}
	}

	project := uniq("sso")
	var problem struct {
		Detail string `json:"detail"`
	}
	if code := bob.do(http.MethodPost, "/api/v1/projects", map[string]string{"name": project}, &problem); code != http.StatusForbidden ||
		!strings.Contains(problem.Detail, "permission denied: projects, create, "+project) {
		t.Errorf("bob creates a project: %d %q, want 403", code, problem.Detail)
	}
	if code := jane.do(http.MethodPost, "/api/v1/projects", map[string]string{"name": project}, nil); code != http.StatusCreated {
		t.Fatalf("jane creates a project: %d, want 201", code)
	}
	for _, tc := range []struct {
		u          *ssoUser
		path       string
		want       int
		whoAndWhat string
	}{
		{bob, "/api/v1/projects/" + project, http.StatusOK, "bob reads the project"},
		{eve, "/api/v1/projects/" + project, http.StatusOK, "eve reads the project (the default role)"},
		{eve, "/api/v1/applications/ghost?project=" + project, http.StatusForbidden, "eve reads an application"},
		{eve, "/api/v1/repositories/" + url.PathEscape("https://git.example.com/x.git"), http.StatusForbidden, "eve reads a repository"},
	} {
		if code := tc.u.do(http.MethodGet, tc.path, nil, nil); code != tc.want {
			t.Errorf("%s: %d, want %d", tc.whoAndWhat, code, tc.want)
		}
	}

	if code := jane.do(http.MethodDelete, "/api/v1/projects/"+project, nil, nil); code != http.StatusNoContent {
		t.Errorf("jane deletes the project: %d, want 204", code)
	}
	if code := jane.do(http.MethodDelete, "/api/v1/session", nil, nil); code != http.StatusNoContent {
		t.Fatalf("jane logs out: %d", code)
	}
	if code := jane.do(http.MethodGet, "/api/v1/session/userinfo", nil, nil); code != http.StatusUnauthorized {
		t.Errorf("after logout: %d, want 401", code)
	}
}

// callAt gets an absolute URL without a token and decodes the answer.
func callAt(t *testing.T, u string, out any) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
	return res.StatusCode
}

// TestSSOCLILogin: `windlass login --sso` runs the device flow against the
// real Dex while a browser enters the printed code and logs in; the CLI
// then holds a session of the user and its groups.
func TestSSOCLILogin(t *testing.T) {
	a := startSSOAPI(t)
	dir := t.TempDir()
	bin, config := filepath.Join(dir, "windlass"), filepath.Join(dir, "config")
	if out, err := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "github.com/windlass-cd/windlass/cmd/windlass").CombinedOutput(); err != nil {
		t.Fatalf("build the CLI: %v\n%s", err, out)
	}
	env := append(os.Environ(), "WINDLASS_SERVER=", "WINDLASS_TOKEN=")
	login := exec.CommandContext(t.Context(), bin, "login", "--sso", "--server", a.url, "--config", config)
	login.Env = env
	stderr, err := login.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	login.Stdout = &stdout
	if err := login.Start(); err != nil {
		t.Fatal(err)
	}
	// The CLI prints where to log in, with the code in the URL.
	open := regexp.MustCompile(`open (http\S+user_code=\S+)`)
	var verify, printed string
	lines := bufio.NewScanner(stderr)
	for verify == "" && lines.Scan() {
		printed += lines.Text() + "\n"
		if m := open.FindStringSubmatch(lines.Text()); m != nil {
			verify = m[1]
		}
	}
	if verify == "" {
		_ = login.Wait()
		t.Fatalf("the CLI printed no URL:\n%s", printed)
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	page, err := dextest.NewBrowser(janeEmail, ssoPassword).Visit(t.Context(), verify, func(*url.URL) bool { return false })
	if err != nil || page.Status != http.StatusOK || !strings.HasSuffix(page.URL.Path, "/device/callback") {
		t.Fatalf("the browser's device login: %v, ended with %d at %v", err, page.Status, page.URL)
	}
	if err := login.Wait(); err != nil {
		t.Fatalf("windlass login --sso: %v\n%s%s", err, printed, stdout.String())
	}
	if !strings.Contains(stdout.String(), "Logged in to "+a.url+" as "+janeEmail) {
		t.Errorf("login said: %s", stdout.String())
	}
	whoami := exec.CommandContext(t.Context(), bin, "account", "get-user-info", "-o", "json", "--config", config)
	whoami.Env = env
	out, err := whoami.Output()
	if err != nil {
		t.Fatalf("account get-user-info: %v", err)
	}
	var got ssoUserInfo
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("account get-user-info: %v: %s", err, out)
	}
	if d := cmp.Diff(ssoUserInfo{Name: janeEmail, Groups: []string{"windlass-admins"}, Kind: auth.KindSession, SSO: true}, got); d != "" {
		t.Errorf("the CLI's session (-want +got):\n%s", d)
	}
}
