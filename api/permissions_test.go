package api

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/windlass-cd/windlass/api/auth"
	"github.com/windlass-cd/windlass/api/rbac"
)

func checkQuery(checks ...string) string {
	q := url.Values{"check": checks}
	return "/api/v1/session/can?" + q.Encode()
}

func TestCan(t *testing.T) {
	en := newEnv(t)
	checks := []string{"applications,sync,default/guestbook", "applications,get,default/guestbook",
		"applications,sync,team-a/web", "projects,create,*", "accounts,get,*",
		"applicationsets,get,default/envs", "applicationsets,delete,default/envs"}
	for _, tc := range []struct {
		caller string
		token  string
		want   []bool
	}{
		{"admin", en.tokens[auth.AdminAccount], []bool{true, true, true, true, true, true, true}},
		{"viewer", en.tokens[viewerAccount], []bool{false, true, false, false, true, true, false}},
		{"ci", en.ciToken, []bool{false, false, true, false, false, false, false}},
		{"nobody", en.tokens[nobodyAccount], []bool{false, false, false, false, false, false, false}},
	} {
		t.Run(tc.caller, func(t *testing.T) {
			res := en.do(request{method: http.MethodGet, path: checkQuery(checks...), token: tc.token})
			res.wantStatus(t, http.StatusOK)
			var out CheckList
			res.decode(t, &out)
			var want []CheckResult
			for i, c := range checks {
				p := strings.SplitN(c, ",", 3)
				want = append(want, CheckResult{Resource: p[0], Action: p[1], Object: p[2], Allowed: tc.want[i]})
			}
			if diff := cmp.Diff(want, out.Results); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCanBadInput(t *testing.T) {
	en := newEnv(t)
	many := make([]string, maxChecks+1)
	for i := range many {
		many[i] = "applications,get,default/x"
	}
	for _, tc := range []struct {
		name, path, detail string
	}{
		{"no check", "/api/v1/session/can", "give 1 to 50 checks"},
		{"too many checks", checkQuery(many...), "give 1 to 50 checks"},
		{"two parts", checkQuery("applications,get"), `check "applications,get" is not <resource>,<action>,<object>`},
		{"empty object", checkQuery("applications,get,"), "is not <resource>,<action>,<object>"},
		{"unknown resource", checkQuery("secrets,get,*"), `unknown resource "secrets"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			en.admin(request{method: http.MethodGet, path: tc.path}).wantProblem(t, http.StatusBadRequest, "check", tc.detail)
		})
	}
}

func TestRBACPolicyView(t *testing.T) {
	en := newEnv(t)
	res := en.admin(request{method: http.MethodGet, path: "/api/v1/settings/rbac"})
	res.wantStatus(t, http.StatusOK)
	var got rbac.PolicyView
	res.decode(t, &got)
	if got.Policy != "g, "+viewerAccount+", "+rbac.RoleReadonly+"\n" {
		t.Errorf("policy %q", got.Policy)
	}
	if !strings.Contains(got.Projects, "p, proj:team-a:ci, applications, sync, team-a/*, allow") {
		t.Errorf("project roles %q lack team-a's ci role", got.Projects)
	}
	if !strings.Contains(got.Builtin, "p, role:admin, *, *, *, allow") {
		t.Errorf("built-in %q lacks role:admin", got.Builtin)
	}
}
