package ghapp

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"

	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/testbed"
)

// clock is a test clock that moves only when told.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) advance(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }

func TestClaims(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		app      int64
		iss      string
		iat, exp time.Time
	}{
		{app: 1, iss: "1", iat: now.Add(-time.Minute), exp: now.Add(9 * time.Minute)},
		{app: 123456, iss: "123456", iat: now.Add(-time.Minute), exp: now.Add(9 * time.Minute)},
	}
	for _, tt := range tests {
		c := Claims(tt.app, now)
		got := []any{c.Issuer, c.IssuedAt.Time, c.ExpiresAt.Time}
		if d := cmp.Diff([]any{tt.iss, tt.iat, tt.exp}, got); d != "" {
			t.Errorf("Claims(%d) (-want +got):\n%s", tt.app, d)
		}
		if life := c.ExpiresAt.Sub(c.IssuedAt.Time); life > 10*time.Minute {
			t.Errorf("JWT lives %s, GitHub accepts at most 10m", life)
		}
	}
}

// The signed JWT verifies with the public key and carries the claims.
func TestSignJWT(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	s, err := SignJWT(key, 42, now)
	if err != nil {
		t.Fatal(err)
	}
	var c jwt.RegisteredClaims
	tok, err := jwt.ParseWithClaims(s, &c, func(*jwt.Token) (any, error) { return &key.PublicKey, nil },
		jwt.WithValidMethods([]string{"RS256"}), jwt.WithIssuedAt(), jwt.WithExpirationRequired())
	if err != nil || !tok.Valid || c.Issuer != "42" {
		t.Fatalf("parse = %v, valid %v, iss %q", err, tok != nil && tok.Valid, c.Issuer)
	}
}

func pemOf(t *testing.T, typ string, der []byte) string {
	t.Helper()
	return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
}

func TestValidate(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pkcs1 := pemOf(t, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key))
	der8, _ := x509.MarshalPKCS8PrivateKey(key)
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	derEC, _ := x509.MarshalPKCS8PrivateKey(ec)
	tests := []struct {
		name  string
		app   App
		field string
	}{
		{name: "pkcs1", app: App{AppID: 1, InstallationID: 2, PrivateKey: pkcs1}},
		{name: "pkcs8", app: App{AppID: 1, InstallationID: 2, PrivateKey: pemOf(t, "PRIVATE KEY", der8)}},
		{name: "enterprise", app: App{AppID: 1, InstallationID: 2, PrivateKey: pkcs1, EnterpriseBaseURL: "https://ghe.example/api/v3"}},
		{name: "no app", app: App{InstallationID: 2, PrivateKey: pkcs1}, field: "githubAppID"},
		{name: "no installation", app: App{AppID: 1, PrivateKey: pkcs1}, field: "githubAppInstallationID"},
		{name: "no key", app: App{AppID: 1, InstallationID: 2}, field: "githubAppPrivateKey"},
		{name: "not PEM", app: App{AppID: 1, InstallationID: 2, PrivateKey: "MIIEowIBAAKCAQEA-not-pem"}, field: "githubAppPrivateKey"},
		{name: "bad PEM body", app: App{AppID: 1, InstallationID: 2, PrivateKey: pemOf(t, "RSA PRIVATE KEY", []byte("garbage"))}, field: "githubAppPrivateKey"},
		{name: "EC key", app: App{AppID: 1, InstallationID: 2, PrivateKey: pemOf(t, "PRIVATE KEY", derEC)}, field: "githubAppPrivateKey"},
		{name: "bad base", app: App{AppID: 1, InstallationID: 2, PrivateKey: pkcs1, EnterpriseBaseURL: "ghe.example"}, field: "githubAppEnterpriseBaseUrl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			field, err := tt.app.Validate()
			if field != tt.field || (err != nil) != (tt.field != "") {
				t.Fatalf("Validate() = %q, %v; want field %q", field, err, tt.field)
			}
			if err != nil && strings.Contains(err.Error(), "MII") {
				t.Errorf("error echoes the key: %v", err)
			}
		})
	}
}

func TestAPI(t *testing.T) {
	for in, want := range map[string]string{
		"":                             DefaultAPI,
		"https://ghe.example":          "https://ghe.example/api/v3",
		"https://ghe.example/":         "https://ghe.example/api/v3",
		"https://ghe.example/api/v3/":  "https://ghe.example/api/v3",
		"http://127.0.0.1:8080/api/v3": "http://127.0.0.1:8080/api/v3",
	} {
		if got, err := API(in); err != nil || got != want {
			t.Errorf("API(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"ghe.example", "ftp://ghe.example", "https://u:p@ghe.example"} {
		if _, err := API(bad); err == nil {
			t.Errorf("API(%q) accepted", bad)
		}
	}
}

// newServer starts the token endpoint with app 7 installed as 70.
func newServer(t *testing.T, c *clock) (*testbed.GitHubApps, App) {
	t.Helper()
	gh := testbed.StartGitHubApps(testbed.GitHubAppsOptions{Now: c.now})
	t.Cleanup(gh.Close)
	key, err := gh.NewApp(7, 70)
	if err != nil {
		t.Fatal(err)
	}
	return gh, App{EnterpriseBaseURL: gh.EnterpriseBaseURL(), AppID: 7, InstallationID: 70, PrivateKey: key}
}

// A token is reused until the refresh margin before its expiry, then
// replaced; the new one is valid where the old one has expired.
func TestTokenRefresh(t *testing.T) {
	c := newClock()
	gh, app := newServer(t, c)
	tokens := NewTokens(WithClock(c.now))
	first, err := tokens.Token(t.Context(), app, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !gh.TokenValid(first) {
		t.Fatal("the server does not know the token")
	}
	c.advance(54 * time.Minute) // 6 minutes left: still used
	if again, err := tokens.Token(t.Context(), app, nil); err != nil || again != first {
		t.Fatalf("token at 54m = %v; want the cached one", err)
	}
	c.advance(2 * time.Minute) // 4 minutes left: replaced
	second, err := tokens.Token(t.Context(), app, nil)
	if err != nil || second == first {
		t.Fatalf("token at 56m = %v, same %v; want a new one", err, second == first)
	}
	c.advance(5 * time.Minute)
	if gh.TokenValid(first) || !gh.TokenValid(second) {
		t.Fatalf("after the first expired: first valid %v, second valid %v", gh.TokenValid(first), gh.TokenValid(second))
	}
	if n := gh.Exchanges(); n != 2 {
		t.Errorf("exchanges = %d, want 2", n)
	}
	// A forgotten token is replaced at once; another app has none to forget.
	other := app
	other.InstallationID = 71
	if !tokens.Forget(app) || tokens.Forget(other) {
		t.Fatal("Forget: want true for the cached token, false for another installation")
	}
	if third, err := tokens.Token(t.Context(), app, nil); err != nil || third == second || gh.Exchanges() != 3 {
		t.Fatalf("token after Forget = %v, same %v, exchanges %d; want a new one", err, third == second, gh.Exchanges())
	}
}

// Concurrent callers of an empty cache share one exchange.
func TestTokenSingleFlight(t *testing.T) {
	c := newClock()
	gh, app := newServer(t, c)
	tokens := NewTokens(WithClock(c.now))
	const n = 16
	got := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { got[i], errs[i] = tokens.Token(t.Context(), app, nil) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || got[i] != got[0] {
			t.Fatalf("caller %d: %v, same token %v", i, errs[i], got[i] == got[0])
		}
	}
	if e := gh.Exchanges(); e != 1 {
		t.Errorf("exchanges = %d, want 1", e)
	}
}

// A revoked key (401) and a wrong installation (404) are permanent
// errors that name the app and the installation, never the key.
func TestTokenRefused(t *testing.T) {
	c := newClock()
	gh, app := newServer(t, c)
	wrongInst := app
	wrongInst.InstallationID = 71
	revoked := app
	revoked.AppID = 8
	key8, err := gh.NewApp(8, 80)
	if err != nil {
		t.Fatal(err)
	}
	revoked.PrivateKey, revoked.InstallationID = key8, 80
	gh.RevokeKey(8)
	tests := []struct {
		name    string
		app     App
		want    error
		typ     string
		mention string
	}{
		{name: "revoked key", app: revoked, want: ErrRefused, typ: "GitHubAppRefused", mention: "GitHub App 8 installation 80"},
		{name: "wrong installation", app: wrongInst, want: ErrInstallationNotFound, typ: "GitHubAppInstallationNotFound", mention: "GitHub App 7 installation 71"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewTokens(WithClock(c.now)).Token(t.Context(), tt.app, nil)
			if !errors.Is(err, tt.want) || !Refused(err) || failure.TypeOf(failure.Activity(err)) != tt.typ {
				t.Fatalf("Token() = %v; want %v", err, tt.want)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.mention) {
				t.Errorf("error %q does not name %q", msg, tt.mention)
			}
			body := strings.Split(strings.TrimSpace(tt.app.PrivateKey), "\n")[1]
			if strings.Contains(msg, body[:20]) || strings.Contains(msg, "PRIVATE KEY") {
				t.Errorf("error holds the key: %s", msg)
			}
		})
	}
	// A JWT signed with the wrong key is refused like a revoked one.
	other := app
	other.PrivateKey = revoked.PrivateKey
	if _, err := NewTokens(WithClock(c.now)).Token(t.Context(), other, nil); !errors.Is(err, ErrRefused) {
		t.Errorf("wrong key: %v, want %v", err, ErrRefused)
	}
}

// The server's JWT checks run on its clock: a client clock 20 minutes
// ahead signs a JWT the server sees as issued in the future.
func TestTokenClockSkew(t *testing.T) {
	c := newClock()
	_, app := newServer(t, c)
	ahead := func() time.Time { return c.now().Add(20 * time.Minute) }
	if _, err := NewTokens(WithClock(ahead)).Token(t.Context(), app, nil); !errors.Is(err, ErrRefused) {
		t.Fatalf("Token() = %v, want %v", err, ErrRefused)
	}
}

// An API that does not answer is a retryable error.
func TestTokenUnreachable(t *testing.T) {
	c := newClock()
	gh, app := newServer(t, c)
	gh.Close()
	_, err := NewTokens(WithClock(c.now)).Token(t.Context(), app, nil)
	if err == nil || Refused(err) || failure.TypeOf(failure.Activity(err)) != "" {
		t.Fatalf("Token() = %v; want a retryable error", err)
	}
}

func TestAppStringHidesKey(t *testing.T) {
	a := App{AppID: 1, InstallationID: 2, PrivateKey: "-----BEGIN RSA PRIVATE KEY-----\nsecret\n"}
	if s := a.String() + a.LogValue().String(); strings.Contains(s, "secret") {
		t.Fatalf("%s", s)
	}
}
