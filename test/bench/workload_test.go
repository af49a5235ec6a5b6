package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/windlass-cd/windlass/internal/appset"
	"github.com/windlass-cd/windlass/internal/appspec"
)

// B1's apps are what the issue asks: a directory each, their own
// namespace, automated prune and selfHeal, CreateNamespace; B1-set's set
// makes the same apps from apps/*.
func TestWorkloadManifests(t *testing.T) {
	f := dirPerApp.newFleet(30, 1)
	name := f.names[7]
	app, err := appspec.ParseApplication([]byte(argoAppYAML(name, "http://127.0.0.1:1/b1.git", appDir("app-0007"))))
	if err != nil {
		t.Fatal(err)
	}
	got := []any{app.Name, app.Source.Path, app.Destination.Namespace, app.SyncPolicy.Automated, app.SyncPolicy.SyncOptions}
	want := []any{"b1dn30r1-app-0007", "apps/app-0007", "b1dn30r1-app-0007", &appspec.Automated{Prune: true, SelfHeal: true}, []string{"CreateNamespace=true"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("B1 app (-want +got):\n%s", d)
	}

	s := appSet.newFleet(30, 1)
	set, err := appset.Parse([]byte(dirSetYAML(s.set, "http://127.0.0.1:1/b1.git", strings.TrimSuffix(s.prefix, "app-"))))
	if err != nil {
		t.Fatal(err)
	}
	if g := set.Spec.Generators[0].Git; g == nil || len(g.Directories) != 1 || g.Directories[0].Path != "apps/*" {
		t.Errorf("generator %+v, want git directories apps/*", set.Spec.Generators[0])
	}
	// {{path.basename}} is app-0007: the set's app 7 is named like the
	// fleet's.
	meta, _ := set.Spec.Template["metadata"].(map[string]any)
	if got := strings.ReplaceAll(meta["name"].(string), "{{path.basename}}", "app-0007"); got != s.names[7] {
		t.Errorf("the set names app 7 %q, the fleet %q", got, s.names[7])
	}
}

func TestLabel(t *testing.T) {
	for _, tc := range []struct {
		variant     variant
		name, label string
	}{
		{sqlite, "B1.N100.seconds", "B1.N100.seconds"},
		{pg2, "B1.N100.seconds", "B1.pg2.N100.seconds"},
		{pg1, "B1-set.N10.set_history_events", "B1-set.pg1.N10.set_history_events"},
		{pg1, "B4", "B4.pg1"},
	} {
		r := &results{variant: tc.variant}
		if got := r.label(tc.name); got != tc.label {
			t.Errorf("%s on %s: %q, want %q", tc.name, tc.variant, got, tc.label)
		}
	}
}

func TestParseVariants(t *testing.T) {
	got, err := parseVariants("sqlite, PG1,pg2")
	if d := cmp.Diff([]variant{sqlite, pg1, pg2}, got); err != nil || d != "" {
		t.Errorf("parseVariants: %v (-want +got):\n%s", err, d)
	}
	for _, bad := range []string{"", "pg3", "sqlite,,pg1", "postgres"} {
		if _, err := parseVariants(bad); err == nil {
			t.Errorf("parseVariants(%q): no error", bad)
		}
	}
}
