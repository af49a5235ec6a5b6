package auth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"
	"github.com/labstack/echo/v5"
	"github.com/redis/go-redis/v9"
	"golang.org/x/crypto/bcrypt"

	"github.com/windlass-cd/windlass/internal/testbed"
)

func statusCode(err error) int { return echo.StatusCode(err) }

// validClaims are the claims of a valid session of alice.
func validClaims(now time.Time) claims {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	gen, err := RedisRevocations{Client: rdb}.Generation(context.Background())
	if err != nil {
		panic(err)
	}
	return claims{
		RevocationGen: gen,
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    Issuer,
			Subject:   "alice",
			ID:        newTokenID(),
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour)),
		},
		Kind: KindSession,
	}
}

// signed signs c with method and secret under kid ("" for no kid).
func signed(t *testing.T, method jwt.SigningMethod, kid string, secret any, c claims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(secret)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// handMade builds a JWT with any header, signed with HMAC-SHA256.
func handMade(t *testing.T, header map[string]any, c claims, secret []byte) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	input := enc(header) + "." + enc(c)
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(input))
	return input + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func TestVerifyRejects(t *testing.T) {
	en := newEnv(t)
	now := en.clock.Now()
	key, err := en.s.keys.current(t.Context(), now)
	if err != nil {
		t.Fatal(err)
	}
	with := func(f func(*claims)) claims {
		c := validClaims(now)
		f(&c)
		return c
	}
	otherSecret := []byte("0123456789abcdef0123456789abcdef")
	tests := []struct {
		name  string
		token string
		want  int
	}{
		{"valid (control)", signed(t, jwt.SigningMethodHS256, key.ID, key.Secret, validClaims(now)), http.StatusOK},
		{"alg none", signed(t, jwt.SigningMethodNone, key.ID, jwt.UnsafeAllowNoneSignatureType, validClaims(now)), http.StatusUnauthorized},
		{"alg none, hand made", handMade(t, map[string]any{"alg": "none", "kid": key.ID}, validClaims(now), key.Secret), http.StatusUnauthorized},
		{"HS512", signed(t, jwt.SigningMethodHS512, key.ID, key.Secret, validClaims(now)), http.StatusUnauthorized},
		{"RS256 header", handMade(t, map[string]any{"alg": "RS256", "typ": "JWT", "kid": key.ID}, validClaims(now), key.Secret), http.StatusUnauthorized},
		{"wrong key", signed(t, jwt.SigningMethodHS256, key.ID, otherSecret, validClaims(now)), http.StatusUnauthorized},
		{"unknown kid", signed(t, jwt.SigningMethodHS256, "0000000000000000", key.Secret, validClaims(now)), http.StatusUnauthorized},
		{"no kid", signed(t, jwt.SigningMethodHS256, "", key.Secret, validClaims(now)), http.StatusUnauthorized},
		{"expired", signed(t, jwt.SigningMethodHS256, key.ID, key.Secret, with(func(c *claims) {
			c.IssuedAt, c.NotBefore = jwt.NewNumericDate(now.Add(-3*time.Hour)), jwt.NewNumericDate(now.Add(-3*time.Hour))
			c.ExpiresAt = jwt.NewNumericDate(now.Add(-2 * time.Hour))
		})), http.StatusUnauthorized},
		{"not yet valid", signed(t, jwt.SigningMethodHS256, key.ID, key.Secret, with(func(c *claims) {
			c.NotBefore = jwt.NewNumericDate(now.Add(time.Hour))
		})), http.StatusUnauthorized},
		{"issued in the future", signed(t, jwt.SigningMethodHS256, key.ID, key.Secret, with(func(c *claims) {
			c.IssuedAt = jwt.NewNumericDate(now.Add(time.Hour))
		})), http.StatusUnauthorized},
		{"wrong issuer", signed(t, jwt.SigningMethodHS256, key.ID, key.Secret, with(func(c *claims) { c.Issuer = "argocd" })), http.StatusUnauthorized},
		{"no issuer", signed(t, jwt.SigningMethodHS256, key.ID, key.Secret, with(func(c *claims) { c.Issuer = "" })), http.StatusUnauthorized},
		{"no expiry", signed(t, jwt.SigningMethodHS256, key.ID, key.Secret, with(func(c *claims) { c.ExpiresAt = nil })), http.StatusUnauthorized},
		{"unknown kind", signed(t, jwt.SigningMethodHS256, key.ID, key.Secret, with(func(c *claims) { c.Kind = "root" })), http.StatusUnauthorized},
		{"no jti", signed(t, jwt.SigningMethodHS256, key.ID, key.Secret, with(func(c *claims) { c.ID = "" })), http.StatusUnauthorized},
		{"unknown account", signed(t, jwt.SigningMethodHS256, key.ID, key.Secret, with(func(c *claims) { c.Subject = "mallory" })), http.StatusUnauthorized},
		{"disabled account", signed(t, jwt.SigningMethodHS256, key.ID, key.Secret, with(func(c *claims) { c.Subject = "bob" })), http.StatusUnauthorized},
		{"session of an account without login", signed(t, jwt.SigningMethodHS256, key.ID, key.Secret, with(func(c *claims) { c.Subject = "ci" })), http.StatusUnauthorized},
		{"session of a project role", signed(t, jwt.SigningMethodHS256, key.ID, key.Secret, with(func(c *claims) { c.Subject = "proj:p:r" })), http.StatusUnauthorized},
		{"API token without a record", signed(t, jwt.SigningMethodHS256, key.ID, key.Secret, with(func(c *claims) {
			c.Subject, c.Kind = "ci", KindAPIToken
		})), http.StatusUnauthorized},
		{"garbage", "not.a.jwt", http.StatusUnauthorized},
		{"tampered payload", tamper(signed(t, jwt.SigningMethodHS256, key.ID, key.Secret, validClaims(now))), http.StatusUnauthorized},
	}
	type result struct {
		Status    int
		Challenge bool
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := en.do(request{method: http.MethodGet, path: "/api/v1/whoami", bearer: tt.token})
			got := result{Status: rec.Code, Challenge: strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), "Bearer ")}
			want := result{Status: tt.want, Challenge: tt.want == http.StatusUnauthorized}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("(-want +got):\n%s\nbody: %s", d, rec.Body)
			}
		})
	}
}

// tamper makes alice admin in a token's payload, keeping the signature.
func tamper(token string) string {
	parts := strings.Split(token, ".")
	b, _ := base64.RawURLEncoding.DecodeString(parts[1])
	b = []byte(strings.Replace(string(b), `"sub":"alice"`, `"sub":"admin"`, 1))
	parts[1] = base64.RawURLEncoding.EncodeToString(b)
	return strings.Join(parts, ".")
}

func kidOf(t *testing.T, token string) string {
	t.Helper()
	tok, _, err := jwt.NewParser().ParseUnverified(token, &claims{})
	if err != nil {
		t.Fatal(err)
	}
	kid, _ := tok.Header["kid"].(string)
	return kid
}

func TestKeyRotation(t *testing.T) {
	en := newEnv(t)
	replica := newEnvOn(t, en.store, en.s.cfg, en.s.revocations)
	replica.s.now = en.clock.Now
	old := en.login("alice", alicePassword)
	if err := en.s.RotateKey(t.Context()); err != nil {
		t.Fatal(err)
	}
	fresh := en.login("alice", alicePassword)
	if kidOf(t, old.token) == kidOf(t, fresh.token) {
		t.Fatalf("the token after the rotation has the old kid %s", kidOf(t, old.token))
	}
	var got []int
	for _, e := range []*env{en, replica} { // the replica learns the new kid
		for _, tok := range []string{old.token, fresh.token} {
			got = append(got, e.do(request{method: http.MethodGet, path: "/api/v1/whoami", bearer: tok}).Code)
		}
	}
	if d := cmp.Diff([]int{200, 200, 200, 200}, got); d != "" {
		t.Errorf("old and new tokens on both replicas (-want +got):\n%s", d)
	}

	// Retired keys are kept for the longest token lifetime, then dropped.
	en.clock.Advance(24 * time.Hour)
	if err := en.s.RotateKey(t.Context()); err != nil {
		t.Fatal(err)
	}
	keys, _ := en.s.keys.read(t.Context())
	if len(keys) != 3 {
		t.Errorf("%d keys a day after, want 3", len(keys))
	}
	en.clock.Advance(DefaultAPITokenMaxLifetime + leeway + time.Second)
	if err := en.s.RotateKey(t.Context()); err != nil {
		t.Fatal(err)
	}
	keys, _ = en.s.keys.read(t.Context())
	var kids []string
	for _, k := range keys {
		kids = append(kids, k.ID)
	}
	if len(keys) != 2 || keys[1].RetiredAt.IsZero() || keys[0].ID == kidOf(t, fresh.token) {
		t.Errorf("keys a year after = %v, want the new one and the one retired just now", kids)
	}
}

func TestLogout(t *testing.T) {
	en := newEnv(t)
	rdb := redisClient(t)
	s := en.login("alice", alicePassword)
	rec := en.do(request{method: http.MethodDelete, path: "/api/v1/session", bearer: s.token})
	if rec.Code != http.StatusNoContent {
		t.Fatalf("logout: %d %s", rec.Code, rec.Body)
	}
	var cleared []string
	for _, c := range rec.Result().Cookies() {
		if c.MaxAge < 0 && c.Value == "" {
			cleared = append(cleared, c.Name)
		}
	}
	if d := cmp.Diff([]string{TokenCookie, CSRFCookie}, cleared); d != "" {
		t.Errorf("cleared cookies (-want +got):\n%s", d)
	}
	p, _, err := jwt.NewParser().ParseUnverified(s.token, &claims{})
	if err != nil {
		t.Fatal(err)
	}
	jti := p.Claims.(*claims).ID
	ttl, err := rdb.TTL(t.Context(), revokedKeyPrefix+jti).Result()
	if err != nil || ttl <= 23*time.Hour || ttl > DefaultSessionLifetime+leeway {
		t.Errorf("TTL of the revocation = %s, %v; want the session's remaining lifetime", ttl, err)
	}
	for _, r := range []request{
		{method: http.MethodGet, path: "/api/v1/session/userinfo", bearer: s.token},
		{method: http.MethodGet, path: "/api/v1/whoami", cookies: s.cookies},
	} {
		rec := en.do(r)
		if got := []any{rec.Code, message(rec)}; !cmp.Equal(got, []any{http.StatusUnauthorized, "token revoked"}) {
			t.Errorf("reuse after logout = %v", got)
		}
	}
}

func TestRevocationUnavailable(t *testing.T) {
	down := redis.NewClient(&redis.Options{Addr: testbed.ClosedAddr(t), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = down.Close() })
	// The session comes from a replica that can reach the store.
	up := newEnv(t)
	s := up.login("alice", alicePassword)
	en := newEnvOn(t, up.store, Config{Accounts: testAccounts, BcryptCost: bcrypt.MinCost}, RedisRevocations{Client: down})
	for _, r := range []request{
		{method: http.MethodGet, path: "/api/v1/session/userinfo", bearer: s.token},
		{method: http.MethodDelete, path: "/api/v1/session", bearer: s.token},
		{method: http.MethodPost, path: "/api/v1/session", body: loginBody("alice", alicePassword)},
	} {
		rec := en.do(r)
		got := []any{rec.Code, rec.Header().Get("WWW-Authenticate"), strings.Contains(message(rec), "Redis is unreachable")}
		if d := cmp.Diff([]any{http.StatusServiceUnavailable, "", true}, got); d != "" {
			t.Errorf("%s %s (-want +got):\n%s", r.method, r.path, d)
		}
	}
}

func TestRedisRevocations(t *testing.T) {
	ctx := t.Context()
	rdb := redisClient(t)
	r := RedisRevocations{Client: rdb}
	live, past, forever, never := newTokenID(), newTokenID(), newTokenID(), newTokenID()
	for jti, until := range map[string]time.Time{
		live:    time.Now().Add(time.Minute),
		past:    time.Now().Add(-time.Minute),
		forever: {},
	} {
		if err := r.Revoke(ctx, jti, until); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]bool{}
	for name, jti := range map[string]string{"live": live, "past": past, "forever": forever, "never": never} {
		revoked, err := r.Revoked(ctx, jti, "")
		if err != nil {
			t.Fatal(err)
		}
		got[name] = revoked
	}
	if d := cmp.Diff(map[string]bool{"live": true, "past": false, "forever": true, "never": false}, got); d != "" {
		t.Errorf("revoked (-want +got):\n%s", d)
	}
	ttl, err := rdb.TTL(ctx, revokedKeyPrefix+live).Result()
	if err != nil || ttl <= 0 || ttl > time.Minute {
		t.Errorf("TTL = %s, %v; want at most a minute", ttl, err)
	}
	if ttl, _ := rdb.TTL(ctx, revokedKeyPrefix+forever).Result(); ttl != -1 {
		t.Errorf("TTL of a mark for ever = %s, want none (-1)", ttl)
	}
	rdb.Del(ctx, revokedKeyPrefix+forever)
}

func TestUserInfo(t *testing.T) {
	en := newEnv(t)
	s := en.login("alice", alicePassword)
	rec := en.do(request{method: http.MethodGet, path: "/api/v1/session/userinfo", bearer: s.token})
	var got map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, rec.Body)
	}
	exp := en.clock.Now().Add(DefaultSessionLifetime).UTC().Truncate(time.Second).Format(time.RFC3339)
	want := map[string]any{"name": "alice", "groups": []any{}, "kind": KindSession, "expiresAt": exp}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("userinfo (-want +got):\n%s", d)
	}
}
