package auth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v5"
)

// Cookie and header names.
const (
	// TokenCookie holds the session token for the UI (HttpOnly).
	TokenCookie = "windlass.token"
	// CSRFCookie holds the CSRF token, readable by the UI's script.
	CSRFCookie = "windlass.csrf"
	// CSRFHeader must repeat CSRFCookie on unsafe requests authenticated
	// by cookie.
	CSRFHeader = "X-CSRF-Token"
)

// wwwAuthenticate is the challenge of a 401.
const wwwAuthenticate = `Bearer realm="windlass"`

// Principal is the authenticated caller.
type Principal struct {
	// Name is the account name or the project role proj:<project>:<role>.
	Name   string   `json:"name"`
	Groups []string `json:"groups"`
	// TokenID is the token's jti.
	TokenID string `json:"tokenId"`
	// Kind is KindSession or KindAPIToken.
	Kind string `json:"kind"`
	// ExpiresAt is zero for a token that never expires.
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
	// SSO is set for the session of a user authenticated by single
	// sign-on (IssueSession): Name is not a local account.
	SSO bool `json:"sso,omitempty"`
}

type principalKey struct{}

// ContextWithPrincipal returns ctx carrying p.
func ContextWithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFromContext returns the principal Middleware stored in ctx.
func PrincipalFromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// PrincipalFrom returns the principal Middleware stored in the request's
// context.
func PrincipalFrom(c *echo.Context) (Principal, bool) {
	return PrincipalFromContext(c.Request().Context())
}

// MiddlewareOption configures Middleware.
type MiddlewareOption func(*middlewareConfig)

type middlewareConfig struct {
	skip func(c *echo.Context) bool
}

// WithSkipper lets the requests for which skip returns true through
// without authentication.
func WithSkipper(skip func(c *echo.Context) bool) MiddlewareOption {
	return func(m *middlewareConfig) { m.skip = skip }
}

// PublicPaths returns a skipper (for WithSkipper) matching routes by
// pattern: "[METHOD ]ROUTE", where ROUTE is compared with the matched
// route's registered path (c.Path(), e.g. "/api/v1/webhooks/:provider"),
// not the request URL, so that a crafted URL cannot reach a protected route
// through a public pattern; a ROUTE ending in "*" matches the routes it is a
// prefix of. For example:
//
//	auth.PublicPaths("POST /api/v1/session", "GET /healthz",
//		"/api/v1/webhooks/*", "GET /openapi.json", "GET /ui*")
//
// An unmatched request (404) is never public.
func PublicPaths(patterns ...string) func(c *echo.Context) bool {
	type pattern struct{ method, route string }
	ps := make([]pattern, 0, len(patterns))
	for _, p := range patterns {
		method, route, ok := strings.Cut(p, " ")
		if !ok {
			method, route = "", p
		}
		ps = append(ps, pattern{method: method, route: strings.TrimSpace(route)})
	}
	return func(c *echo.Context) bool {
		route := c.Path()
		if route == "" {
			return false
		}
		for _, p := range ps {
			if p.method != "" && p.method != c.Request().Method {
				continue
			}
			if prefix, ok := strings.CutSuffix(p.route, "*"); (ok && strings.HasPrefix(route, prefix)) || p.route == route {
				return true
			}
		}
		return false
	}
}

// Middleware authenticates each request: it reads a bearer token from the
// Authorization header or else the TokenCookie, verifies it (Verify) and
// stores the Principal in the request's context. No or a bad token gives
// 401 with WWW-Authenticate: Bearer; an unavailable revocation store 503.
// An unsafe request (POST, PUT, PATCH, DELETE) authenticated by cookie must
// carry CSRFHeader equal to the CSRFCookie set at login, else 403. Use it
// with Echo.Use or Group.Use (it matches routes, so not with Echo.Pre). A
// request that already has a principal passes through.
func (s *Service) Middleware(opts ...MiddlewareOption) echo.MiddlewareFunc {
	var cfg middlewareConfig
	for _, o := range opts {
		o(&cfg)
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c *echo.Context) error {
			if cfg.skip != nil && cfg.skip(c) {
				return next(c)
			}
			if _, ok := PrincipalFrom(c); ok {
				return next(c)
			}
			token, byCookie := bearerToken(c)
			if token == "" {
				return unauthenticated(c)
			}
			v, err := s.verify(c.Request().Context(), token)
			if err != nil {
				if echo.StatusCode(err) == http.StatusUnauthorized {
					c.Response().Header().Set(echo.HeaderWWWAuthenticate, wwwAuthenticate+`, error="invalid_token"`)
				}
				return err
			}
			if byCookie && unsafeMethod(c.Request().Method) && !s.csrfOK(c, v) {
				s.log.Warn(msgCSRFFailed, "user", v.Name, "method", c.Request().Method, "path", c.Request().URL.Path)
				return fail(ErrForbidden, "missing or wrong "+CSRFHeader+" header")
			}
			c.SetRequest(c.Request().WithContext(ContextWithPrincipal(c.Request().Context(), v.Principal)))
			return next(c)
		}
	}
}

// bearerToken returns the request's token and whether it came from the
// cookie. An Authorization header of another scheme is ignored.
func bearerToken(c *echo.Context) (token string, byCookie bool) {
	if scheme, tok, ok := strings.Cut(c.Request().Header.Get(echo.HeaderAuthorization), " "); ok && strings.EqualFold(scheme, "Bearer") {
		return strings.TrimSpace(tok), false
	}
	if ck, err := c.Cookie(TokenCookie); err == nil && ck.Value != "" {
		return ck.Value, true
	}
	return "", false
}

func unsafeMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return false
	}
	return true
}

// csrfToken is the CSRF token of a session: an HMAC of its jti under the
// key that signed it, so that a CSRF cookie planted by a sibling domain does
// not pass (a signed double-submit cookie).
func csrfToken(key signingKey, jti string) string {
	m := hmac.New(sha256.New, key.Secret)
	m.Write([]byte("windlass-csrf\x00" + jti))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// csrfOK checks the double submit: the header equals the cookie, and both
// are the session's CSRF token.
func (s *Service) csrfOK(c *echo.Context, v verified) bool {
	header := c.Request().Header.Get(CSRFHeader)
	ck, err := c.Cookie(CSRFCookie)
	if header == "" || err != nil {
		return false
	}
	want := csrfToken(v.key, v.TokenID)
	return subtle.ConstantTimeCompare([]byte(header), []byte(ck.Value)) == 1 &&
		subtle.ConstantTimeCompare([]byte(header), []byte(want)) == 1
}
