package api

import (
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/windlass-cd/windlass/api/rbac"
)

// The UI asks which actions the caller may take, to hide or disable the
// buttons it may not use (the endpoints still check every request), and
// shows the RBAC policy in force.

// maxChecks bounds the checks of one GET /session/can.
const maxChecks = 50

// checkResources are the resources a check may name.
var checkResources = []string{rbac.ResourceApplications, rbac.ResourceApplicationSets, rbac.ResourceProjects, rbac.ResourceRepositories,
	rbac.ResourceClusters, rbac.ResourceAccounts, rbac.ResourceLogs}

// CheckResult answers one permission check of the caller.
type CheckResult struct {
	Resource string `json:"resource"`
	Action   string `json:"action"`
	Object   string `json:"object"`
	Allowed  bool   `json:"allowed"`
}

// CheckList answers GET /session/can, in the order of the checks.
type CheckList struct {
	Results []CheckResult `json:"results"`
}

func (s *Server) permissionRoutes(g *echo.Group) {
	g.GET("/session/can", s.can)
	g.GET("/settings/rbac", s.rbacPolicy)
}

// can answers ?check=<resource>,<action>,<object> (repeated, up to
// maxChecks) for the caller: whether RBAC allows each. The object is
// <project>/<app> for applications and logs, the name (or URL) otherwise;
// "*" asks whether the caller may act on every object.
func (s *Server) can(c *echo.Context) error {
	checks := c.QueryParams()["check"]
	if len(checks) == 0 || len(checks) > maxChecks {
		return &Problem{Type: "about:blank", Title: http.StatusText(http.StatusBadRequest), Status: http.StatusBadRequest, Field: "check",
			Detail: "give 1 to 50 checks as ?check=<resource>,<action>,<object>, e.g. ?check=applications,sync,default/guestbook"}
	}
	out := CheckList{Results: make([]CheckResult, 0, len(checks))}
	for _, ch := range checks {
		parts := strings.SplitN(ch, ",", 3)
		if len(parts) != 3 || parts[1] == "" || parts[2] == "" {
			return &Problem{Type: "about:blank", Title: http.StatusText(http.StatusBadRequest), Status: http.StatusBadRequest, Field: "check",
				Detail: "check " + quoteCheck(ch) + " is not <resource>,<action>,<object>"}
		}
		if !slices.Contains(checkResources, parts[0]) {
			return &Problem{Type: "about:blank", Title: http.StatusText(http.StatusBadRequest), Status: http.StatusBadRequest, Field: "check",
				Detail: "check " + quoteCheck(ch) + ": unknown resource " + quoteCheck(parts[0]) + " (one of " + strings.Join(checkResources, ", ") + ")"}
		}
		out.Results = append(out.Results, CheckResult{Resource: parts[0], Action: parts[1], Object: parts[2],
			Allowed: s.allowed(c, parts[0], parts[1], parts[2])})
	}
	return c.JSON(http.StatusOK, out)
}

// quoteCheck quotes user input for an error message, cut short.
func quoteCheck(s string) string {
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return `"` + s + `"`
}

// rbacPolicy answers the policy in force to the callers who may get every
// account (role:readonly and role:admin): it names the accounts and groups
// and what they may do.
func (s *Server) rbacPolicy(c *echo.Context) error {
	if err := s.authorize(c, rbac.ResourceAccounts, rbac.ActionGet, "*"); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.opts.RBAC.View())
}
