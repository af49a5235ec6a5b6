package api

import (
	"net/http"

	"github.com/labstack/echo/v5"

	"github.com/windlass-cd/windlass/api/auth"
	"github.com/windlass-cd/windlass/api/rbac"
)

// subject is the caller, as RBAC sees it.
func subject(c *echo.Context) (rbac.Subject, auth.Principal) {
	p, _ := auth.PrincipalFrom(c)
	return rbac.Subject{Name: p.Name, Groups: p.Groups}, p
}

// authorize answers 403 unless the caller may do action on resource
// object. The middleware has already answered 401 for anonymous callers.
func (s *Server) authorize(c *echo.Context, resource, action, object string) error {
	sub, _ := subject(c)
	if s.opts.RBAC.Enforce(sub, resource, action, object) {
		return nil
	}
	return problem(http.StatusForbidden, "permission denied: "+resource+", "+action+", "+object)
}

// allowed reports whether the caller may do action on resource object.
func (s *Server) allowed(c *echo.Context, resource, action, object string) bool {
	return s.authorize(c, resource, action, object) == nil
}

// initiator names the caller in operation records.
func initiator(c *echo.Context) string {
	if _, p := subject(c); p.Name != "" {
		return p.Name
	}
	return "api"
}
