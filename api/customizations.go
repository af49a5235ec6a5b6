package api

import (
	"context"
	"encoding/json"
	"io"
	"net/http"

	"github.com/labstack/echo/v5"

	"github.com/windlass-cd/windlass/api/rbac"
	"github.com/windlass-cd/windlass/internal/customizations"
	"github.com/windlass-cd/windlass/internal/settings"
)

// CustomizationsStatuses lists the statuses of the workers' resource
// customizations (customizations.RedisStatuses).
type CustomizationsStatuses interface {
	List(ctx context.Context) ([]customizations.WorkerStatus, error)
}

// CustomizationsView answers GET /settings/resource-customizations.
type CustomizationsView struct {
	// Setting is the source set through the API (RepoURL "" when none);
	// a worker started with --resource-customizations flags ignores it.
	Setting settings.CustomizationsSource `json:"setting"`
	// Workers are the workers that loaded customizations recently, by
	// name; empty when none has any.
	Workers []customizations.WorkerStatus `json:"workers"`
}

func (s *Server) customizationsRoutes(g *echo.Group) {
	g.GET("/settings/resource-customizations", s.customizationsStatus)
	g.PUT("/settings/resource-customizations", s.setCustomizations)
}

// customizationsStatus answers where each worker's Lua health and action
// scripts come from, the revision in use and why the last load failed, to
// the callers who may get every repository.
func (s *Server) customizationsStatus(c *echo.Context) error {
	if err := s.authorize(c, rbac.ResourceRepositories, rbac.ActionGet, "*"); err != nil {
		return err
	}
	out := CustomizationsView{Workers: []customizations.WorkerStatus{}}
	set, err := s.opts.Settings.Customizations(c.Request().Context())
	if err != nil {
		return problem(http.StatusServiceUnavailable, "the settings cannot be read: "+err.Error()+"; try again later")
	}
	out.Setting = set
	if s.opts.Customizations != nil {
		ws, err := s.opts.Customizations.List(c.Request().Context())
		if err != nil {
			return problem(http.StatusServiceUnavailable, "the workers' statuses cannot be read: "+err.Error()+"; try again later")
		}
		out.Workers = ws
	}
	return c.JSON(http.StatusOK, out)
}

// maxCustomizationsBody bounds the PUT body.
const maxCustomizationsBody = 64 << 10

// setCustomizations sets the Git source of the workers' Lua scripts (an
// empty repoURL clears it). The workers read it at their next reload.
func (s *Server) setCustomizations(c *echo.Context) error {
	if err := s.authorize(c, rbac.ResourceRepositories, rbac.ActionUpdate, "*"); err != nil {
		return err
	}
	// Unknown fields are refused: a misspelt repoURL must not clear the
	// setting.
	var set settings.CustomizationsSource
	dec := json.NewDecoder(io.LimitReader(c.Request().Body, maxCustomizationsBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&set); err != nil {
		return problem(http.StatusBadRequest, "request body is not a valid customizations source ({repoURL, path, revision}): "+err.Error())
	}
	if err := set.Validate(); err != nil {
		return err
	}
	if err := s.opts.Settings.PutCustomizations(c.Request().Context(), set); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, set)
}
