package sso

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"unicode"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/labstack/echo/v5"
)

// identity reads the user's name and groups from a verified ID token. The
// name is the email when the token has one that is not marked unverified,
// else the subject (sub), as in Argo CD's policies (which name users by
// email or sub). Display names and preferred_username are left out: users
// may often choose them, and could take another's name. The groups are the
// groupsClaim claim, a list of strings or one string.
func identity(idt *oidc.IDToken, groupsClaim string) (subject string, groups []string, err error) {
	var claims struct {
		Email         string `json:"email"`
		EmailVerified *bool  `json:"email_verified"`
	}
	var all map[string]json.RawMessage
	if err := idt.Claims(&claims); err != nil {
		return "", nil, fail(http.StatusUnauthorized, "the ID token's claims cannot be read", err)
	}
	if err := idt.Claims(&all); err != nil {
		return "", nil, fail(http.StatusUnauthorized, "the ID token's claims cannot be read", err)
	}
	subject = idt.Subject
	if claims.Email != "" && (claims.EmailVerified == nil || *claims.EmailVerified) {
		subject = claims.Email
	}
	if raw, ok := all[groupsClaim]; ok && string(raw) != "null" {
		var one string
		if json.Unmarshal(raw, &groups) != nil {
			if err := json.Unmarshal(raw, &one); err != nil {
				return "", nil, fail(http.StatusUnauthorized, "the ID token's "+groupsClaim+" claim is neither a string nor a list of strings")
			}
			groups = []string{one}
		}
	}
	return subject, groups, nil
}

// returnPath checks where to go after the login: a path on this server
// ("/applications/guestbook?x=1"), never another site, so that the login
// is no open redirect. Empty is "/".
func returnPath(s string) (string, error) {
	if s == "" {
		return "/", nil
	}
	bad := fail(http.StatusBadRequest, "return must be a relative path on this server, such as /applications")
	if len(s) > maxReturnBytes || !strings.HasPrefix(s, "/") || strings.HasPrefix(s, "//") ||
		strings.ContainsAny(s, `\`) || strings.ContainsFunc(s, unicode.IsControl) {
		return "", bad
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" || !strings.HasPrefix(u.Path, "/") {
		return "", bad
	}
	return s, nil
}

// decodeJSON reads at most limit bytes of the body as JSON into v.
func decodeJSON(c *echo.Context, limit int64, v any) error {
	return json.NewDecoder(io.LimitReader(c.Request().Body, limit)).Decode(v)
}
