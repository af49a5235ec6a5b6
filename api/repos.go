package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/activities/source"
	"github.com/windlass-cd/windlass/api/rbac"
	"github.com/windlass-cd/windlass/internal/repocred"
	"github.com/windlass-cd/windlass/internal/secretstore"
	"github.com/windlass-cd/windlass/internal/settings"
)

func (s *Server) repoRoutes(g *echo.Group) {
	g.GET("/repositories", s.listRepos)
	g.POST("/repositories", s.createRepo)
	g.GET("/repositories/:url", s.getRepo)
	g.DELETE("/repositories/:url", s.deleteRepo)
}

// RepoList lists repositories, without their secrets.
type RepoList struct {
	Items []settings.RepositoryView `json:"items"`
}

func (s *Server) listRepos(c *echo.Context) error {
	repos, err := s.opts.Settings.Repos(c.Request().Context())
	if err != nil {
		return err
	}
	out := RepoList{Items: []settings.RepositoryView{}}
	for _, r := range repos {
		if s.allowed(c, rbac.ResourceRepositories, rbac.ActionGet, r.URL) {
			out.Items = append(out.Items, r.View())
		}
	}
	return c.JSON(http.StatusOK, out)
}

// repoURL reads the path-escaped :url parameter and checks the caller.
func (s *Server) repoURL(c *echo.Context, action string) (string, error) {
	u, err := url.PathUnescape(c.Param("url"))
	if err != nil || u == "" {
		return "", &Problem{Type: "about:blank", Title: "Bad Request", Status: http.StatusBadRequest, Detail: "the repository URL must be path-escaped", Field: "url"}
	}
	return u, s.authorize(c, rbac.ResourceRepositories, action, u)
}

func (s *Server) getRepo(c *echo.Context) error {
	u, err := s.repoURL(c, rbac.ActionGet)
	if err != nil {
		return err
	}
	r, err := s.opts.Settings.Repo(c.Request().Context(), u)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, r.View())
}

// createRepo registers a repository (or replaces it, with ?upsert=true)
// after testing the connection with its credential.
func (s *Server) createRepo(c *echo.Context) error {
	var r settings.Repository
	if err := echo.BindBody(c, &r); err != nil {
		return problem(http.StatusBadRequest, "request body is not a valid repository: "+err.Error())
	}
	if err := r.Validate(); err != nil {
		return err
	}
	// Permission first, so that callers learn nothing of other repositories.
	if err := s.authorize(c, rbac.ResourceRepositories, rbac.ActionCreate, r.URL); err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := s.opts.Settings.Repo(ctx, r.URL); err == nil {
		if c.QueryParam("upsert") != "true" {
			return problem(http.StatusConflict, "repository "+r.URL+" is already registered (use ?upsert=true)")
		}
		if err := s.authorize(c, rbac.ResourceRepositories, rbac.ActionUpdate, r.URL); err != nil {
			return err
		}
	}
	check := s.opts.RepoCheck
	if check == nil {
		check = s.lsRemote
	}
	if err := check(r); err != nil {
		pr := problem(http.StatusUnprocessableEntity, "connection test failed: "+err.Error())
		pr.Field = "url"
		return pr
	}
	if err := s.opts.Settings.PutRepo(ctx, r); err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, r.View())
}

// lsRemote lists a Git repository's refs, reads a Helm repository's
// index, or lists an OCI repository's tags, with its credential.
func (s *Server) lsRemote(r settings.Repository) error {
	st, err := settings.New(&secretstore.Memory{})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := st.PutRepo(ctx, r); err != nil {
		return err
	}
	if r.Type == settings.RepoTypeHelm {
		return render.CheckChartRepo(ctx, r.URL, &repocred.Credential{Repository: r}, s.opts.GitTimeout)
	}
	ra := &source.RegisteredAuth{Repos: st}
	if source.IsOCI(r.URL) {
		return source.CheckOCIRepository(ctx, r.URL, ra, s.opts.GitTimeout)
	}
	auth, err := ra.Auth(ctx, r.URL)
	if err != nil {
		return err
	}
	o, err := ra.Transport(ctx, r.URL)
	if err != nil {
		return err
	}
	if _, err := source.ListRefsWith(ctx, r.URL, auth, o, s.opts.GitTimeout); err != nil {
		return fmt.Errorf("list refs: %w", err)
	}
	return nil
}

func (s *Server) deleteRepo(c *echo.Context) error {
	u, err := s.repoURL(c, rbac.ActionDelete)
	if err != nil {
		return err
	}
	if err := s.opts.Settings.DeleteRepo(c.Request().Context(), u); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
