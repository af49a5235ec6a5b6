package rbac

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/windlass-cd/windlass/internal/appspec"
)

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestGlob(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", true},
		{"*", "team-a/web", true},
		{"team-a/*", "team-a/web", true},
		{"team-a/*", "team-a/", true},
		{"team-a/*", "team-b/web", false},
		{"team-a/*", "team-a", false},
		{"*/guestbook", "prod/guestbook", true},
		{"*/guestbook", "prod/guestbook-2", false},
		{"*/*", "a/b", true},
		{"*/*", "ab", false},
		{"https://github.com/acme/*", "https://github.com/acme/a/b.git", true},
		{"https://*.example.com", "https://prod.example.com", true},
		{"https://*.example.com", "https://prod.example.org", false},
		{"web-?", "web-1", true},
		{"web-?", "web-10", false},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyy", false},
		{"ré?", "réé", true},
		{"exact", "exact", true},
		{"exact", "exactly", false},
	}
	for _, tc := range tests {
		if got := glob(tc.pattern, tc.s); got != tc.want {
			t.Errorf("glob(%q, %q) = %v, want %v", tc.pattern, tc.s, got, tc.want)
		}
	}
}

const allResources = "applications, projects, repositories, clusters, accounts, logs, " +
	"applicationsets, gpgkeys, certificates, exec, extensions"

func TestValidatePolicy(t *testing.T) {
	tests := []struct {
		name, csv, want string
	}{
		{name: "empty"},
		{name: "builtin", csv: builtinCSV},
		{name: "comments and blanks", csv: "# c\n\n   \np, u, applications, get, p/a, allow\ng, u, role:x\n"},
		{name: "quoted object", csv: `p, u, repositories, get, "https://h/a,b", allow`},
		{name: "globs in resource and action", csv: "p, u, *, *, *, deny\np, u, app*, action/*, */*, allow\np, u, clusters, sy*, *, allow"},
		{name: "resource action path", csv: "p, u, applications, action/apps/Deployment/restart, p/a, allow"},
		{
			name: "five fields", csv: "# comment\n\np, u, applications, get, p/a",
			want: `policy.csv line 3 "p, u, applications, get, p/a": p lines have 6 fields (p, subject, resource, action, object, effect), got 5`,
		},
		{
			name: "unknown effect", csv: "p, u, applications, get, p/a, Allow",
			want: `policy.csv line 1 "p, u, applications, get, p/a, Allow": unknown effect "Allow": want allow or deny`,
		},
		{name: "argo cd resources", csv: "p, u, applicationsets, create, p/*, allow\np, u, certificates, delete, *, allow\n" +
			"p, u, gpgkeys, get, *, allow\np, u, exec, create, p/*, allow\np, u, extensions, invoke, httpbin, allow\n" +
			"p, u, cert*, get, *, deny"},
		{name: "sub-resource actions", csv: "p, u, applications, update/*, p/*, allow\n" +
			"p, u, applications, delete/*/Pod/*/*, p/*, allow\np, u, applications, update/apps/Deployment/prod/web, p/web, deny"},
		{
			name: "misspelt resource", csv: "p, u, certificate, get, *, allow",
			want: `policy.csv line 1 "p, u, certificate, get, *, allow": unknown resource "certificate": want one of ` + allResources,
		},
		{
			name: "resource glob matching nothing", csv: "p, u, gpg*z, get, *, allow",
			want: `policy.csv line 1 "p, u, gpg*z, get, *, allow": unknown resource "gpg*z": want one of ` + allResources,
		},
		{
			name: "empty sub-resource", csv: "p, u, applications, delete/, */*, allow",
			want: `policy.csv line 1 "p, u, applications, delete/, */*, allow": unknown action "delete/": want one of get, create, update, delete, sync, rollback, override, action, invoke, action/<group>/<kind>/<name>, or update/ or delete/<group>/<kind>/<namespace>/<name>`,
		},
		{
			name: "exec object without project", csv: "p, u, exec, create, web, allow",
			want: `policy.csv line 1 "p, u, exec, create, web, allow": object "web" of exec must be <project>/<name>`,
		},
		{
			name: "unknown action", csv: "p, u, applications, list, */*, allow",
			want: `policy.csv line 1 "p, u, applications, list, */*, allow": unknown action "list": want one of get, create, update, delete, sync, rollback, override, action, invoke, action/<group>/<kind>/<name>, or update/ or delete/<group>/<kind>/<namespace>/<name>`,
		},
		{
			name: "empty resource action", csv: "p, u, applications, action/, */*, allow",
			want: `policy.csv line 1 "p, u, applications, action/, */*, allow": unknown action "action/": want one of get, create, update, delete, sync, rollback, override, action, invoke, action/<group>/<kind>/<name>, or update/ or delete/<group>/<kind>/<namespace>/<name>`,
		},
		{
			name: "application object without project", csv: "p, u, applications, get, web, allow",
			want: `policy.csv line 1 "p, u, applications, get, web, allow": object "web" of applications must be <project>/<name>`,
		},
		{
			name: "empty subject", csv: "p, , applications, get, */*, allow",
			want: `policy.csv line 1 "p, , applications, get, */*, allow": empty subject`,
		},
		{
			name: "g with two fields", csv: "g, u",
			want: `policy.csv line 1 "g, u": g lines have 3 fields (g, user or group, role), got 2`,
		},
		{
			name: "g with empty role", csv: "g, u, ",
			want: `policy.csv line 1 "g, u,": empty user, group or role`,
		},
		{
			name: "unknown type", csv: "r, u, role:x",
			want: `policy.csv line 1 "r, u, role:x": unknown policy type "r": want p or g`,
		},
		{
			name: "bad quoting", csv: `p, u, repositories, get, "https://h, allow`,
			want: `policy.csv line 1 "p, u, repositories, get, \"https://h, allow": csv column 43: extraneous or missing " in quoted-field`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidatePolicy(tc.csv)
			if diff := cmp.Diff(tc.want, errString(err)); diff != "" {
				t.Errorf("ValidatePolicy error (-want +got):\n%s", diff)
			}
			var pe *PolicyError
			if err != nil && !errors.As(err, &pe) {
				t.Errorf("error %T is not a *PolicyError", err)
			}
		})
	}
}

func TestProjectRoleValidation(t *testing.T) {
	role := func(policies ...string) []appspec.Project {
		return []appspec.Project{{Name: "team-a", Roles: []appspec.ProjectRole{{Name: "ci", Policies: policies}}}}
	}
	tests := []struct {
		name     string
		projects []appspec.Project
		want     string
	}{
		{name: "valid", projects: role(
			"p, proj:team-a:ci, applications, sync, team-a/*, allow",
			"",
			"# comment",
			"p, proj:team-a:ci, logs, get, team-a/web, deny",
			"p, proj:team-a:ci, projects, get, team-a, allow",
			"p, proj:team-a:ci, exec, create, team-a/web, allow",
			"p, proj:team-a:ci, applicationsets, get, team-a/*, allow",
		)},
		{
			name:     "exec in another project",
			projects: role("p, proj:team-a:ci, exec, create, team-b/web, allow"),
			want:     `project team-a role ci line 1 "p, proj:team-a:ci, exec, create, team-b/web, allow": object "team-b/web" is outside project team-a: want team-a/<application>`,
		},
		{
			name:     "other subject",
			projects: role("p, proj:team-a:ci, applications, get, team-a/*, allow", "p, alice, applications, get, team-a/*, allow"),
			want:     `project team-a role ci line 2 "p, alice, applications, get, team-a/*, allow": subject "alice" must be "proj:team-a:ci"`,
		},
		{
			name:     "object in another project",
			projects: role("p, proj:team-a:ci, applications, get, team-b/*, allow"),
			want:     `project team-a role ci line 1 "p, proj:team-a:ci, applications, get, team-b/*, allow": object "team-b/*" is outside project team-a: want team-a/<application>`,
		},
		{
			name:     "object glob escaping the project",
			projects: role("p, proj:team-a:ci, applications, get, team-a*, allow"),
			want:     `project team-a role ci line 1 "p, proj:team-a:ci, applications, get, team-a*, allow": object "team-a*" is outside project team-a: want team-a/<application>`,
		},
		{
			name:     "object star",
			projects: role("p, proj:team-a:ci, logs, get, *, allow"),
			want:     `project team-a role ci line 1 "p, proj:team-a:ci, logs, get, *, allow": object "*" is outside project team-a: want team-a/<application>`,
		},
		{
			name:     "another project object",
			projects: role("p, proj:team-a:ci, projects, get, team-b, allow"),
			want:     `project team-a role ci line 1 "p, proj:team-a:ci, projects, get, team-b, allow": object "team-b" must be the project team-a`,
		},
		{
			name:     "global resource",
			projects: role("p, proj:team-a:ci, repositories, get, team-a/*, allow"),
			want:     `project team-a role ci line 1 "p, proj:team-a:ci, repositories, get, team-a/*, allow": resource "repositories" is not allowed in project roles: want applications, logs, applicationsets, exec or projects`,
		},
		{
			name:     "resource glob",
			projects: role("p, proj:team-a:ci, *, get, team-a/*, allow"),
			want:     `project team-a role ci line 1 "p, proj:team-a:ci, *, get, team-a/*, allow": resource "*" is not allowed in project roles: want applications, logs, applicationsets, exec or projects`,
		},
		{
			name:     "g line",
			projects: role("g, proj:team-a:ci, role:admin"),
			want:     `project team-a role ci line 1 "g, proj:team-a:ci, role:admin": project roles take only p lines; bind groups with the role's groups`,
		},
		{
			name:     "bad effect",
			projects: role("p, proj:team-a:ci, applications, get, team-a/*, maybe"),
			want:     `project team-a role ci line 1 "p, proj:team-a:ci, applications, get, team-a/*, maybe": unknown effect "maybe": want allow or deny`,
		},
		{
			name:     "two lines in one policy",
			projects: role("p, proj:team-a:ci, applications, get, team-a/*, allow\ng, x, role:admin"),
			want:     `project team-a role ci line 1 "p, proj:team-a:ci, applications, get, team-a/*, allow\ng, x, role:admin": a policy must be a single line`,
		},
		{
			name:     "empty role name",
			projects: []appspec.Project{{Name: "team-a", Roles: []appspec.ProjectRole{{}}}},
			want:     `project team-a: invalid role name ""`,
		},
		{
			name:     "empty group",
			projects: []appspec.Project{{Name: "team-a", Roles: []appspec.ProjectRole{{Name: "ci", Groups: []string{" "}}}}},
			want:     `project team-a role ci: empty group`,
		},
		{
			name:     "duplicate project",
			projects: []appspec.Project{{Name: "team-a"}, {Name: "team-a"}},
			want:     `duplicate project "team-a"`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(Config{}, tc.projects)
			if diff := cmp.Diff(tc.want, errString(err)); diff != "" {
				t.Errorf("New error (-want +got):\n%s", diff)
			}
		})
	}
}
