package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/windlass-cd/windlass/activities/notify"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/notifications"
)

func notificationsBody(t *testing.T, config string) string {
	t.Helper()
	b, err := json.Marshal(NotificationsConfig{Config: config})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const goodNotifications = `service.webhook.hook: |
  url: https://hooks.example.com
  bearerToken: $hook-token
template.failed: |
  message: "{{.app.metadata.name}} failed"
trigger.on-failed: |
  - when: app.status.operationState?.phase == "Failed"
    send: [failed]
`

// A configuration is validated when it is saved: a bad one is refused
// with every problem and leaves the saved one as it was.
func TestNotificationsConfig(t *testing.T) {
	en := newEnv(t)
	put := func(config string) response {
		return en.admin(request{method: http.MethodPut, path: "/api/v1/settings/notifications", body: notificationsBody(t, config)})
	}
	res := put(goodNotifications)
	res.wantStatus(t, http.StatusOK)
	var v NotificationsView
	res.decode(t, &v)
	if d := cmp.Diff([]NotificationService{{Name: "hook", Type: "webhook"}}, v.Services); d != "" {
		t.Error(d)
	}
	if !strings.Contains(strings.Join(v.Triggers, ","), "on-failed,on-health-degraded") {
		t.Errorf("triggers %v", v.Triggers)
	}
	for _, tt := range []struct{ name, config, detail string }{
		{"template does not parse", "template.t: |\n  message: '{{.app'\n", "template.t: message does not parse"},
		{"condition does not compile", "template.t: 'message: x'\ntrigger.on-x: |\n  - when: app.(\n    send: [t]\n", "trigger.on-x: [0].when does not compile"},
		{"unknown service", "subscriptions: |\n  - recipients: [pager:ops]\n", `unknown service "pager"`},
		{"recipients over the limit", "service.webhook.h: 'url: https://x.example.com'\nsubscriptions: |\n  - recipients: [" +
			strings.Repeat("h:a, ", 20) + "h:b]\n", "21 recipients, over the limit of 20"},
		{"literal credential", "service.slack: 'token: xoxb-1'\n", "token must be a $reference"},
		{"unsupported service", "service.pagerduty: 'serviceKeys: {}'\n", "the pagerduty service is not supported"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := put(tt.config)
			res.wantStatus(t, http.StatusUnprocessableEntity)
			if p := res.problem(t); !strings.Contains(p.Detail, tt.detail) {
				t.Errorf("detail %q lacks %q", p.Detail, tt.detail)
			}
		})
	}
	saved, err := en.secrets.Get(t.Context(), notify.ConfigSecretName)
	if err != nil || string(saved[notify.ConfigKey]) != goodNotifications {
		t.Errorf("saved config changed: %q, %v", saved[notify.ConfigKey], err)
	}
	get := en.admin(request{method: http.MethodGet, path: "/api/v1/settings/notifications"})
	get.wantStatus(t, http.StatusOK)
	var got NotificationsView
	get.decode(t, &got)
	if got.Config != goodNotifications {
		t.Errorf("GET config = %q", got.Config)
	}
	// A viewer reads it but cannot change it.
	en.do(request{method: http.MethodGet, path: "/api/v1/settings/notifications", token: en.tokens[viewerAccount]}).wantStatus(t, http.StatusOK)
	en.do(request{method: http.MethodPut, path: "/api/v1/settings/notifications", token: en.tokens[viewerAccount],
		body: notificationsBody(t, goodNotifications)}).wantStatus(t, http.StatusForbidden)
}

// A subscription annotation the saved configuration cannot deliver (an
// unknown trigger or service, too many recipients) is refused when the
// app or the project is saved, and nothing is saved; a good one is kept.
func TestNotificationSubscriptionsCheckedAtSave(t *testing.T) {
	const name = "subscribed-guestbook"
	startStubApps(t, appspec.DefaultProject, name)
	en := newEnv(t, func(o *Options) { o.TaskQueue = stubAppQueue })
	en.admin(request{method: http.MethodPut, path: "/api/v1/settings/notifications", body: notificationsBody(t, goodNotifications)}).wantStatus(t, http.StatusOK)
	var many []string
	for i := range notifications.MaxRecipients + 1 {
		many = append(many, fmt.Sprintf("r%d", i))
	}
	app := func(annotation, value string) string {
		return "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: " + name + "\n  annotations:\n    " +
			notifications.AnnotationPrefix + annotation + ": '" + value + "'\nspec:\n" +
			"  source: {repoURL: https://git.example.com/default/guestbook.git, path: .}\n  destination: {namespace: guestbook}\n"
	}
	for _, tt := range []struct{ name, annotation, value, detail string }{
		{"unknown trigger", "on-nothing.hook", "", `unknown trigger "on-nothing"`},
		{"unknown service", "on-failed.pager", "ops", `unknown service "pager"`},
		{"recipients over the limit", "on-failed.hook", strings.Join(many, ";"), "21 recipients, over the limit of 20"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := en.admin(request{method: http.MethodPost, path: "/api/v1/applications", body: app(tt.annotation, tt.value)})
			res.wantStatus(t, http.StatusUnprocessableEntity)
			if p := res.problem(t); !strings.Contains(p.Detail, tt.detail) || p.Field != "annotations" {
				t.Errorf("problem %+v, want one about %q", p, tt.detail)
			}
			en.admin(request{method: http.MethodGet, path: "/api/v1/applications/" + name}).wantStatus(t, http.StatusNotFound)
			proj := `{"name": "subscribed", "annotations": {"` + notifications.AnnotationPrefix + tt.annotation + `": "` + tt.value + `"}}`
			en.admin(request{method: http.MethodPost, path: "/api/v1/projects", body: proj}).wantStatus(t, http.StatusUnprocessableEntity)
			en.admin(request{method: http.MethodGet, path: "/api/v1/projects/subscribed"}).wantStatus(t, http.StatusNotFound)
		})
	}
	en.admin(request{method: http.MethodPost, path: "/api/v1/applications", body: app("on-failed.hook", "")}).wantStatus(t, http.StatusCreated)
}

// The notifications secret is changed by key and never read back: every
// answer names keys only. Bad input is refused with every problem, and
// the secret stays as it was.
func TestNotificationsSecret(t *testing.T) {
	en := newEnv(t)
	const slack, hook = "xoxb-secret-slack-value", "secret-hook-bearer"
	patch := func(body string) response {
		return en.admin(request{method: http.MethodPatch, path: "/api/v1/settings/notifications/secret", body: body})
	}
	keys := func(res response) []string {
		t.Helper()
		res.wantStatus(t, http.StatusOK)
		for _, v := range []string{slack, hook} {
			if strings.Contains(string(res.body), v) {
				t.Errorf("the answer holds a secret value: %s", res.body)
			}
		}
		var v NotificationsSecretView
		res.decode(t, &v)
		return v.Keys
	}
	if got := keys(en.admin(request{method: http.MethodGet, path: "/api/v1/settings/notifications/secret"})); len(got) != 0 {
		t.Errorf("keys before any: %v", got)
	}
	if d := cmp.Diff([]string{"hook-token", "slack-token"}, keys(patch(`{"data": {"slack-token": "`+slack+`", "hook-token": "`+hook+`"}}`))); d != "" {
		t.Errorf("keys (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"hook-token", "other"}, keys(patch(`{"data": {"slack-token": null, "other": "x"}}`))); d != "" {
		t.Errorf("keys after a removal (-want +got):\n%s", d)
	}
	for _, tt := range []struct{ name, body, detail string }{
		{"invalid key", `{"data": {"a/b": "v"}}`, `key "a/b"`},
		{"empty value", `{"data": {"k": ""}}`, `key "k": the value is empty`},
		{"no key", `{"data": {}}`, "data names no key"},
		{"every problem", `{"data": {"a b": "v", "k": ""}}`, `key "a b": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+'); key "k": the value is empty`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := patch(tt.body)
			res.wantStatus(t, http.StatusUnprocessableEntity)
			if p := res.problem(t); !strings.Contains(p.Detail, tt.detail) || p.Field != "data" {
				t.Errorf("problem %+v; want the field data and a detail with %q", p, tt.detail)
			}
		})
	}
	patch(`{"data": `).wantStatus(t, http.StatusBadRequest)
	saved, err := en.secrets.Get(t.Context(), notify.SecretName)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string][]byte{"hook-token": []byte(hook), "other": []byte("x")}, saved); d != "" {
		t.Errorf("saved secret (-want +got):\n%s", d)
	}
}
