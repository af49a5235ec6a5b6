package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/labstack/echo/v5"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/windlass-cd/windlass/activities/project"
	"github.com/windlass-cd/windlass/api/auth"
	"github.com/windlass-cd/windlass/api/rbac"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

func (s *Server) projectRoutes(g *echo.Group) {
	g.GET("/projects", s.listProjects)
	g.POST("/projects", s.createProject)
	g.GET("/projects/:project", s.getProject)
	g.PUT("/projects/:project", s.updateProject)
	g.DELETE("/projects/:project", s.deleteProject)
	g.POST("/projects/:project/roles/:role/tokens", s.createRoleToken)
	g.GET("/projects/:project/roles/:role/tokens", s.listRoleTokens)
	g.DELETE("/projects/:project/roles/:role/tokens/:id", s.deleteRoleToken)
}

// ProjectList is the list of projects.
type ProjectList struct {
	Items []appspec.Project `json:"items"`
}

func (s *Server) listProjects(c *echo.Context) error {
	all, err := s.opts.Settings.Projects(c.Request().Context())
	if err != nil {
		return err
	}
	out := ProjectList{Items: []appspec.Project{}}
	for _, p := range all {
		if s.allowed(c, rbac.ResourceProjects, rbac.ActionGet, p.Name) {
			out.Items = append(out.Items, p)
		}
	}
	return c.JSON(http.StatusOK, out)
}

// projectName reads the :project parameter and checks the caller.
func (s *Server) projectName(c *echo.Context, action string) (string, error) {
	name := c.Param("project")
	if err := appspec.ValidateProjectName(name); err != nil {
		return "", err
	}
	return name, s.authorize(c, rbac.ResourceProjects, action, name)
}

func (s *Server) getProject(c *echo.Context) error {
	name, err := s.projectName(c, rbac.ActionGet)
	if err != nil {
		return err
	}
	p, err := s.opts.Settings.Project(c.Request().Context(), name)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p)
}

func readProject(c *echo.Context) (appspec.Project, error) {
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return appspec.Project{}, err
	}
	return appspec.ParseProject(body)
}

// createProject creates a project (Windlass JSON/YAML or an Argo CD
// AppProject); 409 if it exists.
func (s *Server) createProject(c *echo.Context) error {
	p, err := readProject(c)
	if err != nil {
		return err
	}
	if err := s.authorize(c, rbac.ResourceProjects, rbac.ActionCreate, p.Name); err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := s.opts.Settings.Project(ctx, p.Name); err == nil && p.Name != appspec.DefaultProject {
		return problem(http.StatusConflict, "project "+p.Name+" already exists (use PUT)")
	} else if err != nil && !errors.Is(err, project.ErrNotFound) {
		return err
	}
	if err := s.storeProject(ctx, p); err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, p)
}

func (s *Server) updateProject(c *echo.Context) error {
	name, err := s.projectName(c, rbac.ActionUpdate)
	if err != nil {
		return err
	}
	p, err := readProject(c)
	if err != nil {
		return err
	}
	if p.Name != name {
		return &Problem{Type: "about:blank", Title: "Bad Request", Status: http.StatusBadRequest, Detail: "name in the body does not match the URL", Field: "name"}
	}
	ctx := c.Request().Context()
	if _, err := s.opts.Settings.Project(ctx, name); err != nil {
		return err
	}
	if err := s.storeProject(ctx, p); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p)
}

// storeProject checks the project's roles with RBAC (their policies must
// stay inside the project), then stores it and puts its roles in force.
func (s *Server) storeProject(ctx context.Context, p appspec.Project) error {
	if err := s.checkSubscriptions(ctx, p.Annotations); err != nil {
		return err
	}
	all, err := s.opts.Settings.Projects(ctx)
	if err != nil {
		return err
	}
	next := slices.DeleteFunc(slices.Clone(all), func(q appspec.Project) bool { return q.Name == p.Name })
	next = append(next, p)
	if err := s.opts.RBAC.SetProjects(next); err != nil {
		pr := problem(http.StatusBadRequest, err.Error())
		pr.Field = "roles"
		return pr
	}
	if err := s.opts.Settings.PutProject(ctx, p); err != nil {
		_ = s.opts.RBAC.SetProjects(all)
		return err
	}
	return nil
}

// ReloadProjects puts the stored projects' roles in force; the server
// role calls it periodically, so that replicas see each other's changes.
func (s *Server) ReloadProjects(ctx context.Context) error {
	all, err := s.opts.Settings.Projects(ctx)
	if err != nil {
		return err
	}
	return s.opts.RBAC.SetProjects(all)
}

// deleteProject deletes a project that no application uses.
func (s *Server) deleteProject(c *echo.Context) error {
	name, err := s.projectName(c, rbac.ActionDelete)
	if err != nil {
		return err
	}
	if err := s.removeProject(c.Request().Context(), name); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// removeProject deletes a project that no application uses (409 while
// one does) and withdraws its roles.
func (s *Server) removeProject(ctx context.Context, name string) error {
	n, err := s.countApps(ctx, workflows.SearchAttrProject, name)
	if err != nil {
		return err
	}
	if n > 0 {
		return problem(http.StatusConflict, fmt.Sprintf("project %s still has %d applications", name, n))
	}
	if err := s.opts.Settings.DeleteProject(ctx, name); err != nil {
		return err
	}
	return s.ReloadProjects(ctx)
}

// countApps counts the running applications whose search attribute attr
// is value.
func (s *Server) countApps(ctx context.Context, attr, value string) (int64, error) {
	v, err := visibilityValue(attr, value)
	if err != nil {
		return 0, err
	}
	resp, err := s.c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{
		Namespace: s.opts.Namespace,
		Query:     fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running' AND %s = %s", workflows.ApplicationWorkflowName, attr, v),
	})
	if err != nil {
		return 0, err
	}
	return resp.GetCount(), nil
}

// TokenRequest asks for an API token.
type TokenRequest struct {
	// ExpiresIn is a duration ("720h", "30d"); empty for the default.
	ExpiresIn   string `json:"expiresIn,omitempty"`
	Description string `json:"description,omitempty"`
	ID          string `json:"id,omitempty"`
}

// TokenResponse carries a new token: the only time it is shown.
type TokenResponse struct {
	Token     string    `json:"token"`
	ID        string    `json:"id"`
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
}

// TokenList lists tokens without their values.
type TokenList struct {
	Items []auth.TokenInfo `json:"items"`
}

// roleSubject checks that the project role exists and that the caller may
// update the project; it returns the role's RBAC subject.
func (s *Server) roleSubject(c *echo.Context, action string) (string, error) {
	name, err := s.projectName(c, action)
	if err != nil {
		return "", err
	}
	p, err := s.opts.Settings.Project(c.Request().Context(), name)
	if err != nil {
		return "", err
	}
	role := c.Param("role")
	if !slices.ContainsFunc(p.Roles, func(r appspec.ProjectRole) bool { return r.Name == role }) {
		return "", problem(http.StatusNotFound, "project "+name+" has no role "+role)
	}
	return rbac.ProjectRoleSubject(name, role), nil
}

func (s *Server) createRoleToken(c *echo.Context) error {
	sub, err := s.roleSubject(c, rbac.ActionUpdate)
	if err != nil {
		return err
	}
	return s.mintToken(c, sub)
}

func (s *Server) mintToken(c *echo.Context, subject string) error {
	var req TokenRequest
	if c.Request().ContentLength != 0 {
		if err := echo.BindBody(c, &req); err != nil {
			return problem(http.StatusBadRequest, "request body is not a valid token request: "+err.Error())
		}
	}
	var ttl time.Duration
	if req.ExpiresIn != "" {
		d, err := appspec.ParseDuration(req.ExpiresIn)
		if err != nil || d <= 0 {
			return &Problem{Type: "about:blank", Title: "Bad Request", Status: http.StatusBadRequest, Detail: "expiresIn must be a positive duration such as 720h", Field: "expiresIn"}
		}
		ttl = d
	}
	tok, info, err := s.opts.Auth.MintToken(c.Request().Context(), subject, auth.TokenOptions{ID: req.ID, Description: req.Description, ExpiresIn: ttl})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, TokenResponse{Token: tok, ID: info.ID, ExpiresAt: info.ExpiresAt})
}

func (s *Server) listRoleTokens(c *echo.Context) error {
	sub, err := s.roleSubject(c, rbac.ActionGet)
	if err != nil {
		return err
	}
	return s.listTokens(c, sub)
}

func (s *Server) listTokens(c *echo.Context, subject string) error {
	list, err := s.opts.Auth.ListTokens(c.Request().Context(), subject)
	if err != nil {
		return err
	}
	if list == nil {
		list = []auth.TokenInfo{}
	}
	return c.JSON(http.StatusOK, TokenList{Items: list})
}

func (s *Server) deleteRoleToken(c *echo.Context) error {
	sub, err := s.roleSubject(c, rbac.ActionUpdate)
	if err != nil {
		return err
	}
	return s.deleteToken(c, sub)
}

// deleteToken deletes token :id if it belongs to subject.
func (s *Server) deleteToken(c *echo.Context, subject string) error {
	ctx := c.Request().Context()
	list, err := s.opts.Auth.ListTokens(ctx, subject)
	if err != nil {
		return err
	}
	id := c.Param("id")
	if !slices.ContainsFunc(list, func(t auth.TokenInfo) bool { return t.ID == id }) {
		return problem(http.StatusNotFound, "no token "+id+" for "+subject)
	}
	if err := s.opts.Auth.DeleteToken(ctx, id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
