package rbac

import (
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/windlass-cd/windlass/internal/appspec"
)

const matrixCSV = `
# team-a deployers, granted to an SSO group
p, role:deployer, applications, get, team-a/*, allow
p, role:deployer, applications, sync, team-a/*, allow
p, role:deployer, applications, sync, team-a/frozen, deny
p, role:deployer, logs, get, team-a/*, allow
g, sso:team-a, role:deployer
g, alice, role:readonly

p, bob, applications, *, */guestbook, allow
p, carol, repositories, *, https://github.com/acme/*, allow
p, carol, clusters, get, https://*.example.com, allow
p, dave, applications, action/apps/Deployment/*, team-a/*, allow
p, erin, applications, action, team-a/*, allow
`

func matrixProjects() []appspec.Project {
	return []appspec.Project{
		{Name: "team-a", Roles: []appspec.ProjectRole{{
			Name: "ci",
			Policies: []string{
				"p, proj:team-a:ci, applications, get, team-a/*, allow",
				"p, proj:team-a:ci, applications, sync, team-a/*, allow",
				"p, proj:team-a:ci, projects, get, team-a, allow",
			},
			Groups: []string{"sso:team-a-ci"},
		}}},
		{Name: "team-b", Roles: []appspec.ProjectRole{{
			Name:     "viewer",
			Policies: []string{"p, proj:team-b:viewer, applications, get, team-b/*, allow"},
		}}},
	}
}

func newEnforcer(t *testing.T, cfg Config, projects []appspec.Project) *Enforcer {
	t.Helper()
	e, err := New(cfg, projects)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return e
}

func TestEnforceMatrix(t *testing.T) {
	var (
		admin    = Subject{Name: "admin"}
		alice    = Subject{Name: "alice"}
		mallory  = Subject{Name: "mallory", Groups: []string{"sso:other", "sso:team-a"}}
		ciToken  = Subject{Name: ProjectRoleSubject("team-a", "ci")}
		frank    = Subject{Name: "frank", Groups: []string{"sso:team-a-ci"}}
		nobody   = Subject{Name: "nobody"}
		anon     = Subject{}
		bob      = Subject{Name: "bob"}
		carol    = Subject{Name: "carol"}
		dave     = Subject{Name: "dave"}
		erin     = Subject{Name: "erin"}
		restart  = "action/apps/Deployment/restart"
		ssRestrt = "action/apps/StatefulSet/restart"
	)
	type req struct {
		defaultRole   string
		sub           Subject
		res, act, obj string
		want          bool
	}
	tests := []req{
		// The admin user holds role:admin.
		{"", admin, ResourceApplications, ActionDelete, "prod/web", true},
		{"", admin, ResourceClusters, ActionCreate, "https://k8s.example.com", true},
		{"", admin, ResourceAccounts, ActionUpdate, "bob", true},
		{"", admin, ResourceApplications, restart, "team-a/web", true},
		// role:readonly reads everything and changes nothing.
		{"", alice, ResourceApplications, ActionGet, "team-a/web", true},
		{"", alice, ResourceLogs, ActionGet, "team-b/api", true},
		{"", alice, ResourceRepositories, ActionGet, "https://github.com/acme/app.git", true},
		{"", alice, ResourceAccounts, ActionGet, "alice", true},
		{"", alice, ResourceApplications, ActionSync, "team-a/web", false},
		{"", alice, ResourceRepositories, ActionCreate, "https://github.com/acme/app.git", false},
		// An SSO group bound to a custom role.
		{"", mallory, ResourceApplications, ActionSync, "team-a/web", true},
		{"", mallory, ResourceLogs, ActionGet, "team-a/web", true},
		{"", mallory, ResourceApplications, ActionSync, "team-a/frozen", false},
		{"", mallory, ResourceApplications, ActionSync, "team-b/web", false},
		{"", mallory, ResourceApplications, ActionDelete, "team-a/web", false},
		{"", mallory, ResourceProjects, ActionGet, "team-a", false},
		// A project role token, and a user in the role's group.
		{"", ciToken, ResourceApplications, ActionSync, "team-a/web", true},
		{"", ciToken, ResourceProjects, ActionGet, "team-a", true},
		{"", ciToken, ResourceProjects, ActionUpdate, "team-a", false},
		{"", ciToken, ResourceApplications, ActionDelete, "team-a/web", false},
		{"", ciToken, ResourceApplications, ActionGet, "team-b/web", false},
		{"", frank, ResourceApplications, ActionSync, "team-a/web", true},
		{"", frank, ResourceApplications, ActionGet, "team-b/web", false},
		// No roles.
		{"", nobody, ResourceApplications, ActionGet, "team-a/web", false},
		{"", nobody, ResourceProjects, ActionGet, "team-a", false},
		// Object, resource and action globs.
		{"", bob, ResourceApplications, ActionSync, "prod/guestbook", true},
		{"", bob, ResourceApplications, ActionDelete, "team-a/guestbook", true},
		{"", bob, ResourceApplications, ActionGet, "prod/guestbook-2", false},
		{"", bob, ResourceLogs, ActionGet, "prod/guestbook", false},
		{"", carol, ResourceRepositories, ActionGet, "https://github.com/acme/app.git", true},
		{"", carol, ResourceRepositories, ActionDelete, "https://github.com/acme/group/app", true},
		{"", carol, ResourceRepositories, ActionGet, "https://github.com/other/app.git", false},
		{"", carol, ResourceClusters, ActionGet, "https://prod.example.com", true},
		{"", carol, ResourceClusters, ActionGet, "https://prod.example.org", false},
		{"", carol, ResourceClusters, ActionUpdate, "https://prod.example.com", false},
		{"", dave, ResourceApplications, restart, "team-a/web", true},
		{"", dave, ResourceApplications, ssRestrt, "team-a/web", false},
		{"", dave, ResourceApplications, restart, "team-b/web", false},
		{"", erin, ResourceApplications, ssRestrt, "team-a/web", true},
		{"", erin, ResourceApplications, ActionAction, "team-a/web", true},
		{"", erin, ResourceApplications, ActionSync, "team-a/web", false},
		// policy.default grants every authenticated subject, project
		// tokens included, but not anonymous ones.
		{RoleReadonly, nobody, ResourceApplications, ActionGet, "team-a/web", true},
		{RoleReadonly, nobody, ResourceApplications, ActionSync, "team-a/web", false},
		{RoleReadonly, ciToken, ResourceApplications, ActionGet, "team-b/web", true},
		{RoleReadonly, mallory, ResourceApplications, ActionSync, "team-a/web", true},
		{RoleReadonly, mallory, ResourceApplications, ActionSync, "team-a/frozen", false},
		{RoleReadonly, anon, ResourceApplications, ActionGet, "team-a/web", false},
		{"", anon, ResourceApplications, ActionGet, "team-a/web", false},
	}

	enforcers := map[string]*Enforcer{}
	for _, role := range []string{"", RoleReadonly} {
		enforcers[role] = newEnforcer(t, Config{PolicyCSV: matrixCSV, DefaultRole: role}, matrixProjects())
	}
	want, got := map[string]bool{}, map[string]bool{}
	for _, tc := range tests {
		key := fmt.Sprintf("default=%q %v %s %s %s", tc.defaultRole, tc.sub, tc.res, tc.act, tc.obj)
		want[key] = tc.want
		got[key] = enforcers[tc.defaultRole].Enforce(tc.sub, tc.res, tc.act, tc.obj)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Enforce (-want +got):\n%s", diff)
	}
}

func TestDenyOverridesAllow(t *testing.T) {
	const (
		userAllow = "p, u, applications, sync, */*, allow\n"
		userDeny  = "p, u, applications, sync, prod/*, deny\n"
	)
	user, admin := Subject{Name: "u", Groups: []string{"grp"}}, Subject{Name: "admin"}
	tests := []struct {
		name, csv, defaultRole string
		sub                    Subject
		act, obj               string
		want                   bool
	}{
		{"user deny listed before user allow", userDeny + userAllow, "", user, ActionSync, "prod/web", false},
		{"deny glob not matching", userDeny + userAllow, "", user, ActionSync, "dev/web", true},
		{"user deny over group allow", "p, grp, applications, sync, */*, allow\n" + userDeny, "", user, ActionSync, "prod/web", false},
		{"group deny over user allow", userAllow + "p, grp, applications, sync, prod/*, deny", "", user, ActionSync, "prod/web", false},
		{"inherited role deny over user allow", userAllow + "g, u, role:frozen\np, role:frozen, applications, *, prod/*, deny", "", user, ActionSync, "prod/web", false},
		{"user deny over the default role", userDeny, RoleAdmin, user, ActionSync, "prod/web", false},
		{"default role deny binds everyone", userAllow + "p, role:base, applications, sync, prod/*, deny", "role:base", user, ActionSync, "prod/web", false},
		{"wildcard resource and action deny", userAllow + "p, u, *, *, prod/*, deny", "", user, ActionSync, "prod/web", false},
		{"admin denied", "p, admin, applications, delete, prod/*, deny", "", admin, ActionDelete, "prod/web", false},
		{"admin elsewhere", "p, admin, applications, delete, prod/*, deny", "", admin, ActionDelete, "dev/web", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnforcer(t, Config{PolicyCSV: tc.csv, DefaultRole: tc.defaultRole}, nil)
			got := e.Enforce(tc.sub, ResourceApplications, tc.act, tc.obj)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Enforce (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{name: "built-in default role", cfg: Config{DefaultRole: RoleReadonly}},
		{name: "default role from policy.csv", cfg: Config{PolicyCSV: "p, role:base, projects, get, *, allow", DefaultRole: "role:base"}},
		{name: "default role from a project", cfg: Config{DefaultRole: "proj:team-b:viewer"}},
		{
			name: "undefined default role", cfg: Config{DefaultRole: "role:readOnly"},
			want: `default role "role:readOnly" is not defined by any policy`,
		},
		{
			name: "empty scope", cfg: Config{Scopes: []string{"groups", ""}},
			want: "rbac scopes: empty claim name",
		},
		{name: "regex match mode", cfg: Config{MatchMode: MatchRegex, PolicyCSV: "p, u, applications, get, team-a/(web|api), allow"}},
		{name: "glob object that is no regex", cfg: Config{MatchMode: MatchGlob, PolicyCSV: "p, u, applications, get, team-a/(, allow"}},
		{
			name: "regex that does not compile", cfg: Config{MatchMode: MatchRegex, PolicyCSV: "p, u, applications, get, team-a/(, allow"},
			want: `policy.csv line 1 "p, u, applications, get, team-a/(, allow": object "team-a/(" is not a regular expression: error parsing regexp: missing closing ): ` + "`team-a/(`",
		},
		{name: "unknown match mode", cfg: Config{MatchMode: "Regex"}, want: `rbac policy.matchMode "Regex": want glob or regex`},
		{
			name: "bad policy", cfg: Config{PolicyCSV: "p, u, applications, get, */*"},
			want: `policy.csv line 1 "p, u, applications, get, */*": p lines have 6 fields (p, subject, resource, action, object, effect), got 5`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg, matrixProjects())
			if diff := cmp.Diff(tc.want, errString(err)); diff != "" {
				t.Errorf("New error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSetPolicy(t *testing.T) {
	e := newEnforcer(t, Config{PolicyCSV: "g, alice, role:readonly"}, nil)
	alice, bob := Subject{Name: "alice"}, Subject{Name: "bob"}
	check := func(step string, want []bool) {
		t.Helper()
		got := []bool{
			e.Enforce(alice, ResourceApplications, ActionGet, "p/a"),
			e.Enforce(alice, ResourceApplications, ActionSync, "p/a"),
			e.Enforce(bob, ResourceApplications, ActionGet, "p/a"),
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: Enforce (-want +got):\n%s", step, diff)
		}
	}
	check("initial", []bool{true, false, false})

	if err := e.SetPolicy("p, alice, applications, sync, p/*, allow", RoleReadonly); err != nil {
		t.Fatalf("SetPolicy: %v", err)
	}
	check("replaced", []bool{true, true, true})

	if err := e.SetPolicy("p, alice, applications, sync, p/*, permit", ""); err == nil {
		t.Fatal("SetPolicy accepted an unknown effect")
	}
	if err := e.SetPolicy("", "role:missing"); err == nil {
		t.Fatal("SetPolicy accepted an undefined default role")
	}
	check("kept after errors", []bool{true, true, true})
}

func TestSetProjects(t *testing.T) {
	e := newEnforcer(t, Config{}, matrixProjects())
	ci := Subject{Name: ProjectRoleSubject("team-a", "ci")}
	viewer := Subject{Name: ProjectRoleSubject("team-b", "viewer")}
	check := func(step string, want []bool) {
		t.Helper()
		got := []bool{
			e.Enforce(ci, ResourceApplications, ActionSync, "team-a/web"),
			e.Enforce(viewer, ResourceApplications, ActionGet, "team-b/web"),
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: Enforce (-want +got):\n%s", step, diff)
		}
	}
	check("initial", []bool{true, true})

	if err := e.SetProjects(matrixProjects()[1:]); err != nil {
		t.Fatalf("SetProjects: %v", err)
	}
	check("team-a removed", []bool{false, true})

	bad := matrixProjects()
	bad[0].Roles[0].Policies = append(bad[0].Roles[0].Policies, "p, proj:team-a:ci, applications, delete, team-b/*, allow")
	err := e.SetProjects(bad)
	want := `project team-a role ci line 4 "p, proj:team-a:ci, applications, delete, team-b/*, allow": object "team-b/*" is outside project team-a: want team-a/<application>`
	if diff := cmp.Diff(want, errString(err)); diff != "" {
		t.Errorf("SetProjects error (-want +got):\n%s", diff)
	}
	check("kept after error", []bool{false, true})

	if err := e.SetProjects(matrixProjects()); err != nil {
		t.Fatalf("SetProjects: %v", err)
	}
	check("team-a restored", []bool{true, true})
}

// TestConcurrentEnforce runs Enforce while SetProjects and SetPolicy swap
// the policy; run it with -race.
func TestConcurrentEnforce(t *testing.T) {
	with, without := matrixProjects(), matrixProjects()[1:]
	e := newEnforcer(t, Config{PolicyCSV: matrixCSV}, with)
	ci := Subject{Name: ProjectRoleSubject("team-a", "ci")}
	admin, nobody := Subject{Name: "admin"}, Subject{Name: "nobody"}

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	wg.Go(func() {
		for i := range 100 {
			projects := with
			if i%2 == 1 {
				projects = without
			}
			if err := e.SetProjects(projects); err != nil {
				errs <- err
				return
			}
		}
	})
	wg.Go(func() {
		for range 50 {
			if err := e.SetPolicy(matrixCSV, ""); err != nil {
				errs <- err
				return
			}
		}
	})
	for range 4 {
		wg.Go(func() {
			for range 500 {
				e.Enforce(ci, ResourceApplications, ActionSync, "team-a/web")
				if !e.Enforce(admin, ResourceApplications, ActionSync, "team-a/web") {
					errs <- fmt.Errorf("admin denied during a swap")
					return
				}
				if e.Enforce(nobody, ResourceApplications, ActionGet, "team-a/web") {
					errs <- fmt.Errorf("nobody allowed during a swap")
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// The last SetProjects (i = 99) removed team-a.
	if e.Enforce(ci, ResourceApplications, ActionSync, "team-a/web") {
		t.Error("ci token allowed after its project was removed")
	}
}

func TestGroups(t *testing.T) {
	claims := map[string]any{
		"sub":    "alice",
		"groups": []any{"sso:a", "sso:b", 3, ""},
		"roles":  []string{"sso:b", "sso:c"},
		"email":  "alice@example.com",
	}
	tests := []struct {
		name   string
		scopes []string
		want   []string
	}{
		{name: "default scope", want: []string{"sso:a", "sso:b"}},
		{name: "several scopes", scopes: []string{"groups", "roles", "email"}, want: []string{"sso:a", "sso:b", "sso:c", "alice@example.com"}},
		{name: "missing claim", scopes: []string{"teams"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnforcer(t, Config{Scopes: tc.scopes}, nil)
			if diff := cmp.Diff(tc.want, e.Groups(claims)); diff != "" {
				t.Errorf("Groups (-want +got):\n%s", diff)
			}
		})
	}
}
