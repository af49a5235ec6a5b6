package api

import (
	"net/http"

	"github.com/labstack/echo/v5"

	"github.com/windlass-cd/windlass/api/rbac"
	"github.com/windlass-cd/windlass/internal/settings"
)

// Credential templates (Argo CD's repocreds): a credential that every
// repository under a URL prefix uses unless it is registered itself.
// RBAC checks them as repositories, named by their prefix.
func (s *Server) repoCredsRoutes(g *echo.Group) {
	g.GET("/repocreds", s.listRepoCreds)
	g.POST("/repocreds", s.createRepoCreds)
	g.GET("/repocreds/:url", s.getRepoCreds)
	g.DELETE("/repocreds/:url", s.deleteRepoCreds)
}

func (s *Server) listRepoCreds(c *echo.Context) error {
	tmpls, err := s.opts.Settings.RepoCreds(c.Request().Context())
	if err != nil {
		return err
	}
	out := RepoList{Items: []settings.RepositoryView{}}
	for _, r := range tmpls {
		if s.allowed(c, rbac.ResourceRepositories, rbac.ActionGet, r.URL) {
			out.Items = append(out.Items, r.View())
		}
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) getRepoCreds(c *echo.Context) error {
	u, err := s.repoURL(c, rbac.ActionGet)
	if err != nil {
		return err
	}
	r, err := s.opts.Settings.RepoCredsTemplate(c.Request().Context(), u)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, r.View())
}

// createRepoCreds stores a template (or replaces it, with ?upsert=true).
// There is no connection test: a prefix names no one repository.
func (s *Server) createRepoCreds(c *echo.Context) error {
	var r settings.Repository
	if err := echo.BindBody(c, &r); err != nil {
		return problem(http.StatusBadRequest, "request body is not a valid credential template: "+err.Error())
	}
	if err := settings.ValidateTemplate(r); err != nil {
		return err
	}
	if err := s.authorize(c, rbac.ResourceRepositories, rbac.ActionCreate, r.URL); err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := s.opts.Settings.RepoCredsTemplate(ctx, r.URL); err == nil {
		if c.QueryParam("upsert") != "true" {
			return problem(http.StatusConflict, "credential template "+r.URL+" exists (use ?upsert=true)")
		}
		if err := s.authorize(c, rbac.ResourceRepositories, rbac.ActionUpdate, r.URL); err != nil {
			return err
		}
	}
	if err := s.opts.Settings.PutRepoCreds(ctx, r); err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, r.View())
}

func (s *Server) deleteRepoCreds(c *echo.Context) error {
	u, err := s.repoURL(c, rbac.ActionDelete)
	if err != nil {
		return err
	}
	if err := s.opts.Settings.DeleteRepoCreds(c.Request().Context(), u); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
