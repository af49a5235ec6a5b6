package api

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v5"

	"github.com/windlass-cd/windlass/api/rbac"
	"github.com/windlass-cd/windlass/internal/customizations"
)

// CustomizationsStatuses lists the statuses of the workers' resource
// customizations (customizations.RedisStatuses).
type CustomizationsStatuses interface {
	List(ctx context.Context) ([]customizations.WorkerStatus, error)
}

// CustomizationsView answers GET /settings/resource-customizations.
type CustomizationsView struct {
	// Workers are the workers that loaded customizations recently, by
	// name; empty when none has any.
	Workers []customizations.WorkerStatus `json:"workers"`
}

func (s *Server) customizationsRoutes(g *echo.Group) {
	g.GET("/settings/resource-customizations", s.customizationsStatus)
}

// customizationsStatus answers where each worker's Lua health and action
// scripts come from, the revision in use and why the last load failed, to
// the callers who may get every repository.
func (s *Server) customizationsStatus(c *echo.Context) error {
	if err := s.authorize(c, rbac.ResourceRepositories, rbac.ActionGet, "*"); err != nil {
		return err
	}
	out := CustomizationsView{Workers: []customizations.WorkerStatus{}}
	if s.opts.Customizations != nil {
		ws, err := s.opts.Customizations.List(c.Request().Context())
		if err != nil {
			return problem(http.StatusServiceUnavailable, "the workers' statuses cannot be read: "+err.Error()+"; try again later")
		}
		out.Workers = ws
	}
	return c.JSON(http.StatusOK, out)
}
