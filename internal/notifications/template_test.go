package notifications

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s (-want +got):\n%s", name, d)
	}
}

func failedApp() App {
	o := op("Failed")
	o.FinishedAt = t0.Add(time.Minute)
	return App{Name: "guestbook", Project: "payments", Sync: "OutOfSync", Health: "Healthy", Revision: "abc123",
		RepoURL: "git@github.com:acme/guestbook.git", Operation: o}
}

// The imported template renders every per-service field.
func TestRenderGolden(t *testing.T) {
	c, err := ParseFile("testdata/argocd-notifications-cm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"sync-failed", BuiltinTemplate(TriggerSyncFailed), BuiltinTemplate(TriggerDeployed)} {
		r, err := c.Templates[name].Render(Vars{App: failedApp(), Context: c.Context, ServiceType: TypeSlack, Recipient: "ops"})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.MarshalIndent(r, "", "  ")
		golden(t, "render-"+name+".json", append(b, '\n'))
	}
}

func TestRenderFunctions(t *testing.T) {
	tests := []struct{ tmpl, want string }{
		{`{{ .app.metadata.name | upper }}`, "GUESTBOOK"},
		{`{{ call .strings.ReplaceAll .app.metadata.name "book" "-" }}`, "guest-"},
		{`{{ (call .time.Parse .app.status.operationState.startedAt).Format "2006-01-02" }}`, "2026-01-02"},
		{`{{ call .repo.RepoURLToHTTPS .app.spec.source.repoURL }}`, "https://github.com/acme/guestbook"},
		{`{{ call .repo.FullNameByRepoURL .app.spec.source.repoURL }}`, "acme/guestbook"},
		{`{{ .app.status.sync.revision | trunc 3 }}/{{ .recipient }}/{{ .serviceType }}`, "abc/ops/email"},
		{`{{ .app.metadata.labels.missing }}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.tmpl, func(t *testing.T) {
			tp, err := parseTemplate("t", "message: '"+strings.ReplaceAll(tt.tmpl, "'", "''")+"'")
			if err != nil {
				t.Fatal(err)
			}
			r, err := tp.Render(Vars{App: failedApp(), ServiceType: TypeEmail, Recipient: "ops"})
			if err != nil {
				t.Fatal(err)
			}
			if r.Message != tt.want {
				t.Errorf("got %q, want %q", r.Message, tt.want)
			}
		})
	}
}

// Templates cannot read the worker's environment.
func TestRenderHasNoEnv(t *testing.T) {
	if _, err := parseTemplate("t", `message: '{{ env "HOME" }}'`); err == nil || !strings.Contains(err.Error(), `function "env" not defined`) {
		t.Errorf("env: %v", err)
	}
}
