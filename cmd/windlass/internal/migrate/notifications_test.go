package migrate

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/windlass-cd/windlass/internal/notifications"
)

// Credential values of the notifications fixture: none may show in a plan.
const (
	secretSlack = "xoxb-slack-token-value"
	secretHook  = "hook-bearer-value"
)

// argoNotifications is an argocd-notifications-cm as a team might have
// it, with keys Windlass cannot take: an unsupported service, a literal
// credential, and keys that need them.
func argoNotifications() (map[string]string, map[string][]byte) {
	return map[string]string{
			"service.slack":             "token: $slack-token\n",
			"service.webhook.hook":      "url: https://hooks.example.com/deploy\nbearerToken: $hook-token\n",
			"service.pagerduty":         "serviceKeys:\n  ops: $pd-key\n",
			"service.teams":             "recipientUrls:\n  ops: https://example.webhook.office.com/webhookb2/literal\n",
			"template.app-sync-failed":  "message: |\n  {{.app.metadata.name}} failed to sync: {{.app.status.operationState.message}}\nslack:\n  attachments: '[]'\n",
			"template.app-deployed":     "message: '{{.app.metadata.name}} is running {{.app.status.sync.revision}}'\n",
			"trigger.on-sync-failed":    "- when: app.status.operationState.phase in ['Error', 'Failed']\n  send: [app-sync-failed]\n",
			"trigger.on-deployed":       "- when: app.status.operationState.phase in ['Succeeded'] and app.status.health.status == 'Healthy'\n  oncePer: app.status.sync.revision\n  send: [app-deployed]\n",
			"subscriptions":             "- recipients: [slack:ops, hook:deploys]\n  triggers: [on-sync-failed, on-deployed]\n  selector: tier=prod\n",
			"defaultTriggers":           "- on-sync-failed\n",
			"defaultTriggers.pagerduty": "- on-sync-failed\n",
			"context":                   "argocdUrl: https://windlass.example.com\n",
		}, map[string][]byte{
			"slack-token": []byte(secretSlack),
			"hook-token":  []byte(secretHook),
		}
}

// migrate argocd imports Argo CD Notifications into the notifications
// settings, refusing by key what it cannot map, and a second run finds
// everything in place.
func TestPlanNotifications(t *testing.T) {
	cm, sec := argoNotifications()
	fake := newFake()
	fake.notifySecret["other"] = []byte("kept")
	for _, step := range []string{"first", "second"} {
		t.Run(step, func(t *testing.T) {
			plan, err := Build(t.Context(), &Source{Namespace: "argocd", Notifications: cm, NotificationsSecret: sec}, fake, Options{})
			if err != nil {
				t.Fatal(err)
			}
			plan.Apply(t.Context(), fake)
			var out bytes.Buffer
			plan.Print(&out)
			for _, v := range []string{secretSlack, secretHook} {
				if strings.Contains(out.String(), v) {
					t.Errorf("the plan shows a secret value %q", v)
				}
			}
			golden(t, filepath.Join(testdataDir, "notifications_plan_"+step+".golden"), out.Bytes())
			if n := plan.Refused(); n != 3 {
				t.Errorf("Refused() = %d, want the 3 keys Windlass cannot take", n)
			}
		})
	}
	golden(t, filepath.Join(testdataDir, "notifications_config.golden"), []byte(fake.notifyConfig))
	// What was saved is what the API and the workers accept.
	data, err := notifications.DecodeData([]byte(fake.notifyConfig))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := notifications.Parse(data)
	if err != nil {
		t.Fatalf("the saved configuration does not parse: %v", err)
	}
	if d := cmp.Diff([]string{"hook", "slack"}, sortedKeys(cfg.Services)); d != "" {
		t.Errorf("services (-want +got):\n%s", d)
	}
	if len(cfg.Subscriptions) != 1 || cfg.Subscriptions[0].Selects(map[string]string{"tier": "dev"}) {
		t.Errorf("subscriptions %+v, want the one for tier=prod", cfg.Subscriptions)
	}
	want := map[string][]byte{"slack-token": []byte(secretSlack), "hook-token": []byte(secretHook), "other": []byte("kept")}
	if d := cmp.Diff(want, fake.notifySecret); d != "" {
		t.Errorf("notifications secret (-want +got):\n%s", d)
	}
}

// Bad input: a configuration none of which Windlass can take saves
// nothing, and a failed save fails its row only.
func TestPlanNotificationsRefused(t *testing.T) {
	for _, tt := range []struct {
		name string
		cm   map[string]string
		fail string
		want []Row
	}{
		{
			name: "nothing to map",
			cm:   map[string]string{"service.opsgenie": "apiUrl: x\n", "trigger.on-x": "- when: 'true'\n  send: [missing]\n"},
			want: []Row{
				{Kind: "Notifications", Name: "argocd-notifications-cm service.opsgenie", Action: ActionRefuse, Reason: "the opsgenie service is not supported (supported: email, github, slack, teams, webhook)"},
				{Kind: "Notifications", Name: "argocd-notifications-cm trigger.on-x", Action: ActionRefuse, Reason: `[0].send: unknown template "missing"`},
			},
		},
		{
			name: "save refused",
			cm:   map[string]string{"context": "a: b\n"},
			fail: NotificationsCMName,
			want: []Row{{Kind: "Notifications", Name: "argocd-notifications-cm", Action: ActionFailed, Reason: errRefused.Error()}},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFake()
			fake.fail = tt.fail
			plan, err := Build(t.Context(), &Source{Namespace: "argocd", Notifications: tt.cm}, fake, Options{})
			if err != nil {
				t.Fatal(err)
			}
			plan.Apply(t.Context(), fake)
			if d := cmp.Diff(tt.want, plan.Rows, cmp.AllowUnexported(Row{}), cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".apply" }, cmp.Ignore())); d != "" {
				t.Errorf("rows (-want +got):\n%s", d)
			}
			if fake.notifyConfig != "" {
				t.Errorf("saved %q, want nothing", fake.notifyConfig)
			}
		})
	}
}
