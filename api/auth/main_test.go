package auth

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v5"
	"github.com/redis/go-redis/v9"
	"golang.org/x/crypto/bcrypt"

	"github.com/windlass-cd/windlass/internal/secretstore"
	"github.com/windlass-cd/windlass/internal/syncbuf"
	"github.com/windlass-cd/windlass/internal/testbed"
)

// redisAddr is the test bed's Redis ($WINDLASS_TEST_REDIS_ADDR, as
// hack/test.sh sets it), or a private one started by TestMain.
var redisAddr string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	addr, stop, err := testbed.SharedRedis(ctx, "auth")
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start redis:", err)
		return 1
	}
	defer stop()
	redisAddr = addr
	return m.Run()
}

// redisClient is a client of the test Redis.
func redisClient(t *testing.T) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// clock is a settable time.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Test accounts and their passwords.
const (
	alicePassword = "alice-correct-horse"
	bobPassword   = "bob-battery-staple"
	carolPassword = "carol-no-login-here"
)

// testAccounts: alice logs in, bob is disabled, ci mints API tokens only,
// carol has both capabilities.
var testAccounts = []AccountConfig{
	{Name: "alice", Enabled: true, Capabilities: []string{CapabilityLogin}},
	{Name: "bob", Enabled: false, Capabilities: []string{CapabilityLogin, CapabilityAPIKey}},
	{Name: "ci", Enabled: true, Capabilities: []string{CapabilityAPIKey}},
	{Name: "carol", Enabled: true, Capabilities: []string{CapabilityLogin, CapabilityAPIKey}},
}

// env is a bootstrapped Service behind a real Echo server.
type env struct {
	t             *testing.T
	s             *Service
	store         *secretstore.Memory
	e             *echo.Echo
	clock         *clock
	logs          *syncbuf.Buffer
	adminPassword string
}

type envOption func(*Config, *Revocations)

func withConfig(f func(*Config)) envOption {
	return func(c *Config, _ *Revocations) { f(c) }
}

func withRevocations(r Revocations) envOption {
	return func(_ *Config, rv *Revocations) { *rv = r }
}

func newEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	cfg := Config{Accounts: testAccounts, BcryptCost: bcrypt.MinCost}
	var rev Revocations = RedisRevocations{Client: redisClient(t)}
	for _, o := range opts {
		o(&cfg, &rev)
	}
	return newEnvOn(t, &secretstore.Memory{}, cfg, rev)
}

// newEnvOn builds an env on store, as another replica would.
func newEnvOn(t *testing.T, store *secretstore.Memory, cfg Config, rev Revocations) *env {
	t.Helper()
	logs := &syncbuf.Buffer{}
	s, err := New(cfg, store, rev, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{t: time.Now()}
	s.now = clk.Now
	pw, err := s.Bootstrap(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	en := &env{t: t, s: s, store: store, clock: clk, logs: logs, adminPassword: pw}
	if pw != "" {
		asAdmin := ContextWithPrincipal(t.Context(), Principal{Name: AdminAccount})
		for name, password := range map[string]string{"alice": alicePassword, "bob": bobPassword, "carol": carolPassword} {
			if _, ok := s.accounts[name]; !ok {
				continue
			}
			if err := s.SetPassword(asAdmin, name, pw, password); err != nil {
				t.Fatalf("set password of %s: %v", name, err)
			}
		}
	}
	e := echo.New()
	e.Use(s.Middleware(WithSkipper(PublicPaths("POST /api/v1/session", "GET /healthz", "/public/*"))))
	e.GET("/healthz", func(c *echo.Context) error { return c.String(http.StatusOK, "ok") })
	e.GET("/public/*", func(c *echo.Context) error { return c.String(http.StatusOK, "public") })
	v1 := e.Group("/api/v1")
	s.RegisterRoutes(v1)
	whoami := func(c *echo.Context) error {
		p, ok := PrincipalFrom(c)
		if !ok {
			return c.String(http.StatusInternalServerError, "no principal")
		}
		return c.String(http.StatusOK, p.Name)
	}
	v1.GET("/whoami", whoami)
	v1.POST("/whoami", whoami)
	v1.DELETE("/whoami", whoami)
	en.e = e
	return en
}

// request is an HTTP request to the env's server.
type request struct {
	method, path, body string
	bearer             string
	cookies            []*http.Cookie
	header             map[string]string
	ip                 string
}

func (en *env) do(r request) *httptest.ResponseRecorder {
	en.t.Helper()
	req := httptest.NewRequest(r.method, r.path, strings.NewReader(r.body))
	if r.body != "" {
		req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	}
	if r.bearer != "" {
		req.Header.Set(echo.HeaderAuthorization, "Bearer "+r.bearer)
	}
	for _, c := range r.cookies {
		req.AddCookie(c)
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	if r.ip != "" {
		req.RemoteAddr = r.ip + ":40000"
	}
	rec := httptest.NewRecorder()
	en.e.ServeHTTP(rec, req)
	return rec
}

func loginBody(user, password string) string {
	b, _ := json.Marshal(loginRequest{Username: user, Password: password})
	return string(b)
}

// session is a logged-in session.
type session struct {
	token   string
	cookies []*http.Cookie
}

func (en *env) login(user, password string) session {
	en.t.Helper()
	rec := en.do(request{method: http.MethodPost, path: "/api/v1/session", body: loginBody(user, password)})
	if rec.Code != http.StatusOK {
		en.t.Fatalf("login %s: %d %s", user, rec.Code, rec.Body)
	}
	var resp loginResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
		en.t.Fatal(err)
	}
	return session{token: resp.Token, cookies: rec.Result().Cookies()}
}

// message is the message of an Echo error response.
func message(rec *httptest.ResponseRecorder) string {
	var m struct{ Message string }
	_ = json.Unmarshal(rec.Body.Bytes(), &m)
	return m.Message
}
