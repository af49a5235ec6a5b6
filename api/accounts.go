package api

import (
	"net/http"

	"github.com/labstack/echo/v5"

	"github.com/windlass-cd/windlass/api/auth"
	"github.com/windlass-cd/windlass/api/rbac"
)

func (s *Server) accountRoutes(g *echo.Group) {
	g.GET("/accounts", s.listAccounts)
	g.PUT("/account/password", s.updatePassword)
	g.POST("/accounts/:account/tokens", s.createAccountToken)
	g.GET("/accounts/:account/tokens", s.listAccountTokens)
	g.DELETE("/accounts/:account/tokens/:id", s.deleteAccountToken)
}

// Account is a local account as the API shows it.
type Account struct {
	Name         string   `json:"name"`
	Enabled      bool     `json:"enabled"`
	Capabilities []string `json:"capabilities"`
}

// AccountList lists the local accounts.
type AccountList struct {
	Items []Account `json:"items"`
}

func (s *Server) listAccounts(c *echo.Context) error {
	out := AccountList{Items: []Account{}}
	_, me := subject(c)
	for _, a := range s.opts.Auth.Accounts() {
		if a.Name == me.Name || s.allowed(c, rbac.ResourceAccounts, rbac.ActionGet, a.Name) {
			out.Items = append(out.Items, Account{Name: a.Name, Enabled: a.Enabled, Capabilities: a.Capabilities})
		}
	}
	return c.JSON(http.StatusOK, out)
}

// PasswordRequest changes a password: the caller's own, or (admin) Name's.
type PasswordRequest struct {
	Name            string `json:"name,omitempty"`
	CurrentPassword string `json:"currentPassword"`
	NewPassword     string `json:"newPassword"`
}

func (s *Server) updatePassword(c *echo.Context) error {
	var req PasswordRequest
	if err := echo.BindBody(c, &req); err != nil {
		return problem(http.StatusBadRequest, "request body is not a valid password change: "+err.Error())
	}
	_, me := subject(c)
	if req.Name == "" {
		req.Name = me.Name
	}
	if me.Kind != auth.KindSession {
		return problem(http.StatusForbidden, "passwords are changed with a login session, not an API token")
	}
	ctx := auth.ContextWithPrincipal(c.Request().Context(), me)
	if err := s.opts.Auth.SetPassword(ctx, req.Name, req.CurrentPassword, req.NewPassword); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// account reads :account; callers act on their own account, others need
// the accounts permission.
func (s *Server) account(c *echo.Context, action string) (string, error) {
	name := c.Param("account")
	if _, me := subject(c); me.Name == name {
		return name, nil
	}
	return name, s.authorize(c, rbac.ResourceAccounts, action, name)
}

func (s *Server) createAccountToken(c *echo.Context) error {
	name, err := s.account(c, rbac.ActionUpdate)
	if err != nil {
		return err
	}
	return s.mintToken(c, name)
}

func (s *Server) listAccountTokens(c *echo.Context) error {
	name, err := s.account(c, rbac.ActionGet)
	if err != nil {
		return err
	}
	return s.listTokens(c, name)
}

func (s *Server) deleteAccountToken(c *echo.Context) error {
	name, err := s.account(c, rbac.ActionUpdate)
	if err != nil {
		return err
	}
	return s.deleteToken(c, name)
}
