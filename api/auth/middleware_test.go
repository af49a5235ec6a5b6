package auth

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func cookie(cs []*http.Cookie, name string) *http.Cookie {
	for _, c := range cs {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func TestCSRF(t *testing.T) {
	en := newEnv(t)
	s := en.login("alice", alicePassword)
	other := en.login("carol", carolPassword)
	csrf := cookie(s.cookies, CSRFCookie).Value
	tokenOnly := []*http.Cookie{cookie(s.cookies, TokenCookie)}
	planted := []*http.Cookie{cookie(s.cookies, TokenCookie), {Name: CSRFCookie, Value: "planted"}}
	othersCSRF := cookie(other.cookies, CSRFCookie).Value
	withOthers := []*http.Cookie{cookie(s.cookies, TokenCookie), {Name: CSRFCookie, Value: othersCSRF}}
	tests := []struct {
		name string
		req  request
		want int
	}{
		{"cookie POST without header", request{method: http.MethodPost, path: "/api/v1/whoami", cookies: s.cookies}, http.StatusForbidden},
		{"cookie POST with header", request{method: http.MethodPost, path: "/api/v1/whoami", cookies: s.cookies, header: map[string]string{CSRFHeader: csrf}}, http.StatusOK},
		{"cookie DELETE with wrong header", request{method: http.MethodDelete, path: "/api/v1/whoami", cookies: s.cookies, header: map[string]string{CSRFHeader: csrf + "x"}}, http.StatusForbidden},
		{"cookie POST, header without the cookie", request{method: http.MethodPost, path: "/api/v1/whoami", cookies: tokenOnly, header: map[string]string{CSRFHeader: csrf}}, http.StatusForbidden},
		{"cookie POST, planted cookie and header", request{method: http.MethodPost, path: "/api/v1/whoami", cookies: planted, header: map[string]string{CSRFHeader: "planted"}}, http.StatusForbidden},
		{"cookie POST, another session's CSRF token", request{method: http.MethodPost, path: "/api/v1/whoami", cookies: withOthers, header: map[string]string{CSRFHeader: othersCSRF}}, http.StatusForbidden},
		{"cookie GET without header", request{method: http.MethodGet, path: "/api/v1/whoami", cookies: s.cookies}, http.StatusOK},
		{"bearer POST without header", request{method: http.MethodPost, path: "/api/v1/whoami", bearer: s.token}, http.StatusOK},
		{"bearer with a cookie POST without header", request{method: http.MethodPost, path: "/api/v1/whoami", bearer: s.token, cookies: s.cookies}, http.StatusOK},
		{"cookie logout without header", request{method: http.MethodDelete, path: "/api/v1/session", cookies: s.cookies}, http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := en.do(tt.req)
			if d := cmp.Diff(tt.want, rec.Code); d != "" {
				t.Errorf("status (-want +got): %s\nbody: %s", d, rec.Body)
			}
		})
	}
}

func TestMiddlewarePublicAndMissing(t *testing.T) {
	en := newEnv(t)
	type result struct {
		Status    int
		Challenge string
		Body      string
	}
	tests := []struct {
		name string
		req  request
		want result
	}{
		{"public route", request{method: http.MethodGet, path: "/healthz"}, result{Status: 200, Body: "ok"}},
		{"public prefix", request{method: http.MethodGet, path: "/public/a/b"}, result{Status: 200, Body: "public"}},
		{"public prefix, dot-dot to a private route", request{method: http.MethodGet, path: "/public/../api/v1/whoami"}, result{Status: 200, Body: "public"}},
		{"no credentials", request{method: http.MethodGet, path: "/api/v1/whoami"}, result{Status: 401, Challenge: `Bearer realm="windlass"`, Body: `{"message":"authentication required"}`}},
		{"userinfo without credentials", request{method: http.MethodGet, path: "/api/v1/session/userinfo"}, result{Status: 401, Challenge: `Bearer realm="windlass"`, Body: `{"message":"authentication required"}`}},
		{"basic auth", request{method: http.MethodGet, path: "/api/v1/whoami", header: map[string]string{"Authorization": "Basic YWxpY2U6cHc="}}, result{Status: 401, Challenge: `Bearer realm="windlass"`, Body: `{"message":"authentication required"}`}},
		{"bad token", request{method: http.MethodGet, path: "/api/v1/whoami", bearer: "x.y.z"}, result{Status: 401, Challenge: `Bearer realm="windlass", error="invalid_token"`, Body: `{"message":"invalid token"}`}},
		{"login is public for POST only", request{method: http.MethodGet, path: "/api/v1/session"}, result{Status: 401, Challenge: `Bearer realm="windlass"`, Body: `{"message":"authentication required"}`}},
		{"unknown route", request{method: http.MethodGet, path: "/nope"}, result{Status: 401, Challenge: `Bearer realm="windlass"`, Body: `{"message":"authentication required"}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := en.do(tt.req)
			got := result{Status: rec.Code, Challenge: rec.Header().Get("WWW-Authenticate"), Body: strings.TrimSpace(rec.Body.String())}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
