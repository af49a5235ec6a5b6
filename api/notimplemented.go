package api

import (
	"net/http"

	"github.com/labstack/echo/v5"

	"github.com/windlass-cd/windlass/api/rbac"
)

// notImplemented answers 501 for endpoints of the API's contract that are
// not built yet, after the usual permission check, so that clients see a
// clear error rather than a 404.
func (s *Server) notImplemented(what string) echo.HandlerFunc {
	return func(c *echo.Context) error {
		if _, err := s.appID(c, rbac.ActionGet); err != nil {
			return err
		}
		return problem(http.StatusNotImplemented, what+" is not implemented yet")
	}
}
