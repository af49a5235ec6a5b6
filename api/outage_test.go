package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v5"
	"github.com/redis/go-redis/v9"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"golang.org/x/crypto/bcrypt"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/windlass-cd/windlass/api/auth"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/lastknown"
	"github.com/windlass-cd/windlass/internal/secretstore"
	"github.com/windlass-cd/windlass/internal/settings"
	"github.com/windlass-cd/windlass/internal/testbed"
	"github.com/windlass-cd/windlass/workflows"
)

// outageServer serves en's API with the secrets, revocations and settings
// given, and returns its base URL.
func outageServer(t *testing.T, en *env, secrets secretstore.Store, rdb redis.UniversalClient, sets *settings.Store) string {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := auth.New(auth.Config{BcryptCost: bcrypt.MinCost}, secrets, auth.RedisRevocations{Client: rdb}, log)
	if err != nil {
		t.Fatal(err)
	}
	o := en.srv.opts
	o.Auth, o.Settings = a, sets
	srv, err := New(bed.temporal, o)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return hs.URL
}

// TestOutageNamesCause: with the management cluster's API or Redis down,
// login and requests answer 503 with a problem that names the one that
// does not answer, never the workflow service.
func TestOutageNamesCause(t *testing.T) {
	en := newEnv(t)
	kc, err := kubernetes.NewForConfig(&rest.Config{Host: "https://" + testbed.ClosedAddr(t), Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	kubeDown, err := secretstore.NewKubernetes(kc, "windlass")
	if err != nil {
		t.Fatal(err)
	}
	kubeSettings, err := settings.New(kubeDown)
	if err != nil {
		t.Fatal(err)
	}
	live := redis.NewClient(&redis.Options{Addr: bed.redisAddr})
	t.Cleanup(func() { _ = live.Close() })
	redisDown := redis.NewClient(&redis.Options{Addr: testbed.ClosedAddr(t), MaxRetries: -1})
	t.Cleanup(func() { _ = redisDown.Close() })

	login := request{method: http.MethodPost, path: "/api/v1/session",
		body: fmt.Sprintf(`{"username": %q, "password": %q}`, auth.AdminAccount, en.adminPassword)}
	session := func(r request) request { r.token = en.tokens[auth.AdminAccount]; return r }
	apps := request{method: http.MethodGet, path: "/api/v1/applications"}
	repos := request{method: http.MethodGet, path: "/api/v1/repositories"}
	kubeBase := outageServer(t, en, kubeDown, live, kubeSettings)
	// Auth works; only the settings live in the unreachable cluster.
	kubeSettingsBase := outageServer(t, en, en.secrets, live, kubeSettings)
	redisBase := outageServer(t, en, en.secrets, redisDown, en.settings)
	for _, tt := range []struct {
		name, base string
		req        request
		cause      string
	}{
		{name: "kubernetes: login", base: kubeBase, req: login, cause: "the Kubernetes API is unreachable"},
		{name: "kubernetes: a session", base: kubeBase, req: session(apps), cause: "the Kubernetes API is unreachable"},
		{name: "kubernetes: settings", base: kubeSettingsBase, req: session(repos), cause: "the Kubernetes API is unreachable"},
		{name: "redis: login", base: redisBase, req: login, cause: "Redis is unreachable"},
		{name: "redis: a session", base: redisBase, req: session(apps), cause: "Redis is unreachable"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := doOn(t, tt.base, tt.req)
			res.wantProblem(t, http.StatusServiceUnavailable, "", tt.cause)
			if strings.Contains(string(res.body), "workflow service") {
				t.Errorf("the problem blames the workflow service: %s", res.body)
			}
		})
	}
}

// TestUnavailableProblem: errors that say a dependency does not answer
// map to 503 problems that name it.
func TestUnavailableProblem(t *testing.T) {
	timeout := fmt.Errorf("redis get revocation: %w: %w", auth.ErrRedisUnreachable, context.DeadlineExceeded)
	for _, tt := range []struct {
		name   string
		err    error
		detail string
	}{
		{name: "a sync refused: kubernetes unreachable",
			err:    temporal.NewApplicationError("revision: resolve main: the Kubernetes API is unreachable", workflows.ErrTypeUnavailable),
			detail: "the Kubernetes API is unreachable"},
		{name: "a secret read", err: fmt.Errorf("load project p: %w", fmt.Errorf("%w: %w", secretstore.ErrUnreachable, errors.New("connection refused"))),
			detail: "the Kubernetes API is unreachable"},
		{name: "a redis timeout", err: timeout, detail: "Redis is unreachable"},
		// The request timeout middleware wraps a DeadlineExceeded in a bare 503.
		{name: "a session check timed out", detail: "cannot check whether the token is revoked: Redis is unreachable",
			err: echo.ErrServiceUnavailable.Wrap(echo.NewHTTPError(http.StatusServiceUnavailable,
				"cannot check whether the token is revoked: Redis is unreachable; try again later").Wrap(timeout))},
		{name: "a redis timeout past the request's deadline", err: echo.ErrServiceUnavailable.Wrap(timeout), detail: "Redis is unreachable"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := toProblem(tt.err)
			if p.Status != http.StatusServiceUnavailable || !strings.Contains(p.Detail, tt.detail) || strings.Contains(p.Detail, "workflow service") {
				t.Errorf("toProblem(%v) = %d %q, want 503 naming %q", tt.err, p.Status, p.Detail, tt.detail)
			}
		})
	}
}

// flakyTemporal is the test bed's Temporal that stops answering while
// down; its queries answer view, as a worker would.
type flakyTemporal struct {
	client.Client
	down atomic.Bool
	view workflows.AppView
}

var errEngineDown = serviceerror.NewUnavailable("dial tcp 127.0.0.1:7233: connection refused")

func (f *flakyTemporal) QueryWorkflow(context.Context, string, string, string, ...any) (converter.EncodedValue, error) {
	if f.down.Load() {
		return nil, errEngineDown
	}
	p, err := converter.GetDefaultDataConverter().ToPayloads(f.view)
	return client.NewValue(p), err
}

func (f *flakyTemporal) ListWorkflow(ctx context.Context, req *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	if f.down.Load() {
		return nil, errEngineDown
	}
	return f.Client.ListWorkflow(ctx, req)
}

func (f *flakyTemporal) SignalWorkflow(ctx context.Context, id, run, name string, arg any) error {
	if f.down.Load() {
		return errEngineDown
	}
	return f.Client.SignalWorkflow(ctx, id, run, name, arg)
}

// TestLastKnownWhileEngineDown: while Temporal does not answer, the app
// list and an app read before answer their last known state, marked stale
// in the body and by a Warning; a write, and an app not read before,
// answer the engine's 503; once it answers, nothing is stale.
func TestLastKnownWhileEngineDown(t *testing.T) {
	en := newEnv(t)
	waitIndexed(t, en)
	app := runningTeamApp.Defaulted()
	flaky := &flakyTemporal{Client: bed.temporal, view: workflows.AppView{Spec: app, Status: workflows.AppStatus{Sync: appspec.SyncSynced, Health: appspec.HealthHealthy}}}
	srv, err := New(flaky, en.srv.opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	admin := func(method, path string) response {
		t.Helper()
		return doOn(t, hs.URL, request{method: method, path: path, token: en.tokens[auth.AdminAccount]})
	}
	list, get := "/api/v1/applications?project="+teamProject, "/api/v1/applications/"+app.Name+"?project="+teamProject
	type answer struct {
		Items []AppSummary     `json:"items"`
		Stale *lastknown.Stale `json:"stale"`
		workflows.AppView
	}
	read := func(path string) (answer, string) {
		t.Helper()
		res := admin(http.MethodGet, path)
		res.wantStatus(t, http.StatusOK)
		var a answer
		res.decode(t, &a)
		return a, res.header.Get("Warning")
	}
	before := time.Now().Add(-time.Second)
	if a, w := read(list); a.Stale != nil || w != "" || len(a.Items) != 1 {
		t.Fatalf("list with the engine up: %+v, Warning %q; want one fresh row", a, w)
	}
	if a, w := read(get); a.Stale != nil || w != "" || a.Status.Sync != appspec.SyncSynced {
		t.Fatalf("get with the engine up: %+v, Warning %q; want it fresh", a.Stale, w)
	}

	flaky.down.Store(true)
	downAt := time.Now()
	for _, path := range []string{list, get} {
		a, w := read(path)
		st := a.Stale
		if st == nil || st.AsOf.Before(before) || st.AsOf.After(st.UnavailableSince) || st.UnavailableSince.Before(downAt) {
			t.Errorf("GET %s with the engine down: stale %+v; want as of the last read, before the outage began", path, st)
			continue
		}
		if !strings.HasPrefix(w, `110 - "the workflow engine is unavailable since `+st.UnavailableSince.UTC().Format(time.RFC3339)) {
			t.Errorf("GET %s with the engine down: Warning %q", path, w)
		}
	}
	if a, _ := read(list); len(a.Items) != 1 || a.Items[0].Name != app.Name {
		t.Errorf("stale list = %+v, want the app", a.Items)
	}
	if a, _ := read(get); a.Spec.Name != app.Name || a.Status.Sync != appspec.SyncSynced {
		t.Errorf("stale view = %+v, want the app as last read", a.AppView)
	}
	admin(http.MethodPost, "/api/v1/applications/"+app.Name+"/refresh?project="+teamProject).wantProblem(t, http.StatusServiceUnavailable, "", "workflow engine is unavailable")
	admin(http.MethodGet, "/api/v1/applications/"+runningDefaultApp.Name).wantProblem(t, http.StatusServiceUnavailable, "", "workflow engine is unavailable")

	flaky.down.Store(false)
	for _, path := range []string{list, get} {
		if a, w := read(path); a.Stale != nil || w != "" {
			t.Errorf("GET %s once the engine is back: stale %+v, Warning %q", path, a.Stale, w)
		}
	}
}
