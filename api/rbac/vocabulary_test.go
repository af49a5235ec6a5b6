package rbac

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/windlass-cd/windlass/internal/appspec"
)

// unservedCSV uses only Argo CD vocabulary Windlass does not serve, on
// objects that match everything.
const unservedCSV = `
p, u, certificates, *, *, allow
p, u, exec, create, */*, allow
p, u, extensions, invoke, *, allow
p, u, *, invoke, *, allow
p, u, applications, get, team-a/web, allow
`

// captureLog returns a logger and the attributes of what it logged.
func captureLog(t *testing.T) (*slog.Logger, func() []map[string]any) {
	t.Helper()
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	return log, func() []map[string]any {
		var out []map[string]any
		dec := json.NewDecoder(&buf)
		for dec.More() {
			var m map[string]any
			if err := dec.Decode(&m); err != nil {
				t.Fatalf("decode log: %v", err)
			}
			delete(m, "time")
			out = append(out, m)
		}
		return out
	}
}

func TestUnservedRulesGrantNothing(t *testing.T) {
	log, logged := captureLog(t)
	e := newEnforcer(t, Config{PolicyCSV: unservedCSV, Logger: log}, nil)
	u := Subject{Name: "u"}
	objects := map[string]string{
		ResourceApplications: "team-a/api", ResourceLogs: "team-a/api", ResourceProjects: "team-a",
		ResourceRepositories: "https://github.com/acme/app.git", ResourceClusters: "https://k8s.example.com",
		ResourceAccounts: "u", ResourceApplicationSets: "team-a/set", ResourceGPGKeys: "4AEE18F83AFDEB23",
	}
	acts := append(servedActions[:len(servedActions):len(servedActions)], "action/apps/Deployment/restart")
	for _, res := range servedResources {
		for _, act := range acts {
			if e.Enforce(u, res, act, objects[res]) {
				t.Errorf("Enforce(u, %s, %s, %s) = true, want false", res, act, objects[res])
			}
		}
	}
	// The one served rule of the policy is in force.
	if !e.Enforce(u, ResourceApplications, ActionGet, "team-a/web") {
		t.Error("Enforce(u, applications, get, team-a/web) = false, want true")
	}

	warn := func(line int, res, act, obj string) map[string]any {
		return map[string]any{
			"level": "WARN", "msg": msgUnenforced, "source": policyCSVName, "line": float64(line),
			"rule": fmt.Sprintf("p, u, %s, %s, %s, allow", res, act, obj), "resource": res, "action": act,
		}
	}
	want := []map[string]any{
		warn(2, "certificates", "*", "*"),
		warn(3, "exec", "create", "*/*"), warn(4, "extensions", "invoke", "*"),
		warn(5, "*", "invoke", "*"),
	}
	if diff := cmp.Diff(want, logged()); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

func TestSubresourceActions(t *testing.T) {
	const policy = `
p, u, applications, update/*, team-a/*, allow
p, u, applications, delete/*/Pod/*/*, team-a/*, allow
p, u, applications, update/apps/Deployment/prod/db, team-a/web, deny
p, plain, applications, update, */*, allow
p, plain, applications, delete, */*, allow
`
	e := newEnforcer(t, Config{PolicyCSV: policy}, nil)
	tests := []struct {
		sub, act, obj string
		want          bool
	}{
		{"u", "update/apps/Deployment/prod/web", "team-a/web", true},
		{"u", "update//ConfigMap/prod/cfg", "team-a/web", true},
		{"u", "update/apps/Deployment/prod/db", "team-a/web", false},
		{"u", "update/apps/Deployment/prod/web", "team-b/web", false},
		{"u", "delete//Pod/prod/web-1", "team-a/web", true},
		{"u", "delete/apps/Deployment/prod/web", "team-a/web", false},
		// As in Argo CD 3, the plain actions do not reach the resources.
		{"plain", "update/apps/Deployment/prod/web", "team-a/web", false},
		{"plain", "delete//Pod/prod/web-1", "team-a/web", false},
		{"admin", "delete//Pod/prod/web-1", "team-a/web", true},
	}
	for _, tt := range tests {
		if got := e.Enforce(Subject{Name: tt.sub}, ResourceApplications, tt.act, tt.obj); got != tt.want {
			t.Errorf("Enforce(%s, applications, %s, %s) = %v, want %v", tt.sub, tt.act, tt.obj, got, tt.want)
		}
	}
}

func TestUnservedRulesLoggedOnce(t *testing.T) {
	log, logged := captureLog(t)
	projects := []appspec.Project{{Name: "team-a", Roles: []appspec.ProjectRole{{
		Name:     "ci",
		Policies: []string{"p, proj:team-a:ci, exec, create, team-a/*, allow", "p, proj:team-a:ci, applications, get, team-a/*, allow"},
	}}}}
	e := newEnforcer(t, Config{PolicyCSV: "p, u, certificates, get, *, allow\np, u, clusters, get, *, allow", Logger: log}, projects)
	if err := e.SetProjects(projects); err != nil {
		t.Fatalf("SetProjects: %v", err)
	}
	var got []string
	for _, m := range logged() {
		got = append(got, fmt.Sprintf("%v line %v: %v", m["source"], m["line"], m["resource"]))
	}
	want := []string{"policy.csv line 1: certificates", "project team-a role ci line 1: exec"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

func TestMatchMode(t *testing.T) {
	const policy = `
p, u, applications, get, team-a/.*, allow
p, u, applications, sync, ^team-(a|b)/web$, allow
p, u, clusters, get, https://*.example.com, allow
p, u, applications, sync, team-b/web, deny
`
	u, ro := Subject{Name: "u"}, Subject{Name: "ro"}
	ci := Subject{Name: ProjectRoleSubject("team-a", "ci")}
	tests := []struct {
		sub           Subject
		res, act, obj string
		glob, regex   bool
	}{
		{u, ResourceApplications, ActionGet, "team-a/web", false, true},
		{u, ResourceApplications, ActionGet, "team-a/.*", true, true},
		{u, ResourceApplications, ActionGet, "team-b/web", false, false},
		// Casbin's regexMatch is unanchored, as in Argo CD.
		{u, ResourceApplications, ActionGet, "xteam-a/web", false, true},
		{u, ResourceApplications, ActionSync, "team-a/web", false, true},
		{u, ResourceApplications, ActionSync, "team-a/web2", false, false},
		{u, ResourceApplications, ActionSync, "team-b/web", false, false},
		{u, ResourceClusters, ActionGet, "https://prod.example.com", true, false},
		// Built-in and project role rules stay globs.
		{ro, ResourceApplications, ActionGet, "team-c/api", true, true},
		{ro, ResourceClusters, ActionGet, "https://prod.example.com", true, true},
		{ci, ResourceApplications, ActionSync, "team-a/web", true, true},
		{ci, ResourceApplications, ActionSync, "team-ab/web", false, false},
	}
	enf := map[string]*Enforcer{}
	for _, mode := range []string{"", MatchRegex} {
		enf[mode] = newEnforcer(t, Config{PolicyCSV: policy + "g, ro, role:readonly", MatchMode: mode}, matrixProjects())
	}
	want, got := map[string]bool{}, map[string]bool{}
	for _, tc := range tests {
		for mode, w := range map[string]bool{"": tc.glob, MatchRegex: tc.regex} {
			key := fmt.Sprintf("mode=%q %s %s %s %s", mode, tc.sub.Name, tc.res, tc.act, tc.obj)
			want[key] = w
			got[key] = enf[mode].Enforce(tc.sub, tc.res, tc.act, tc.obj)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Enforce (-want +got):\n%s", diff)
	}
}
