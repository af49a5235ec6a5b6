package api

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"golang.org/x/crypto/bcrypt"

	"github.com/windlass-cd/windlass/api/auth"
	"github.com/windlass-cd/windlass/api/rbac"
	"github.com/windlass-cd/windlass/api/webhook"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/secretstore"
	"github.com/windlass-cd/windlass/internal/settings"
	"github.com/windlass-cd/windlass/internal/temporalx"
	"github.com/windlass-cd/windlass/internal/testbed"
	"github.com/windlass-cd/windlass/worker"
	"github.com/windlass-cd/windlass/workflows"
)

// bed is what every test shares: an embedded Temporal server (without a
// worker, so application workflows start but never run) and Redis.
var bed struct {
	temporal  client.Client
	namespace string
	redisAddr string
}

// noWorkerQueue is the task queue of the tests' application workflows;
// nothing polls it.
const noWorkerQueue = "api-test-no-worker"

// Applications whose workflows TestMain starts (they stay running and
// never make progress): one in the default project, one in team-a.
var (
	runningDefaultApp = appspec.Application{Name: "guestbook", Project: appspec.DefaultProject,
		Source:      appspec.Source{RepoURL: "https://git.example.com/default/guestbook.git", Path: "."},
		Destination: appspec.Destination{Server: appspec.InClusterServer, Namespace: "guestbook"}}
	runningTeamApp = appspec.Application{Name: "web", Project: teamProject,
		Source:      appspec.Source{RepoURL: "https://git.example.com/team-a/web.git", Path: "."},
		Destination: appspec.Destination{Server: teamCluster, Namespace: "team-a-web"}}
)

// teamCluster is the destination of runningTeamApp.
const teamCluster = "https://team-a.example.com:6443"

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	fail := func(what string, err error) int {
		fmt.Fprintln(os.Stderr, "api test setup:", what+":", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tmp, err := os.MkdirTemp("", "windlass-api-test-")
	if err != nil {
		return fail("temp dir", err)
	}
	defer os.RemoveAll(tmp)

	bed.redisAddr = os.Getenv(testbed.EnvRedisAddr)
	if bed.redisAddr == "" {
		rd, err := testbed.StartRedis(ctx, filepath.Join(tmp, "redis"))
		if err != nil {
			return fail("start redis", err)
		}
		defer func() { _ = rd.Stop() }()
		bed.redisAddr = rd.Addr()
	}

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("WINDLASS_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	dev, err := temporalx.StartDevServer(ctx, temporalx.DevServerConfig{
		DataDir: filepath.Join(tmp, "temporal"), FrontendAddr: "127.0.0.1:0", UIAddr: "off",
		SearchAttributes: worker.SearchAttributes(), Logger: log,
	})
	if err != nil {
		return fail("start temporal", err)
	}
	defer func() { _ = dev.Stop() }()
	bed.namespace = dev.Namespace()
	bed.temporal, err = temporalx.Dial(ctx, temporalx.ClientConfig{HostPort: dev.FrontendAddr(), Namespace: dev.Namespace(), Logger: log})
	if err != nil {
		return fail("dial temporal", err)
	}
	defer bed.temporal.Close()
	// Only web carries the search attributes that the project and cluster
	// deletion checks read, so that the default project can be deleted.
	if err := startApp(ctx, runningDefaultApp, temporal.SearchAttributes{}); err != nil {
		return fail("start app", err)
	}
	if err := startApp(ctx, runningTeamApp, temporal.NewSearchAttributes(
		temporal.NewSearchAttributeKeyKeyword(workflows.SearchAttrProject).ValueSet(runningTeamApp.Project),
		temporal.NewSearchAttributeKeyKeyword(workflows.SearchAttrCluster).ValueSet(runningTeamApp.Destination.Server),
		temporal.NewSearchAttributeKeyKeyword(workflows.SearchAttrName).ValueSet(runningTeamApp.Name),
		temporal.NewSearchAttributeKeyKeyword(workflows.SearchAttrNamespace).ValueSet(runningTeamApp.Destination.Namespace),
	)); err != nil {
		return fail("start app", err)
	}
	return m.Run()
}

// startApp starts an application workflow with search attributes.
func startApp(ctx context.Context, app appspec.Application, sa temporal.SearchAttributes) error {
	_, err := bed.temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: workflows.AppWorkflowID(app.Project, app.Name), TaskQueue: noWorkerQueue, TypedSearchAttributes: sa,
	}, workflows.ApplicationWorkflowName, workflows.AppInput{Spec: app.Defaulted()})
	return err
}

// Test accounts besides admin.
const (
	viewerAccount = "viewer" // role:readonly
	nobodyAccount = "nobody" // no role; logs in and mints its own tokens
	svcAccount    = "svc"    // API tokens only
	teamProject   = "team-a"
	ciRole        = "ci"
	// hookSecret signs GitHub webhooks.
	hookSecret = "hook-secret-for-tests"
	// checkFailure makes the fake connection checks fail.
	checkFailure = "unreachable-on-purpose"
)

var testPasswords = map[string]string{
	viewerAccount: "viewer-password-123",
	nobodyAccount: "nobody-password-123",
}

// teamA is the project team-a: its apps deploy to team-a-* namespaces,
// and its role ci may get and sync them.
func teamA() appspec.Project {
	return appspec.Project{
		Name: teamProject, SourceRepos: []string{"*"},
		Destinations: []appspec.ProjectDestination{{Server: "*", Namespace: "team-a-*"}},
		Roles: []appspec.ProjectRole{{Name: ciRole, Policies: []string{
			"p, proj:team-a:ci, applications, get, team-a/*, allow",
			"p, proj:team-a:ci, applications, sync, team-a/*, allow",
		}}},
	}
}

// env is an API server with its own settings, accounts and keys, on the
// shared Temporal and Redis.
type env struct {
	t        *testing.T
	srv      *Server
	http     *httptest.Server
	secrets  *secretstore.Memory
	auth     *auth.Service
	settings *settings.Store
	// adminPassword is admin's password; tokens holds a session per
	// account and ciToken the team-a ci role's API token.
	adminPassword string
	tokens        map[string]string
	ciToken       string
}

type envOption func(*Options)

// newEnv builds an env: admin, viewer (role:readonly), nobody (no role)
// and svc (API tokens), project team-a with its ci role, and the fake
// connection checks, which fail for anything naming checkFailure.
func newEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	ctx := t.Context()
	secrets := &secretstore.Memory{}
	st, err := settings.New(secrets)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PutProject(ctx, teamA()); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: bed.redisAddr})
	t.Cleanup(func() { _ = rdb.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	authSvc, err := auth.New(auth.Config{
		BcryptCost: bcrypt.MinCost,
		Accounts: []auth.AccountConfig{
			{Name: viewerAccount, Enabled: true, Capabilities: []string{auth.CapabilityLogin}},
			{Name: nobodyAccount, Enabled: true, Capabilities: []string{auth.CapabilityLogin, auth.CapabilityAPIKey}},
			{Name: svcAccount, Enabled: true, Capabilities: []string{auth.CapabilityAPIKey}},
		},
	}, secrets, auth.RedisRevocations{Client: rdb}, log)
	if err != nil {
		t.Fatal(err)
	}
	adminPassword, err := authSvc.Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	asAdmin := auth.ContextWithPrincipal(ctx, auth.Principal{Name: auth.AdminAccount, Kind: auth.KindSession})
	for name, pw := range testPasswords {
		if err := authSvc.SetPassword(asAdmin, name, adminPassword, pw); err != nil {
			t.Fatal(err)
		}
	}
	projects, err := st.Projects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	enf, err := rbac.New(rbac.Config{PolicyCSV: "g, " + viewerAccount + ", " + rbac.RoleReadonly + "\n"}, projects)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{
		Logger: log, TaskQueue: noWorkerQueue, Namespace: bed.namespace,
		Auth: authSvc, RBAC: enf, Settings: st,
		Webhook:        webhook.Config{Secrets: webhook.Secrets{GitHub: hookSecret}},
		RequestTimeout: 10 * time.Second, SyncTimeout: 10 * time.Second,
		RepoCheck: func(r settings.Repository) error {
			if strings.Contains(r.URL, checkFailure) {
				return errors.New("authentication required: " + checkFailure)
			}
			return nil
		},
		ClusterCheck: func(c settings.Cluster) error {
			if strings.Contains(c.Server, checkFailure) {
				return errors.New("dial tcp: " + checkFailure)
			}
			return nil
		},
	}
	for _, f := range opts {
		f(&o)
	}
	srv, err := New(bed.temporal, o)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	en := &env{t: t, srv: srv, http: hs, secrets: secrets, auth: authSvc, settings: st,
		adminPassword: adminPassword, tokens: map[string]string{}}
	en.tokens[auth.AdminAccount] = en.login(auth.AdminAccount, adminPassword)
	for name, pw := range testPasswords {
		en.tokens[name] = en.login(name, pw)
	}
	en.ciToken = en.mintCIToken(envCIToken)
	return en
}

// envCIToken is the ID of env.ciToken.
const envCIToken = "env-ci"

// mintCIToken mints an API token of the team-a ci role (id "": a random ID).
func (en *env) mintCIToken(id string) string {
	en.t.Helper()
	tok, _, err := en.auth.MintToken(en.t.Context(), rbac.ProjectRoleSubject(teamProject, ciRole), auth.TokenOptions{ID: id})
	if err != nil {
		en.t.Fatal(err)
	}
	return tok
}

// login opens a session through the API.
func (en *env) login(user, password string) string {
	en.t.Helper()
	body, _ := json.Marshal(map[string]string{"username": user, "password": password})
	res := en.do(request{method: http.MethodPost, path: "/api/v1/session", body: string(body)})
	if res.code != http.StatusOK {
		en.t.Fatalf("login %s: %d %s", user, res.code, res.body)
	}
	var out struct{ Token string }
	res.decode(en.t, &out)
	return out.Token
}

// request is a request to the env's server.
type request struct {
	method, path, body string
	token              string
	header             map[string]string
}

// response is what the server answered.
type response struct {
	code   int
	header http.Header
	body   []byte
}

func (en *env) do(r request) response {
	en.t.Helper()
	return doOn(en.t, en.http.URL, r)
}

// admin sends r with admin's session.
func (en *env) admin(r request) response {
	en.t.Helper()
	r.token = en.tokens[auth.AdminAccount]
	return en.do(r)
}

// doOn sends r to the server at base. Of an event stream it reads only
// the status and headers, then hangs up.
func doOn(t *testing.T, base string, r request) response {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, r.method, base+r.path, strings.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	if r.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer resp.Body.Close()
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct == "text/event-stream" {
		return response{code: resp.StatusCode, header: resp.Header}
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{code: resp.StatusCode, header: resp.Header, body: body}
}

func (r response) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// problem decodes an RFC 9457 problem response, failing the test unless
// it is one: application/problem+json with type, title and status.
func (r response) problem(t *testing.T) Problem {
	t.Helper()
	if ct, _, _ := mime.ParseMediaType(r.header.Get("Content-Type")); ct != "application/problem+json" {
		t.Fatalf("Content-Type = %q, want application/problem+json (status %d, body %s)", r.header.Get("Content-Type"), r.code, r.body)
	}
	var p Problem
	r.decode(t, &p)
	if p.Status != r.code || p.Title == "" || p.Type == "" {
		t.Fatalf("problem %+v: want status %d, a title and a type", p, r.code)
	}
	return p
}

// wantProblem checks that r is a problem with the status and field, whose
// detail contains detail.
func (r response) wantProblem(t *testing.T, status int, field, detail string) {
	t.Helper()
	if r.code != status {
		t.Fatalf("status %d, want %d: %s", r.code, status, r.body)
	}
	p := r.problem(t)
	if p.Field != field {
		t.Errorf("field %q, want %q (detail %q)", p.Field, field, p.Detail)
	}
	if !strings.Contains(p.Detail, detail) {
		t.Errorf("detail %q does not contain %q", p.Detail, detail)
	}
}

// wantStatus fails the test unless r has the status.
func (r response) wantStatus(t *testing.T, status int) {
	t.Helper()
	if r.code != status {
		t.Fatalf("status %d, want %d: %s", r.code, status, r.body)
	}
}

// listNames decodes {"items": [...]} and returns each item's key field.
func (r response) listNames(t *testing.T, key string) []string {
	t.Helper()
	r.wantStatus(t, http.StatusOK)
	var out struct{ Items []map[string]any }
	r.decode(t, &out)
	if out.Items == nil {
		t.Fatalf("items is missing or null: %s", r.body)
	}
	names := []string{}
	for _, it := range out.Items {
		names = append(names, fmt.Sprint(it[key]))
	}
	return names
}

// githubPing is a signed GitHub ping delivery.
func githubPing(secret string) request {
	body := `{"zen":"Keep it logically awesome.","hook_id":1}`
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(body))
	return request{method: http.MethodPost, path: webhook.Path, body: body, header: map[string]string{
		"X-GitHub-Event": "ping", "X-Hub-Signature-256": "sha256=" + hex.EncodeToString(mac.Sum(nil)),
	}}
}

// visibilityWait bounds the wait for the visibility index.
const visibilityWait = 30 * time.Second

// appNames decodes an application list into <project>/<name>s.
func appNames(t *testing.T, r response) []string {
	t.Helper()
	r.wantStatus(t, http.StatusOK)
	var list AppList
	r.decode(t, &list)
	if list.Items == nil {
		t.Fatalf("items is missing or null: %s", r.body)
	}
	names := []string{}
	for _, a := range list.Items {
		names = append(names, a.Project+"/"+a.Name)
	}
	return names
}

// eventually polls f until it returns nil or the deadline passes.
func eventually(t *testing.T, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for delay := 20 * time.Millisecond; ; delay = min(2*delay, 500*time.Millisecond) {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %v", timeout, err)
		}
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(delay):
		}
	}
}

// jsonBody marshals v.
func jsonBody(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimSpace(b))
}
