package auth

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/labstack/echo/v5"
)

// maxLoginBody bounds a login request's body.
const maxLoginBody = 4 << 10

// RegisterRoutes registers the session routes under g (the API mounts
// them at /api/v1):
//
//	POST   /session           Login (public: list it in PublicPaths)
//	DELETE /session           Logout
//	GET    /session/userinfo  UserInfo
//
// Logout and UserInfo carry Middleware themselves, so they authenticate
// even when g does not.
func (s *Service) RegisterRoutes(g *echo.Group) {
	g.POST("/session", s.Login)
	g.DELETE("/session", s.Logout, s.Middleware())
	g.GET("/session/userinfo", s.UserInfo, s.Middleware())
}

type loginRequest struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

type loginResponse struct {
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// Login handles POST {username, password}: it answers {token, expiresAt}
// and sets the TokenCookie and CSRFCookie. Wrong credentials give 401, a
// disabled account (or one without the login capability) 403, too many
// failures 429 with Retry-After.
func (s *Service) Login(c *echo.Context) error {
	var req loginRequest
	dec := json.NewDecoder(io.LimitReader(c.Request().Body, maxLoginBody))
	if err := dec.Decode(&req); err != nil {
		return fail(ErrInvalidArgument, "the body must be JSON {\"username\": ..., \"password\": ...}")
	}
	if req.Username == "" || req.Password == "" {
		return fail(ErrInvalidArgument, "username and password are required")
	}
	ctx := c.Request().Context()
	ip := c.RealIP()
	wait, err := s.authenticate(ctx, req.Username, req.Password, ip)
	if errors.Is(err, ErrRateLimited) {
		c.Response().Header().Set(echo.HeaderRetryAfter, retryAfter(wait))
	}
	if err != nil {
		return err
	}
	if err := s.checkSubject(req.Username, KindSession); err != nil {
		s.log.Info(msgLoginRefused, "user", req.Username, "ip", ip, "error", err)
		return err
	}
	tok, err := s.issue(ctx, req.Username, nil, KindSession, newTokenID(), s.now().Add(s.cfg.SessionLifetime))
	if err != nil {
		return err
	}
	s.log.Info(msgLoginSucceeded, "user", req.Username, "ip", ip)
	s.setSessionCookies(c, tok)
	return c.JSON(http.StatusOK, loginResponse{Token: tok.token, ExpiresAt: tok.expiresAt})
}

// setSessionCookies sets the TokenCookie and CSRFCookie of a new session,
// and keeps the answer out of caches.
func (s *Service) setSessionCookies(c *echo.Context, tok issued) {
	secure := s.secureCookies(c)
	c.SetCookie(&http.Cookie{
		Name: TokenCookie, Value: tok.token, Path: "/", Expires: tok.expiresAt,
		HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode,
	})
	c.SetCookie(&http.Cookie{
		Name: CSRFCookie, Value: csrfToken(tok.key, tok.jti), Path: "/", Expires: tok.expiresAt,
		Secure: secure, SameSite: http.SameSiteStrictMode,
	})
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
}

// Logout handles DELETE: it revokes the presented token (a session until
// it expires; an API token by deleting its record) and clears the cookies.
func (s *Service) Logout(c *echo.Context) error {
	p, err := requirePrincipal(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if p.Kind == KindAPIToken {
		if err := s.DeleteToken(ctx, p.TokenID); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
	} else if err := s.revoke(ctx, p.TokenID, p.ExpiresAt); err != nil {
		return err
	}
	s.log.Info(msgLogout, "user", p.Name, "kind", p.Kind)
	secure := s.secureCookies(c)
	for _, name := range []string{TokenCookie, CSRFCookie} {
		c.SetCookie(&http.Cookie{
			Name: name, Path: "/", MaxAge: -1, Expires: time.Unix(0, 0),
			HttpOnly: name == TokenCookie, Secure: secure, SameSite: http.SameSiteStrictMode,
		})
	}
	return c.NoContent(http.StatusNoContent)
}

type userInfo struct {
	Name      string    `json:"name"`
	Groups    []string  `json:"groups"`
	Kind      string    `json:"kind"`
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
	SSO       bool      `json:"sso,omitempty"`
}

// UserInfo handles GET: the caller's name, groups, token kind and expiry.
func (s *Service) UserInfo(c *echo.Context) error {
	p, err := requirePrincipal(c)
	if err != nil {
		return err
	}
	groups := p.Groups
	if groups == nil {
		groups = []string{}
	}
	return c.JSON(http.StatusOK, userInfo{Name: p.Name, Groups: groups, Kind: p.Kind, ExpiresAt: p.ExpiresAt, SSO: p.SSO})
}

func (s *Service) secureCookies(c *echo.Context) bool {
	switch s.cfg.SecureCookie {
	case SecureCookieAlways:
		return true
	case SecureCookieNever:
		return false
	}
	return c.IsTLS()
}

// requirePrincipal returns the request's principal, or a 401 when
// Middleware has not stored one.
func requirePrincipal(c *echo.Context) (Principal, error) {
	p, ok := PrincipalFrom(c)
	if !ok {
		return Principal{}, unauthenticated(c)
	}
	return p, nil
}

// unauthenticated challenges the client for a bearer token.
func unauthenticated(c *echo.Context) error {
	c.Response().Header().Set(echo.HeaderWWWAuthenticate, wwwAuthenticate)
	return fail(ErrUnauthenticated, "authentication required")
}
