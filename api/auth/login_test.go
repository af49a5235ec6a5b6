package auth

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/bcrypt"

	"github.com/windlass-cd/windlass/internal/secretstore"
)

func TestLogin(t *testing.T) {
	en := newEnv(t)
	type result struct {
		Status  int
		Message string
		Cookies []string
	}
	tests := []struct {
		name string
		body string
		want result
	}{
		{"ok", loginBody("alice", alicePassword), result{Status: http.StatusOK, Cookies: []string{TokenCookie, CSRFCookie}}},
		{"admin", loginBody(AdminAccount, en.adminPassword), result{Status: http.StatusOK, Cookies: []string{TokenCookie, CSRFCookie}}},
		{"wrong password", loginBody("alice", "not-her-password"), result{Status: http.StatusUnauthorized, Message: "invalid user name or password"}},
		{"unknown user", loginBody("mallory", alicePassword), result{Status: http.StatusUnauthorized, Message: "invalid user name or password"}},
		{"disabled account", loginBody("bob", bobPassword), result{Status: http.StatusForbidden, Message: "account bob is disabled"}},
		{"disabled account, wrong password", loginBody("bob", "guess"), result{Status: http.StatusUnauthorized, Message: "invalid user name or password"}},
		{"account without a password", loginBody("ci", "whatever-it-is"), result{Status: http.StatusUnauthorized, Message: "invalid user name or password"}},
		{"empty password", loginBody("ci", ""), result{Status: http.StatusBadRequest, Message: "username and password are required"}},
		{"not JSON", "username=alice", result{Status: http.StatusBadRequest, Message: `the body must be JSON {"username": ..., "password": ...}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := en.do(request{method: http.MethodPost, path: "/api/v1/session", body: tt.body, ip: "198.51.100.7"})
			got := result{Status: rec.Code, Message: message(rec)}
			for _, c := range rec.Result().Cookies() {
				got.Cookies = append(got.Cookies, c.Name)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("login (-want +got):\n%s", d)
			}
		})
	}
}

func TestLoginNoLoginCapability(t *testing.T) {
	en := newEnv(t)
	// carol's capabilities without login: a configuration change.
	cfg := Config{BcryptCost: bcrypt.MinCost, Accounts: []AccountConfig{{Name: "carol", Enabled: true, Capabilities: []string{CapabilityAPIKey}}}}
	other := newEnvOn(t, en.store, cfg, en.s.revocations)
	rec := other.do(request{method: http.MethodPost, path: "/api/v1/session", body: loginBody("carol", carolPassword)})
	got := []any{rec.Code, message(rec)}
	want := []any{http.StatusForbidden, "account carol lacks the login capability"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("login (-want +got):\n%s", d)
	}
}

func TestLoginCookies(t *testing.T) {
	en := newEnv(t)
	rec := en.do(request{method: http.MethodPost, path: "/api/v1/session", body: loginBody("alice", alicePassword)})
	if rec.Code != http.StatusOK {
		t.Fatalf("login: %d %s", rec.Code, rec.Body)
	}
	type cookie struct {
		Name                            string
		Path                            string
		HttpOnly, Secure                bool
		SameSite                        http.SameSite
		ExpiresInSessionLifetime, Value bool
	}
	var got []cookie
	for _, c := range rec.Result().Cookies() {
		got = append(got, cookie{
			Name: c.Name, Path: c.Path, HttpOnly: c.HttpOnly, Secure: c.Secure, SameSite: c.SameSite,
			ExpiresInSessionLifetime: c.Expires.Sub(en.clock.Now()).Round(time.Hour) == DefaultSessionLifetime,
			Value:                    c.Value != "",
		})
	}
	want := []cookie{
		{Name: TokenCookie, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, ExpiresInSessionLifetime: true, Value: true},
		{Name: CSRFCookie, Path: "/", SameSite: http.SameSiteStrictMode, ExpiresInSessionLifetime: true, Value: true},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("cookies (-want +got):\n%s", d)
	}
	if cc := rec.Header().Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control = %q, want no-store", cc)
	}

	// Secure over TLS (auto), and always when configured.
	for _, mode := range []SecureCookieMode{SecureCookieAuto, SecureCookieAlways} {
		cfg := Config{BcryptCost: bcrypt.MinCost, Accounts: testAccounts, SecureCookie: mode}
		other := newEnvOn(t, en.store, cfg, en.s.revocations)
		req := request{method: http.MethodPost, path: "/api/v1/session", body: loginBody("alice", alicePassword)}
		if mode == SecureCookieAuto {
			req.path = "https://windlass.example/api/v1/session" // httptest sets TLS
		}
		rec := other.do(req)
		for _, c := range rec.Result().Cookies() {
			if !c.Secure {
				t.Errorf("%s: cookie %s is not Secure", mode, c.Name)
			}
		}
	}
}

func TestLoginRateLimited(t *testing.T) {
	en := newEnv(t, withConfig(func(c *Config) {
		c.LoginRateLimit = RateLimitConfig{MaxFailuresPerUser: 3, MaxFailuresPerIP: 5, Window: time.Minute}
	}))
	login := func(user, password, ip string) (int, string) {
		rec := en.do(request{method: http.MethodPost, path: "/api/v1/session", body: loginBody(user, password), ip: ip})
		return rec.Code, rec.Header().Get("Retry-After")
	}
	var got []string
	record := func(step string, code int, retryAfter string) {
		got = append(got, step+": "+strconv.Itoa(code)+" "+retryAfter)
	}
	for i := range 3 {
		code, ra := login("alice", "wrong", "192.0.2.1")
		record("failure "+strconv.Itoa(i+1), code, ra)
	}
	code, ra := login("alice", alicePassword, "192.0.2.2")
	record("right password, other ip", code, ra)
	en.clock.Advance(30 * time.Second)
	code, ra = login("alice", alicePassword, "192.0.2.2")
	record("30s later", code, ra)
	en.clock.Advance(30 * time.Second)
	code, ra = login("alice", alicePassword, "192.0.2.2")
	record("window passed", code, ra)

	// Per address: five failures for several users block the address.
	for i, user := range []string{"carol", "carol", "mallory", "eve", "trent"} {
		code, ra := login(user, "wrong", "203.0.113.9")
		record("ip failure "+strconv.Itoa(i+1), code, ra)
	}
	code, ra = login("alice", alicePassword, "203.0.113.9")
	record("other user, same ip", code, ra)
	code, ra = login("carol", carolPassword, "192.0.2.3")
	record("carol, other ip", code, ra)

	want := []string{
		"failure 1: 401 ",
		"failure 2: 401 ",
		"failure 3: 401 ",
		"right password, other ip: 429 60",
		"30s later: 429 30",
		"window passed: 200 ",
		"ip failure 1: 401 ",
		"ip failure 2: 401 ",
		"ip failure 3: 401 ",
		"ip failure 4: 401 ",
		"ip failure 5: 401 ",
		"other user, same ip: 429 60",
		"carol, other ip: 200 ",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("logins (-want +got):\n%s", d)
	}
}

func TestFailureLimiterBounded(t *testing.T) {
	l := newFailureLimiter(time.Minute, 3)
	now := time.Now()
	for i := range 10 {
		l.fail(now, limit{key: "k" + strconv.Itoa(i), max: 2})
	}
	if got := l.size(); got != 3 {
		t.Errorf("size after 10 keys = %d, want 3 (the bound)", got)
	}
	// The least recently failed were forgotten.
	if w := l.wait(now, limit{key: "k0", max: 1}); w != 0 {
		t.Errorf("k0 still limited: %s", w)
	}
	if w := l.wait(now, limit{key: "k9", max: 1}); w != time.Minute {
		t.Errorf("k9 wait = %s, want 1m", w)
	}
	// Keys whose failures left the window go at the next failure.
	l.fail(now.Add(2*time.Minute), limit{key: "fresh", max: 2})
	if got := l.size(); got != 1 {
		t.Errorf("size after the window = %d, want 1", got)
	}
}

func TestBootstrap(t *testing.T) {
	store := &secretstore.Memory{}
	cfg := Config{BcryptCost: bcrypt.MinCost}
	first := newEnvOn(t, store, cfg, RedisRevocations{Client: redisClient(t)})
	pw := first.adminPassword
	if len(pw) < 16 {
		t.Fatalf("initial admin password has %d characters, want at least 16", len(pw))
	}
	data, err := store.Get(t.Context(), "windlass-account-admin")
	if err != nil {
		t.Fatal(err)
	}
	hash := data[passwordHashKey]
	if err := bcrypt.CompareHashAndPassword(hash, []byte(pw)); err != nil {
		t.Fatalf("stored hash is not of the returned password: %v", err)
	}
	again, err := first.s.Bootstrap(t.Context())
	if err != nil || again != "" {
		t.Errorf("second Bootstrap = %q, %v; want \"\", nil", again, err)
	}
	replica := newEnvOn(t, store, cfg, first.s.revocations)
	if replica.adminPassword != "" {
		t.Error("a replica's Bootstrap returned a password")
	}
	after, _ := store.Get(t.Context(), "windlass-account-admin")
	if d := cmp.Diff(data, after); d != "" {
		t.Errorf("Bootstrap changed the admin secret (-before +after):\n%s", d)
	}
	names, _ := store.List(t.Context(), "")
	if d := cmp.Diff([]string{"windlass-account-admin", "windlass-jwt"}, names); d != "" {
		t.Errorf("secrets (-want +got):\n%s", d)
	}
	replica.login(AdminAccount, pw)
	if strings.Contains(first.logs.String(), pw) {
		t.Error("the log holds the admin password")
	}
	if !strings.Contains(first.logs.String(), "initial admin password generated") {
		t.Error("the first start did not log that it generated the password")
	}
}

func TestSecretsNeverInResponsesOrLogs(t *testing.T) {
	en := newEnv(t)
	data, err := en.store.Get(t.Context(), "windlass-account-alice")
	if err != nil {
		t.Fatal(err)
	}
	secrets := []string{alicePassword, en.adminPassword, string(data[passwordHashKey])}
	var seen strings.Builder
	show := func(rec interface {
		Header() http.Header
	}, body string) {
		for k, v := range rec.Header() {
			seen.WriteString(k + ": " + strings.Join(v, ",") + "\n")
		}
		seen.WriteString(body + "\n")
	}
	for _, body := range []string{loginBody("alice", alicePassword), loginBody("alice", alicePassword+"x"), loginBody(alicePassword, alicePassword)} {
		rec := en.do(request{method: http.MethodPost, path: "/api/v1/session", body: body})
		show(rec, rec.Body.String())
	}
	s := en.login("alice", alicePassword)
	rec := en.do(request{method: http.MethodGet, path: "/api/v1/session/userinfo", bearer: s.token})
	show(rec, rec.Body.String())
	tok, _, err := en.s.MintToken(t.Context(), "ci", TokenOptions{Description: "deploys"})
	if err != nil {
		t.Fatal(err)
	}
	infos, _ := en.s.ListTokens(t.Context(), "")
	seen.WriteString(cmp.Diff(nil, infos))
	rec = en.do(request{method: http.MethodGet, path: "/api/v1/session/userinfo", bearer: tok})
	show(rec, rec.Body.String())
	secrets = append(secrets, tok)

	for _, secret := range secrets {
		if strings.Contains(seen.String(), secret) {
			t.Errorf("a response holds the secret %.6s…", secret)
		}
		if strings.Contains(en.logs.String(), secret) {
			t.Errorf("the log holds the secret %.6s…", secret)
		}
	}
	if strings.Contains(en.logs.String(), "user="+alicePassword) {
		t.Error("a password typed as a user name was logged")
	}
}

func TestSetPassword(t *testing.T) {
	en := newEnv(t)
	ctx := t.Context()
	as := func(name string) *Principal { return &Principal{Name: name, Kind: KindSession} }
	tests := []struct {
		name             string
		caller           *Principal
		account          string
		current, newPass string
		wantStatus       int
		loginWith        string // the password that logs account in afterwards
	}{
		{"self", nil, "alice", alicePassword, "alice-new-password", 0, "alice-new-password"},
		{"self as principal", as("alice"), "alice", "alice-new-password", "alice-newer-password", 0, "alice-newer-password"},
		{"wrong current", nil, "alice", "not-it", "alice-other-password", http.StatusUnauthorized, "alice-newer-password"},
		{"too short", nil, "alice", "alice-newer-password", "short", http.StatusBadRequest, "alice-newer-password"},
		{"too long", nil, "alice", "alice-newer-password", strings.Repeat("x", 73), http.StatusBadRequest, "alice-newer-password"},
		{"admin sets another", as(AdminAccount), "alice", en.adminPassword, "set-by-the-admin", 0, "set-by-the-admin"},
		{"admin with alice's password", as(AdminAccount), "alice", "set-by-the-admin", "alice-again-pass", http.StatusUnauthorized, "set-by-the-admin"},
		{"another sets admin", as("alice"), AdminAccount, "set-by-the-admin", "took-over-admin", http.StatusForbidden, ""},
		{"unknown account", as(AdminAccount), "mallory", en.adminPassword, "mallory-password", http.StatusNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ctx
			if tt.caller != nil {
				c = ContextWithPrincipal(ctx, *tt.caller)
			}
			err := en.s.SetPassword(c, tt.account, tt.current, tt.newPass)
			if d := cmp.Diff(tt.wantStatus, statusCode(err)); d != "" {
				t.Errorf("status (-want +got): %s (%v)", d, err)
			}
			if tt.loginWith != "" {
				en.login(tt.account, tt.loginWith)
			}
		})
	}
	en.login(AdminAccount, en.adminPassword)
}
