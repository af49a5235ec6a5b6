package sso

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v5"
	"github.com/redis/go-redis/v9"
	"golang.org/x/crypto/bcrypt"

	"github.com/windlass-cd/windlass/internal/dexserver"
	"github.com/windlass-cd/windlass/internal/dexserver/dextest"
	"github.com/windlass-cd/windlass/internal/syncbuf"
	"github.com/windlass-cd/windlass/internal/testbed"
)

// redisAddr is the test bed's Redis, or a private one.
var redisAddr string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	addr, stop, err := testbed.SharedRedis(ctx, "sso")
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start redis:", err)
		return 1
	}
	defer stop()
	redisAddr = addr
	return m.Run()
}

// The Dex users of the tests. jane's groups include names Windlass keeps
// for itself, which api/auth drops (the fake sessions here keep them).
const (
	janeEmail    = "jane@example.com"
	bobEmail     = "bob@example.com"
	userPassword = "correct-horse-battery"
	// clientSecret is the web client's secret; it must never show.
	clientSecret = "web-client-secret-do-not-log"
)

var janeGroups = []string{"windlass-admins", "admin"}

// passwordHash is userPassword's bcrypt hash at Dex's minimum cost.
var passwordHash = sync.OnceValue(func() string {
	h, err := bcrypt.GenerateFromPassword([]byte(userPassword), bcrypt.DefaultCost)
	if err != nil {
		panic(err)
	}
	return string(h)
})

// issued is one IssueSession call.
type issued struct {
	Subject string
	Groups  []string
}

// fakeSessions records IssueSession calls and sets a cookie.
type fakeSessions struct {
	mu    sync.Mutex
	calls []issued
}

func (f *fakeSessions) IssueSession(c *echo.Context, subject string, groups []string) (string, time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, issued{Subject: subject, Groups: groups})
	tok := "session-of-" + subject
	c.SetCookie(&http.Cookie{Name: "windlass.token", Value: tok, Path: "/"})
	return tok, time.Now().Add(time.Hour), nil
}

func (f *fakeSessions) issued() []issued {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]issued(nil), f.calls...)
}

// bed is an HTTP server with a real Dex at /api/dex (static users jane
// and bob, approval screen on) and the Handler's routes at /api/v1, as
// the API serves them, on the test Redis.
type bed struct {
	t        *testing.T
	base     string
	dex      *dexserver.Server
	h        *Handler
	sessions *fakeSessions
	flows    RedisFlows
	logs     *syncbuf.Buffer
}

func newBed(t *testing.T, mods ...func(*Config)) *bed {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	base := "http://" + ts.Listener.Addr().String()
	skip := false
	logs := &syncbuf.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	d, err := dexserver.New(t.Context(), dexserver.Config{
		StaticPasswords: []dexserver.Password{
			{Email: janeEmail, Hash: passwordHash(), Username: "jane", Groups: janeGroups},
			{Email: bobEmail, Hash: passwordHash(), Username: "bob"},
		},
		SkipApprovalScreen: &skip,
	}, dexserver.Options{
		Issuer: base + dexserver.Path, RedirectURI: base + "/api/v1" + PathCallback, ClientSecret: clientSecret, Logger: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		Name: "Dex", Issuer: d.Issuer(), ClientID: dexserver.WebClientID, ClientSecret: clientSecret,
		CLIClientID: dexserver.CLIClientID, RedirectURL: base + "/api/v1" + PathCallback, HTTPClient: d.Client(),
	}
	for _, m := range mods {
		m(&cfg)
	}
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { _ = rdb.Close() })
	b := &bed{t: t, base: base, dex: d, sessions: &fakeSessions{}, flows: RedisFlows{Client: rdb}, logs: logs}
	b.h, err = New(cfg, b.sessions, b.flows, log)
	if err != nil {
		t.Fatal(err)
	}
	e := echo.New()
	b.h.RegisterRoutes(e.Group("/api/v1"))
	mux := http.NewServeMux()
	mux.Handle(dexserver.Path+"/", d)
	mux.Handle("/", e)
	ts.Config.Handler = mux
	ts.Start()
	t.Cleanup(ts.Close)
	return b
}

// atApp reports whether u is outside Dex and the SSO routes: where a
// browser login ends.
func (b *bed) atApp(u *url.URL) bool {
	return !strings.HasPrefix(u.Path, dexserver.Path) && !strings.HasPrefix(u.Path, "/api/v1/sso/")
}

// login runs a browser login from GET /sso/login?return=ret.
func (b *bed) login(br *dextest.Browser, ret string) *dextest.Page {
	b.t.Helper()
	page, err := br.Visit(b.t.Context(), b.base+"/api/v1"+PathLogin+"?return="+url.QueryEscape(ret), b.atApp)
	if err != nil {
		b.t.Fatal(err)
	}
	return page
}

// get requests path on the bed with br's cookies, without following.
func (b *bed) get(br *dextest.Browser, path string) *http.Response {
	b.t.Helper()
	req, err := http.NewRequestWithContext(b.t.Context(), http.MethodGet, b.base+path, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	res, err := br.HTTP.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	res.Body.Close()
	return res
}
