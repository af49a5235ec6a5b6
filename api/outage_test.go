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
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/temporal"
	"golang.org/x/crypto/bcrypt"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/windlass-cd/windlass/api/auth"
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
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := toProblem(tt.err)
			if p.Status != http.StatusServiceUnavailable || !strings.Contains(p.Detail, tt.detail) || strings.Contains(p.Detail, "workflow service") {
				t.Errorf("toProblem(%v) = %d %q, want 503 naming %q", tt.err, p.Status, p.Detail, tt.detail)
			}
		})
	}
}
