package auth

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"
	"github.com/labstack/echo/v5"
)

// ssoPath is the test route that calls IssueSession with the body's
// subject and groups, as api/sso does after verifying an ID token.
const ssoPath = "/public/sso"

type ssoRequest struct {
	Subject string   `json:"subject"`
	Groups  []string `json:"groups"`
}

// withSSORoute adds the ssoPath route to en.
func (en *env) withSSORoute() *env {
	en.e.POST(ssoPath, func(c *echo.Context) error {
		var req ssoRequest
		if err := json.NewDecoder(c.Request().Body).Decode(&req); err != nil {
			return err
		}
		token, exp, err := en.s.IssueSession(c, req.Subject, req.Groups)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, loginResponse{Token: token, ExpiresAt: exp})
	})
	return en
}

// ssoLogin issues a session through IssueSession.
func (en *env) ssoLogin(subject string, groups ...string) (session, int) {
	en.t.Helper()
	b, _ := json.Marshal(ssoRequest{Subject: subject, Groups: groups})
	rec := en.do(request{method: http.MethodPost, path: ssoPath, body: string(b)})
	if rec.Code != http.StatusOK {
		return session{}, rec.Code
	}
	var resp loginResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
		en.t.Fatal(err)
	}
	return session{token: resp.Token, cookies: rec.Result().Cookies()}, rec.Code
}

// TestIssueSession: an SSO session works like a password session (bearer,
// cookies with CSRF, userinfo, logout) and carries the kept groups.
func TestIssueSession(t *testing.T) {
	en := newEnv(t).withSSORoute()
	s, code := en.ssoLogin("jane@example.com", "windlass-admins", "admin", "role:admin", "proj:team-a:ci", "windlass-admins", "", "bad\ngroup", "devs")
	if code != http.StatusOK {
		t.Fatalf("IssueSession: %d", code)
	}
	rec := en.do(request{method: http.MethodGet, path: "/api/v1/session/userinfo", bearer: s.token})
	var info userInfo
	if err := json.Unmarshal(rec.Body.Bytes(), &info); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("userinfo: %d %s", rec.Code, rec.Body)
	}
	want := userInfo{Name: "jane@example.com", Groups: []string{"windlass-admins", "devs"}, Kind: KindSession, ExpiresAt: info.ExpiresAt, SSO: true}
	if d := cmp.Diff(want, info); d != "" {
		t.Errorf("userinfo (-want +got):\n%s", d)
	}
	if got := info.ExpiresAt.Sub(en.clock.Now()).Round(time.Hour); got != DefaultSessionLifetime {
		t.Errorf("session lifetime %s, want %s", got, DefaultSessionLifetime)
	}
	logs := en.logs.String()
	for _, w := range []string{msgSSOGroupsDropped, msgSSOLoginSucceeded} {
		if !strings.Contains(logs, w) {
			t.Errorf("the log has no %q:\n%s", w, logs)
		}
	}
	if strings.Contains(logs, s.token) {
		t.Error("the log holds the session token")
	}

	// The cookies are Login's: the unsafe request needs the CSRF header.
	var csrf string
	names := []string{}
	for _, c := range s.cookies {
		names = append(names, c.Name)
		if c.Name == CSRFCookie {
			csrf = c.Value
		}
	}
	if d := cmp.Diff([]string{TokenCookie, CSRFCookie}, names); d != "" {
		t.Errorf("cookies (-want +got):\n%s", d)
	}
	if rec := en.do(request{method: http.MethodPost, path: "/api/v1/whoami", cookies: s.cookies}); rec.Code != http.StatusForbidden {
		t.Errorf("cookie POST without CSRF header: %d, want 403", rec.Code)
	}
	rec = en.do(request{method: http.MethodPost, path: "/api/v1/whoami", cookies: s.cookies, header: map[string]string{CSRFHeader: csrf}})
	if rec.Code != http.StatusOK || rec.Body.String() != "jane@example.com" {
		t.Errorf("cookie POST with CSRF header: %d %s", rec.Code, rec.Body)
	}

	// Logout revokes it.
	if rec := en.do(request{method: http.MethodDelete, path: "/api/v1/session", bearer: s.token}); rec.Code != http.StatusNoContent {
		t.Fatalf("logout: %d %s", rec.Code, rec.Body)
	}
	if rec := en.do(request{method: http.MethodGet, path: "/api/v1/whoami", bearer: s.token}); rec.Code != http.StatusUnauthorized {
		t.Errorf("after logout: %d, want 401", rec.Code)
	}
}

func TestIssueSessionRefuses(t *testing.T) {
	en := newEnv(t).withSSORoute()
	many := make([]string, 300)
	for i := range many {
		many[i] = fmt.Sprintf("org:team-with-a-long-name-%03d", i)
	}
	for _, tt := range []struct {
		name    string
		subject string
		groups  []string
		want    int
	}{
		{"no name", "", nil, http.StatusBadRequest},
		{"control character", "jane\n@example.com", nil, http.StatusBadRequest},
		{"too long", strings.Repeat("j", 254), nil, http.StatusBadRequest},
		{"local account", "alice", nil, http.StatusForbidden},
		{"admin", AdminAccount, nil, http.StatusForbidden},
		{"role", "role:admin", nil, http.StatusForbidden},
		{"project role", "proj:team-a:ci", nil, http.StatusForbidden},
		{"too many groups for a cookie", "jane@example.com", many, http.StatusBadRequest},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, code := en.ssoLogin(tt.subject, tt.groups...)
			if code != tt.want {
				t.Errorf("status %d, want %d", code, tt.want)
			}
			if s.token != "" || len(s.cookies) != 0 {
				t.Error("a refused login set a session")
			}
		})
	}
}

// TestVerifySSOClaims: the sso claim lets a session without an account
// through, but never for a reserved name nor an API token.
func TestVerifySSOClaims(t *testing.T) {
	en := newEnv(t)
	now := en.clock.Now()
	key, err := en.s.keys.current(t.Context(), now)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, subject, kind string
		sso                 bool
		want                int
	}{
		{"sso session", "jane@example.com", KindSession, true, http.StatusOK},
		{"the same without the claim", "jane@example.com", KindSession, false, http.StatusUnauthorized},
		{"sso session of a local account", "alice", KindSession, true, http.StatusUnauthorized},
		{"sso session of admin", AdminAccount, KindSession, true, http.StatusUnauthorized},
		{"sso session of a role", "role:admin", KindSession, true, http.StatusUnauthorized},
		{"sso API token", "jane@example.com", KindAPIToken, true, http.StatusUnauthorized},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := validClaims(now)
			c.Subject, c.Kind, c.SSO = tt.subject, tt.kind, tt.sso
			tok := signed(t, jwt.SigningMethodHS256, key.ID, key.Secret, c)
			if rec := en.do(request{method: http.MethodGet, path: "/api/v1/whoami", bearer: tok}); rec.Code != tt.want {
				t.Errorf("status %d, want %d: %s", rec.Code, tt.want, rec.Body)
			}
		})
	}
}
