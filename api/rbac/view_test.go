package rbac

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/windlass-cd/windlass/internal/appspec"
)

func TestView(t *testing.T) {
	e, err := New(Config{
		PolicyCSV:   "# comment\np, role:ci, applications, sync, default/*, allow\ng, alice, role:ci\n",
		DefaultRole: "role:readonly",
	}, []appspec.Project{{Name: "team-a", Roles: []appspec.ProjectRole{{Name: "deploy", Policies: []string{"p, proj:team-a:deploy, applications, get, team-a/*, allow"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	got := e.View()
	want := PolicyView{
		Builtin:     builtinRules.text(),
		Policy:      "p, role:ci, applications, sync, default/*, allow\ng, alice, role:ci\n",
		Projects:    "p, proj:team-a:deploy, applications, get, team-a/*, allow\n",
		DefaultRole: "role:readonly",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("View (-want +got):\n%s", diff)
	}
	for _, line := range []string{"p, role:admin, *, *, *, allow\n", "g, admin, role:admin\n"} {
		if !strings.Contains(got.Builtin, line) {
			t.Errorf("the built-in policy lacks %q:\n%s", line, got.Builtin)
		}
	}
}
