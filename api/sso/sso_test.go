package sso

import (
	"crypto"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
	"github.com/google/go-cmp/cmp"
	"github.com/labstack/echo/v5"
	"golang.org/x/oauth2"

	"github.com/windlass-cd/windlass/internal/dexserver"
	"github.com/windlass-cd/windlass/internal/dexserver/dextest"
)

// TestBrowserLogin drives the whole redirect flow against the real Dex:
// login → Dex's password form → approval → callback → session → the return
// path.
func TestBrowserLogin(t *testing.T) {
	b := newBed(t)
	br := dextest.NewBrowser(janeEmail, userPassword)
	page := b.login(br, "/applications/guestbook?tab=tree")
	if page.Status != http.StatusSeeOther || page.Location().String() != b.base+"/applications/guestbook?tab=tree" {
		t.Fatalf("the login ended with %d at %s (Location %s): %.300s", page.Status, page.URL, page.Header.Get("Location"), page.Body)
	}
	if d := cmp.Diff([]issued{{Subject: janeEmail, Groups: janeGroups}}, b.sessions.issued()); d != "" {
		t.Errorf("sessions (-want +got):\n%s", d)
	}

	// The redirect to Dex asks for a code with PKCE S256, a nonce and a
	// state, for the web client and its callback.
	auth := page.Visited[1]
	q := auth.Query()
	if auth.Path != dexserver.Path+"/auth" {
		t.Fatalf("the login went to %s, not Dex's /auth", auth)
	}
	for k, want := range map[string]string{
		"client_id": dexserver.WebClientID, "redirect_uri": b.base + "/api/v1" + PathCallback,
		"response_type": "code", "code_challenge_method": "S256", "scope": strings.Join(DefaultScopes, " "),
	} {
		if q.Get(k) != want {
			t.Errorf("%s = %q, want %q", k, q.Get(k), want)
		}
	}
	for _, k := range []string{"code_challenge", "nonce", "state"} {
		if len(q.Get(k)) < 20 {
			t.Errorf("%s = %q: missing or short", k, q.Get(k))
		}
	}
	if q.Has("code_verifier") || strings.Contains(auth.String(), clientSecret) {
		t.Error("the redirect carries the verifier or the client secret")
	}
	if !slices.ContainsFunc(page.Visited, func(u *url.URL) bool { return u.Path == dexserver.Path+"/approval" }) {
		t.Error("the login did not pass Dex's approval page")
	}

	// The flow cookie is gone, the flow used up: the callback cannot be
	// replayed.
	callback := page.URL
	for _, ck := range br.HTTP.Jar.Cookies(callback) {
		if ck.Name == FlowCookie {
			t.Errorf("the flow cookie is still set: %v", ck)
		}
	}
	if res := b.get(br, callback.RequestURI()); res.StatusCode != http.StatusBadRequest {
		t.Errorf("replayed callback: %d, want 400", res.StatusCode)
	}
	if len(b.sessions.issued()) != 1 {
		t.Error("the replayed callback issued a session")
	}
	logs := b.logs.String()
	for _, secret := range []string{clientSecret, callback.Query().Get("code"), q.Get("state"), q.Get("nonce")} {
		if strings.Contains(logs, secret) {
			t.Errorf("the log holds %q", secret)
		}
	}
}

// start begins a login with br and returns the flow's state; br holds
// the flow cookie.
func (b *bed) start(br *dextest.Browser) string {
	b.t.Helper()
	res := b.get(br, "/api/v1"+PathLogin)
	loc, err := url.Parse(res.Header.Get("Location"))
	if res.StatusCode != http.StatusFound || err != nil {
		b.t.Fatalf("login: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	return loc.Query().Get("state")
}

// toCallback logs br in at Dex and returns the callback URL that Dex
// redirects to, without requesting it.
func (b *bed) toCallback(br *dextest.Browser) *url.URL {
	b.t.Helper()
	page, err := br.Visit(b.t.Context(), b.base+"/api/v1"+PathLogin, func(u *url.URL) bool { return u.Path == "/api/v1"+PathCallback })
	if err != nil {
		b.t.Fatal(err)
	}
	if page.Status != http.StatusSeeOther && page.Status != http.StatusFound {
		b.t.Fatalf("Dex ended with %d at %s: %.300s", page.Status, page.URL, page.Body)
	}
	return page.Location()
}

// TestCallbackFromAnotherBrowser: a callback URL carried to another
// browser (login CSRF) is refused there, and still works in the browser
// that started the login.
func TestCallbackFromAnotherBrowser(t *testing.T) {
	b := newBed(t)
	jane := dextest.NewBrowser(janeEmail, userPassword)
	callback := b.toCallback(jane)
	victim := dextest.NewBrowser("", "")
	if res := b.get(victim, callback.RequestURI()); res.StatusCode != http.StatusBadRequest {
		t.Errorf("callback in another browser: %d, want 400", res.StatusCode)
	}
	if len(b.sessions.issued()) != 0 {
		t.Fatal("a session was issued in the other browser")
	}
	if res := b.get(jane, callback.RequestURI()); res.StatusCode != http.StatusSeeOther {
		t.Errorf("callback in the browser that started: %d, want 303", res.StatusCode)
	}
	if len(b.sessions.issued()) != 1 {
		t.Error("no session was issued")
	}
}

// TestCallbackRefused: each broken callback answers 4xx and issues no
// session.
func TestCallbackRefused(t *testing.T) {
	b := newBed(t)
	tamper := func(f func(*Flow)) func(*dextest.Browser) string {
		return func(br *dextest.Browser) string {
			cb := b.toCallback(br)
			state := cb.Query().Get("state")
			flow, ok, err := b.flows.Take(t.Context(), state)
			if err != nil || !ok {
				t.Fatalf("take the flow: %v %v", ok, err)
			}
			f(&flow)
			if err := b.flows.Put(t.Context(), state, flow, time.Minute); err != nil {
				t.Fatal(err)
			}
			return cb.RequestURI()
		}
	}
	callback := "/api/v1" + PathCallback
	for _, tt := range []struct {
		name string
		// path makes the callback request in br.
		path func(br *dextest.Browser) string
		want int
	}{
		{"no state", func(*dextest.Browser) string { return callback + "?code=abc" }, http.StatusBadRequest},
		{"no flow cookie", func(br *dextest.Browser) string {
			return callback + "?code=abc&state=" + url.QueryEscape(b.start(dextest.NewBrowser("", "")))
		}, http.StatusBadRequest},
		{"unknown state", func(br *dextest.Browser) string {
			u, _ := url.Parse(b.base + callback)
			br.HTTP.Jar.SetCookies(u, []*http.Cookie{{Name: FlowCookie, Value: "made-up-state", Path: callback}})
			return callback + "?code=abc&state=made-up-state"
		}, http.StatusBadRequest},
		{"error from the issuer", func(br *dextest.Browser) string {
			return callback + "?error=access_denied&error_description=denied&state=" + url.QueryEscape(b.start(br))
		}, http.StatusUnauthorized},
		{"no code", func(br *dextest.Browser) string { return callback + "?state=" + url.QueryEscape(b.start(br)) }, http.StatusBadRequest},
		{"bad code", func(br *dextest.Browser) string {
			return callback + "?code=not-a-code&state=" + url.QueryEscape(b.start(br))
		}, http.StatusUnauthorized},
		{"wrong nonce", tamper(func(f *Flow) { f.Nonce = "forged-nonce" }), http.StatusUnauthorized},
		{"wrong PKCE verifier", tamper(func(f *Flow) { f.Verifier = oauth2.GenerateVerifier() }), http.StatusUnauthorized},
	} {
		t.Run(tt.name, func(t *testing.T) {
			br := dextest.NewBrowser(janeEmail, userPassword)
			if res := b.get(br, tt.path(br)); res.StatusCode != tt.want {
				t.Errorf("status %d, want %d", res.StatusCode, tt.want)
			}
		})
	}
	if got := b.sessions.issued(); len(got) != 0 {
		t.Errorf("sessions were issued: %v", got)
	}
}

func TestLoginReturnPaths(t *testing.T) {
	b := newBed(t)
	for _, tt := range []struct {
		ret  string
		want string // the flow's return path; "" for a 400
	}{
		{"", "/"},
		{"/", "/"},
		{"/applications/guestbook?tab=tree&x=%2F", "/applications/guestbook?tab=tree&x=%2F"},
		{"/%2F%2Fevil.example", "/%2F%2Fevil.example"}, // a path on this server
		{"https://evil.example/", ""},
		{"//evil.example/x", ""},
		{"/\\evil.example", ""},
		{"\\\\evil.example", ""},
		{"javascript:alert(1)", ""},
		{"http:/evil.example", ""},
		{"evil.example", ""},
		{"/ok\r\nSet-Cookie: x=y", ""},
		{"/\t/evil.example", ""},
		{"/" + strings.Repeat("a", maxReturnBytes), ""},
	} {
		t.Run(tt.ret, func(t *testing.T) {
			br := dextest.NewBrowser("", "")
			res := b.get(br, "/api/v1"+PathLogin+"?return="+url.QueryEscape(tt.ret))
			if tt.want == "" {
				if res.StatusCode != http.StatusBadRequest || res.Header.Get("Location") != "" {
					t.Errorf("status %d, Location %q; want 400", res.StatusCode, res.Header.Get("Location"))
				}
				return
			}
			loc, _ := url.Parse(res.Header.Get("Location"))
			if res.StatusCode != http.StatusFound || !strings.HasPrefix(loc.String(), b.dex.Issuer()+"/auth?") {
				t.Fatalf("status %d, Location %s", res.StatusCode, loc)
			}
			f, ok, err := b.flows.Take(t.Context(), loc.Query().Get("state"))
			if err != nil || !ok || f.Return != tt.want {
				t.Errorf("flow %+v %v %v, want return %q", f, ok, err, tt.want)
			}
		})
	}
}

// serve sends a request to h's routes.
func serve(h *Handler, method, path, contentType, body string) *httptest.ResponseRecorder {
	e := echo.New()
	h.RegisterRoutes(e.Group("/api/v1"))
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set(echo.HeaderContentType, contentType)
	}
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	return rec
}

func tokenBody(raw string) string {
	b, _ := json.Marshal(tokenRequest{IDToken: raw})
	return string(b)
}

// deviceToken is a fresh ID token of the CLI's client for jane, from the
// device flow.
func (b *bed) deviceToken() string {
	b.t.Helper()
	raw, err := dextest.DeviceLogin(b.t.Context(), dextest.NewBrowser(janeEmail, userPassword), b.dex.Issuer(), dexserver.CLIClientID)
	if err != nil {
		b.t.Fatal(err)
	}
	return raw
}

// TestTokenExchange: the CLI's ID token from the device flow gives a
// session, once.
func TestTokenExchange(t *testing.T) {
	b := newBed(t)
	raw := b.deviceToken()
	rec := serve(b.h, http.MethodPost, "/api/v1"+PathToken, echo.MIMEApplicationJSON, tokenBody(raw))
	var got tokenResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != http.StatusOK || got.Token != "session-of-"+janeEmail {
		t.Fatalf("exchange: %d %s", rec.Code, rec.Body)
	}
	if d := cmp.Diff([]issued{{Subject: janeEmail, Groups: janeGroups}}, b.sessions.issued()); d != "" {
		t.Errorf("sessions (-want +got):\n%s", d)
	}
	for _, tt := range []struct {
		name, contentType, body string
		want                    int
	}{
		{"the same token again", echo.MIMEApplicationJSON, tokenBody(raw), http.StatusUnauthorized},
		{"not JSON", echo.MIMETextPlain, raw, http.StatusUnsupportedMediaType},
		{"no token", echo.MIMEApplicationJSON, `{}`, http.StatusBadRequest},
		{"garbage", echo.MIMEApplicationJSON, tokenBody("not.a.token"), http.StatusUnauthorized},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if rec := serve(b.h, http.MethodPost, "/api/v1"+PathToken, tt.contentType, tt.body); rec.Code != tt.want {
				t.Errorf("status %d, want %d: %s", rec.Code, tt.want, rec.Body)
			}
		})
	}
	if len(b.sessions.issued()) != 1 {
		t.Error("a refused exchange issued a session")
	}
}

// forge re-signs raw's claims under another header: alg none (no
// signature), or HS256 keyed with the client secret (the algorithm
// confusion attack).
func forge(t *testing.T, raw, alg string) string {
	t.Helper()
	parts := strings.Split(raw, ".")
	header, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		t.Fatal(err)
	}
	var h map[string]any
	if err := json.Unmarshal(header, &h); err != nil {
		t.Fatal(err)
	}
	h["alg"] = alg
	hb, _ := json.Marshal(h)
	input := base64.RawURLEncoding.EncodeToString(hb) + "." + parts[1]
	if alg == "none" {
		return input + "."
	}
	m := hmac.New(sha256.New, []byte(clientSecret))
	m.Write([]byte(input))
	return input + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// withClaim changes one claim of raw, keeping the signature.
func withClaim(t *testing.T, raw, claim string, v any) string {
	t.Helper()
	parts := strings.Split(raw, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(payload, &c); err != nil {
		t.Fatal(err)
	}
	c[claim] = v
	pb, _ := json.Marshal(c)
	parts[1] = base64.RawURLEncoding.EncodeToString(pb)
	return strings.Join(parts, ".")
}

// TestTokenRefused: ID tokens that are expired, too old, for another
// audience, forged or tampered with give 401 and no session.
func TestTokenRefused(t *testing.T) {
	b := newBed(t)
	// webAudience accepts only the web client's tokens at /sso/token.
	webAudience, err := New(Config{Issuer: b.dex.Issuer(), ClientID: dexserver.WebClientID, CLIClientID: dexserver.WebClientID,
		RedirectURL: b.base + "/api/v1" + PathCallback, HTTPClient: b.dex.Client()}, b.sessions, b.flows, nil)
	if err != nil {
		t.Fatal(err)
	}
	later := func(d time.Duration) func() time.Time { return func() time.Time { return time.Now().Add(d) } }
	for _, tt := range []struct {
		name  string
		h     *Handler
		now   func() time.Time
		token func(raw string) string
		want  string // in the message
	}{
		{"expired", b.h, later(dexserver.IDTokenLifetime + time.Hour), nil, "expired"},
		{"too old to exchange", b.h, later(DefaultMaxTokenAge + time.Minute), nil, "log in again"},
		{"wrong audience", webAudience, nil, nil, "audience"},
		{"alg none", b.h, nil, func(raw string) string { return forge(t, raw, "none") }, "invalid ID token"},
		{"alg HS256 with the client secret", b.h, nil, func(raw string) string { return forge(t, raw, "HS256") }, "invalid ID token"},
		{"another user", b.h, nil, func(raw string) string { return withClaim(t, raw, "email", "boss@example.com") }, "invalid ID token"},
		{"more groups", b.h, nil, func(raw string) string { return withClaim(t, raw, "groups", []string{"root"}) }, "invalid ID token"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			raw := b.deviceToken()
			if tt.token != nil {
				raw = tt.token(raw)
			}
			if tt.now != nil {
				tt.h.now = tt.now
				defer func() { tt.h.now = time.Now }()
			}
			rec := serve(tt.h, http.MethodPost, "/api/v1"+PathToken, echo.MIMEApplicationJSON, tokenBody(raw))
			if rec.Code != http.StatusUnauthorized || !strings.Contains(rec.Body.String(), tt.want) {
				t.Errorf("status %d: %s; want 401 with %q", rec.Code, rec.Body, tt.want)
			}
		})
	}
	if got := b.sessions.issued(); len(got) != 0 {
		t.Errorf("sessions were issued: %v", got)
	}
}

func TestConfigRoute(t *testing.T) {
	b := newBed(t)
	rec := serve(b.h, http.MethodGet, "/api/v1"+PathConfig, "", "")
	var got configView
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("config: %d %s", rec.Code, rec.Body)
	}
	want := configView{Enabled: true, Name: "Dex", LoginURL: "/api/v1" + PathLogin, Issuer: b.dex.Issuer(), CLIClientID: dexserver.CLIClientID}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("config (-want +got):\n%s", d)
	}
	if strings.Contains(rec.Body.String(), clientSecret) {
		t.Error("the config shows the client secret")
	}
}

// TestDisabled: without single sign-on, the config says so and the other
// routes answer 404.
func TestDisabled(t *testing.T) {
	h := Disabled()
	if rec := serve(h, http.MethodGet, "/api/v1"+PathConfig, "", ""); rec.Code != http.StatusOK || strings.TrimSpace(rec.Body.String()) != `{"enabled":false}` {
		t.Errorf("config: %d %s", rec.Code, rec.Body)
	}
	for _, r := range []struct{ method, path string }{
		{http.MethodGet, PathLogin}, {http.MethodGet, PathCallback + "?state=x&code=y"}, {http.MethodPost, PathToken},
	} {
		if rec := serve(h, r.method, "/api/v1"+r.path, echo.MIMEApplicationJSON, `{"idToken": "x"}`); rec.Code != http.StatusNotFound {
			t.Errorf("%s %s: %d, want 404", r.method, r.path, rec.Code)
		}
	}
}

// TestIssuerUnreachable: the API starts without the issuer; a login then
// answers 503, and succeeds once the issuer is there.
func TestIssuerUnreachable(t *testing.T) {
	b := newBed(t)
	h, err := New(Config{Issuer: "http://127.0.0.1:1/api/dex", ClientID: "windlass", RedirectURL: "http://127.0.0.1:1/api/v1/sso/callback"},
		b.sessions, b.flows, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rec := serve(h, http.MethodGet, "/api/v1"+PathLogin, "", ""); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("login: %d, want 503: %s", rec.Code, rec.Body)
	}
	h.cfg.Issuer, h.cfg.HTTPClient = b.dex.Issuer(), b.dex.Client()
	if rec := serve(h, http.MethodGet, "/api/v1"+PathLogin, "", ""); rec.Code != http.StatusFound {
		t.Errorf("login once the issuer is there: %d, want 302: %s", rec.Code, rec.Body)
	}
}

func TestConfigValidate(t *testing.T) {
	ok := Config{Issuer: "https://dex.example.com", ClientID: "windlass", RedirectURL: "https://windlass.example.com/api/v1/sso/callback"}
	for _, tt := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"valid", func(*Config) {}, ""},
		{"no issuer", func(c *Config) { c.Issuer = "" }, "issuer"},
		{"issuer without scheme", func(c *Config) { c.Issuer = "dex.example.com" }, "issuer"},
		{"no client", func(c *Config) { c.ClientID = "" }, "client ID"},
		{"relative redirect", func(c *Config) { c.RedirectURL = "/api/v1/sso/callback" }, "redirect URL"},
		{"negative TTL", func(c *Config) { c.FlowTTL = -time.Second }, "negative"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.mod(&c)
			err := c.Validate()
			if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("Validate = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestIdentity reads the user name and groups from ID tokens signed here
// (claims Dex would not send).
func TestIdentity(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const issuer = "https://idp.example.com"
	v := oidc.NewVerifier(issuer, &oidc.StaticKeySet{PublicKeys: []crypto.PublicKey{&key.PublicKey}}, &oidc.Config{ClientID: "windlass"})
	for _, tt := range []struct {
		name    string
		claims  map[string]any
		claim   string
		subject string
		groups  []string
		fails   bool
	}{
		{"email", map[string]any{"email": "jane@example.com", "groups": []string{"a", "b"}}, "", "jane@example.com", []string{"a", "b"}, false},
		{"verified email", map[string]any{"email": "jane@example.com", "email_verified": true}, "", "jane@example.com", nil, false},
		{"unverified email", map[string]any{"email": "jane@example.com", "email_verified": false, "name": "boss@example.com"}, "", "user-1", nil, false},
		{"no email", map[string]any{"preferred_username": "admin", "name": "Jane"}, "", "user-1", nil, false},
		{"one group as a string", map[string]any{"groups": "ops"}, "", "user-1", []string{"ops"}, false},
		{"groups null", map[string]any{"groups": nil}, "", "user-1", nil, false},
		{"another claim", map[string]any{"groups": []string{"a"}, "roles": []string{"r"}}, "roles", "user-1", []string{"r"}, false},
		{"groups of numbers", map[string]any{"groups": []int{1}}, "", "", nil, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := map[string]any{"iss": issuer, "aud": "windlass", "sub": "user-1", "exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix()}
			maps.Copy(c, tt.claims)
			payload, _ := json.Marshal(c)
			sig, err := signer.Sign(payload)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := sig.CompactSerialize()
			idt, err := v.Verify(t.Context(), raw)
			if err != nil {
				t.Fatal(err)
			}
			claim := tt.claim
			if claim == "" {
				claim = DefaultGroupsClaim
			}
			subject, groups, err := identity(idt, claim)
			if tt.fails != (err != nil) || subject != tt.subject || !slices.Equal(groups, tt.groups) {
				t.Errorf("identity = %q %v %v, want %q %v (fails: %v)", subject, groups, err, tt.subject, tt.groups, tt.fails)
			}
		})
	}
}

// A browser whose callback fails lands on the UI's login page with the
// reason, not on a JSON document.
func TestCallbackRefusedBrowser(t *testing.T) {
	b := newBed(t)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, b.base+"/api/v1"+PathCallback+"?code=abc", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8")
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	want := LoginPage + "?error=" + url.QueryEscape("the callback has no state")
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != want {
		t.Fatalf("status %d, Location %q; want 303 to %q", res.StatusCode, res.Header.Get("Location"), want)
	}
	if got := b.sessions.issued(); len(got) != 0 {
		t.Errorf("sessions were issued: %v", got)
	}
}
