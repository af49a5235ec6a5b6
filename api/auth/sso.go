package auth

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"
	"github.com/labstack/echo/v5"
)

// Log messages of single sign-on.
const (
	msgSSOLoginSucceeded = "sso login succeeded"
	msgSSOLoginRefused   = "sso login refused"
	msgSSOGroupsDropped  = "sso groups dropped"
)

// maxCookieBytes bounds a session token that goes into a cookie: browsers
// drop cookies over 4096 bytes (name, value and attributes).
const maxCookieBytes = 3800

// Reserved prefixes of RBAC subjects: a name or group from an identity
// provider may not start with them.
var reservedPrefixes = []string{"role:", "proj:"}

// reservedName reports whether name belongs to Windlass rather than to an
// identity provider: a local account (bound to roles by name in the
// policy, as admin is), a role or a project role.
func (s *Service) reservedName(name string) bool {
	if _, ok := s.accounts[name]; ok {
		return true
	}
	for _, p := range reservedPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// validName reports whether name can be a subject or group: 1 to 253 bytes
// of UTF-8 without control characters.
func validName(name string) bool {
	return name != "" && len(name) <= maxUserNameBytes && utf8.ValidString(name) &&
		!strings.ContainsFunc(name, unicode.IsControl)
}

// IssueSession opens a session for a user whom single sign-on
// authenticated: the caller has verified the identity provider's ID token
// and passes its user name and groups. The session is a KindSession token
// like Login's, marked as SSO, with the same lifetime, cookies (TokenCookie
// and CSRFCookie), CSRF check, logout and revocation; it answers the token
// and its expiry for a client that keeps it (the CLI).
//
// Names from an identity provider must not take Windlass's: a subject that
// is a local account's name, or starts with "role:" or "proj:", is refused
// (403, ErrForbidden), and such groups, invalid ones and duplicates are
// dropped (and logged), so that a group "admin" or "role:admin" asserted by
// the provider grants nothing. Groups map to roles through the policy (g,
// <group>, role:x); a user in no mapped group has only policy.default.
// A session too large for a cookie (hundreds of groups) is refused (400,
// ErrInvalidArgument).
func (s *Service) IssueSession(c *echo.Context, subject string, groups []string) (token string, expiresAt time.Time, err error) {
	ip := c.RealIP()
	if !validName(subject) {
		s.log.Warn(msgSSOLoginRefused, "ip", ip, "reason", "invalid user name")
		return "", time.Time{}, fail(ErrInvalidArgument, "the identity provider sent no valid user name")
	}
	if s.reservedName(subject) {
		s.log.Warn(msgSSOLoginRefused, "user", subject, "ip", ip, "reason", "reserved name")
		return "", time.Time{}, fail(ErrForbidden,
			fmt.Sprintf("the single sign-on user %q has the name of a local account or role and may not log in", subject))
	}
	kept, dropped := s.ssoGroups(groups)
	if len(dropped) > 0 {
		s.log.Warn(msgSSOGroupsDropped, "user", subject, "groups", dropped)
	}
	tok, err := s.issueClaims(c.Request().Context(), claims{
		RegisteredClaims: jwt.RegisteredClaims{Subject: subject, ID: newTokenID()},
		Groups:           kept,
		Kind:             KindSession,
		SSO:              true,
	}, s.now().Add(s.cfg.SessionLifetime))
	if err != nil {
		return "", time.Time{}, err
	}
	if n := len(TokenCookie) + 1 + len(tok.token); n > maxCookieBytes {
		s.log.Warn(msgSSOLoginRefused, "user", subject, "ip", ip, "reason", "session too large", "groups", len(kept))
		return "", time.Time{}, fail(ErrInvalidArgument, fmt.Sprintf(
			"the session of %s with %d groups would be %d bytes, too large for a cookie; limit the groups the identity provider sends",
			subject, len(kept), n))
	}
	s.log.Info(msgSSOLoginSucceeded, "user", subject, "groups", len(kept), "ip", ip)
	s.setSessionCookies(c, tok)
	return tok.token, tok.expiresAt, nil
}

// ssoGroups splits an identity provider's groups into those a session
// may carry (valid, not reserved, each once, in order) and the others.
func (s *Service) ssoGroups(groups []string) (kept, dropped []string) {
	kept = []string{}
	for _, g := range groups {
		switch {
		case !validName(g) || s.reservedName(g):
			dropped = append(dropped, g)
		case !slices.Contains(kept, g):
			kept = append(kept, g)
		}
	}
	return kept, dropped
}
