package cli

import (
	"testing"
	"time"

	"github.com/windlass-cd/windlass/cmd/windlass/internal/cmdline"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

func TestNotificationsCommands(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	view := workflows.AppView{
		Spec:   appspec.Application{Name: "web", Project: "default", Source: appspec.Source{RepoURL: "https://github.com/acme/web.git", Path: "deploy"}},
		Status: workflows.AppStatus{Sync: appspec.SyncOutOfSync, Health: appspec.HealthHealthy, SHA: "abc123"},
		History: []workflows.SyncSummary{{ID: "sync/default/web/3", SHA: "abc123", Phase: workflows.PhaseFailed,
			Message: "apply failed", StartedAt: at, FinishedAt: at.Add(time.Minute)}},
	}
	config := map[string]any{"config": "service.webhook.hook: 'url: https://hooks.example.com'\n" +
		"template.failed: |\n  message: '{{.app.metadata.name}} failed: {{.app.status.operationState.message}}'\n" +
		"  webhook:\n    hook:\n      method: POST\n      body: '{\"sha\": \"{{.app.status.sync.revision}}\"}'\n"}
	routes := map[string][]reply{
		"GET /api/v1/applications/web":       ok(view),
		"GET /api/v1/settings/notifications": ok(config),
	}
	recs := []workflows.NotificationRecord{
		{Time: at, Key: "k1", Trigger: "on-sync-failed", Template: "app-sync-failed", Service: "hook", Result: workflows.NotificationSent, Attempts: 4},
		{Time: at, Key: "k2", Trigger: "on-sync-failed", Template: "app-sync-failed", Service: "slack", Recipient: "ops", Result: workflows.NotificationFailed,
			Attempts: 0, Error: "chat.postMessage: channel_not_found"},
	}
	want := []string{"GET /api/v1/applications/web", "GET /api/v1/settings/notifications"}
	runCases(t, []cliCase{
		{name: "notifications preview", args: "notifications preview --app web --template failed", routes: routes, want: want},
		{name: "notifications preview file", args: "notifications preview --app web --template app-sync-failed --config-map $DIR/cm.yaml -o json",
			files:  map[string]string{"cm.yaml": "kind: ConfigMap\ndata: {}\n"},
			routes: routes, want: []string{"GET /api/v1/applications/web"}},
		{name: "notifications preview unknown", args: "notifications preview --app web --template nope", routes: routes, want: want, code: cmdline.ExitError},
		{name: "notifications trigger run", args: "notifications trigger run --app web --trigger on-sync-failed", routes: routes, want: want},
		{name: "notifications trigger run not fired", args: "notifications trigger run --app web --trigger on-deployed", routes: routes, want: want},
		{name: "notifications history", args: "notifications history web",
			routes: map[string][]reply{"GET /api/v1/applications/web/notifications": ok(recs)},
			want:   []string{"GET /api/v1/applications/web/notifications"}},
	})
}
