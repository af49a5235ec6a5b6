package notify

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/windlass-cd/windlass/internal/notifications"
	"github.com/windlass-cd/windlass/internal/notifications/notifytest"
	"github.com/windlass-cd/windlass/internal/secretstore"
	"github.com/windlass-cd/windlass/internal/testbed"
)

// Credentials in the secret store; none may appear in an error.
var secrets = map[string][]byte{
	"hook-token":     []byte("hook-s3cret"),
	"hook-pass":      []byte("basic-s3cret"),
	"slack-token":    []byte("xoxb-s3cret"),
	"slack-hook-url": nil, // set per test: the receiver's URL
	"teams-url":      nil,
	"github-token":   []byte("ghp-s3cret"),
	"mail-user":      []byte("windlass"),
	"mail-pass":      []byte("mail-s3cret"),
}

type counter struct{ got []string }

func (c *counter) Notification(service, result string) { c.got = append(c.got, service+"/"+result) }

type fixture struct {
	http *notifytest.HTTP
	smtp *notifytest.SMTP
	cfg  *notifications.Config
	act  *Activities
	rec  *counter
	env  *testsuite.TestActivityEnvironment
}

// newFixture starts the receivers and the activities; each with may add
// services to the configuration and keys to the secret.
func newFixture(t *testing.T, with ...func(data map[string]string, secret map[string][]byte)) *fixture {
	t.Helper()
	f := &fixture{http: notifytest.NewHTTP(t), smtp: notifytest.NewSMTP(t, "windlass", "mail-s3cret"), rec: &counter{}}
	u := f.http.URL
	data := map[string]string{
		"service.webhook.hook":   fmt.Sprintf("url: %s/hook\nheaders:\n- name: X-Team\n  value: payments\n- name: Authorization\n  value: Bearer $hook-token\n", u),
		"service.webhook.basic":  fmt.Sprintf("url: %s/basic\nbasicAuth:\n  username: ops\n  password: $hook-pass\n", u),
		"service.slack":          fmt.Sprintf("token: $slack-token\napiURL: %s/slack/api/\nusername: windlass\n", u),
		"service.slack.incoming": "webhookURL: $slack-hook-url\n",
		"service.teams":          "recipientUrls:\n  ops: $teams-url\n",
		"service.github":         fmt.Sprintf("apiURL: %s/gh\ntoken: $github-token\n", u),
		"service.email":          fmt.Sprintf("host: %s\nport: %d\nfrom: windlass@example.com\nusername: $mail-user\npassword: $mail-pass\ninsecure_skip_verify: true\n", f.smtp.Host, f.smtp.Port),
		"template.failed": `message: "{{.app.metadata.name}} failed: {{.app.status.operationState.message}}"
title: "{{.app.metadata.name}} failed"
email:
  subject: "Sync of {{.app.metadata.name}} failed"
slack:
  attachments: '[{"title": "{{.app.metadata.name}}", "color": "danger"}]'
webhook:
  hook:
    method: PUT
    path: /apps/{{.app.metadata.name}}
    body: '{"app": "{{.app.metadata.name}}", "phase": "{{.app.status.operationState.phase}}"}'
  basic:
    body: plain
github:
  status:
    state: failure
    label: windlass/{{.app.metadata.name}}
    targetURL: https://cd.example.com/{{.app.metadata.name}}
  deployment:
    state: failure
    environment: production
    environmentURL: https://guestbook.example.com
teams:
  facts: '[{"name": "Revision", "value": "{{.app.status.sync.revision}}"}]'
`,
	}
	s := map[string][]byte{}
	for k, v := range secrets {
		s[k] = v
	}
	for _, w := range with {
		w(data, s)
	}
	cfg, err := notifications.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	f.cfg = cfg
	store := &secretstore.Memory{}
	s["slack-hook-url"] = []byte(u + "/slack-incoming/T000/B000/hooks3cret")
	s["teams-url"] = []byte(u + "/teams/workflows/abc?sig=teams-s3cret")
	if err := store.Put(t.Context(), SecretName, s); err != nil {
		t.Fatal(err)
	}
	f.act, err = New(StaticSource{Config: cfg}, store, slog.New(slog.NewTextHandler(io.Discard, nil)), WithRecorder(f.rec))
	if err != nil {
		t.Fatal(err)
	}
	var ts testsuite.WorkflowTestSuite
	f.env = ts.NewTestActivityEnvironment()
	f.act.Register(f.env)
	return f
}

func failedApp() notifications.App {
	return notifications.App{Name: "guestbook", Project: "default", Sync: "OutOfSync", Health: "Healthy", Revision: "abc123",
		RepoURL: "https://github.com/acme/guestbook.git",
		Operation: &notifications.Operation{ID: "sync/default/guestbook/1", Phase: "Failed", Message: "apply failed", Revision: "abc123",
			StartedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}}
}

func (f *fixture) deliver(t *testing.T, service, recipient string) error {
	t.Helper()
	svc := f.cfg.Services[service]
	d := notifications.Delivery{Key: "k-" + service, App: "default/guestbook", Trigger: "on-sync-failed", Template: "failed",
		Service: service, ServiceType: svc.Type, Recipient: recipient}
	_, err := f.env.ExecuteActivity(DeliverName, DeliverInput{Delivery: d, App: failedApp(), MaxAttempts: 3})
	return err
}

func jsonBody(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("body %q: %v", s, err)
	}
	return m
}

func TestDeliverHTTPServices(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		service, recipient string
		check              func(t *testing.T, reqs []notifytest.Request)
	}{
		{"hook", "", func(t *testing.T, r []notifytest.Request) {
			want := notifytest.Request{Method: "PUT", Path: "/hook/apps/guestbook", Body: `{"app": "guestbook", "phase": "Failed"}`}
			if d := cmp.Diff(want, r[0], cmpNoHeader); d != "" {
				t.Error(d)
			}
			for h, v := range map[string]string{"X-Team": "payments", "Authorization": "Bearer hook-s3cret", IdempotencyHeader: "k-hook"} {
				if got := r[0].Header.Get(h); got != v {
					t.Errorf("header %s = %q, want %q", h, got, v)
				}
			}
		}},
		{"basic", "", func(t *testing.T, r []notifytest.Request) {
			if r[0].Method != "POST" || r[0].Body != "plain" || r[0].Header.Get("Authorization") != "Basic b3BzOmJhc2ljLXMzY3JldA==" {
				t.Errorf("request %+v", r[0])
			}
		}},
		{"slack", "ops", func(t *testing.T, r []notifytest.Request) {
			if r[0].Path != "/slack/api/chat.postMessage" || r[0].Header.Get("Authorization") != "Bearer xoxb-s3cret" {
				t.Errorf("request %s %v", r[0].Path, r[0].Header)
			}
			want := map[string]any{"channel": "ops", "text": "guestbook failed: apply failed", "username": "windlass",
				"attachments": []any{map[string]any{"title": "guestbook", "color": "danger"}}}
			if d := cmp.Diff(want, jsonBody(t, r[0].Body)); d != "" {
				t.Error(d)
			}
		}},
		{"incoming", "", func(t *testing.T, r []notifytest.Request) {
			if r[0].Path != "/slack-incoming/T000/B000/hooks3cret" {
				t.Errorf("path %s", r[0].Path)
			}
			if got := jsonBody(t, r[0].Body)["text"]; got != "guestbook failed: apply failed" {
				t.Errorf("text %v", got)
			}
		}},
		{"teams", "ops", func(t *testing.T, r []notifytest.Request) {
			b := jsonBody(t, r[0].Body)
			card := b["attachments"].([]any)[0].(map[string]any)
			content := card["content"].(map[string]any)
			want := []any{
				map[string]any{"type": "TextBlock", "text": "guestbook failed", "weight": "Bolder", "size": "Medium", "wrap": true},
				map[string]any{"type": "TextBlock", "text": "guestbook failed: apply failed", "wrap": true},
				map[string]any{"type": "FactSet", "facts": []any{map[string]any{"title": "Revision", "value": "abc123"}}},
			}
			if b["type"] != "message" || card["contentType"] != "application/vnd.microsoft.card.adaptive" {
				t.Errorf("envelope %v", b)
			}
			if d := cmp.Diff(want, content["body"]); d != "" {
				t.Error(d)
			}
		}},
		{"github", "", func(t *testing.T, r []notifytest.Request) {
			var got []string
			for _, q := range r {
				got = append(got, q.Method+" "+q.Path)
				if q.Header.Get("Authorization") != "Bearer ghp-s3cret" {
					t.Errorf("%s: authorization %q", q.Path, q.Header.Get("Authorization"))
				}
			}
			want := []string{"POST /gh/repos/acme/guestbook/statuses/abc123", "GET /gh/repos/acme/guestbook/deployments",
				"POST /gh/repos/acme/guestbook/deployments", "POST /gh/repos/acme/guestbook/deployments/1/statuses"}
			if d := cmp.Diff(want, got); d != "" {
				t.Error(d)
			}
			st := jsonBody(t, r[0].Body)
			if st["state"] != "failure" || st["context"] != "windlass/guestbook" || st["target_url"] != "https://cd.example.com/guestbook" {
				t.Errorf("status %v", st)
			}
			dep := jsonBody(t, r[2].Body)
			if dep["ref"] != "abc123" || dep["environment"] != "production" || fmt.Sprint(dep["payload"]) != "map[windlassIdempotencyKey:k-github]" {
				t.Errorf("deployment %v", dep)
			}
			ds := jsonBody(t, r[3].Body)
			if ds["state"] != "failure" || ds["environment_url"] != "https://guestbook.example.com" {
				t.Errorf("deployment status %v", ds)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.service, func(t *testing.T) {
			before := len(f.http.Requests())
			if err := f.deliver(t, tt.service, tt.recipient); err != nil {
				t.Fatal(err)
			}
			tt.check(t, f.http.Requests()[before:])
		})
	}
}

// A retried delivery finds the deployment its first attempt created and
// does not create a second; another delivery (another key) creates its own.
func TestDeliverGitHubDeploymentOnce(t *testing.T) {
	f := newFixture(t)
	// Two attempts fail after the deployment was created, at its status.
	for i, status := range []int{502, 503} {
		f.http.FailNextAt("/deployments/1/statuses", 1, status)
		if err := f.deliver(t, "github", ""); err == nil {
			t.Fatalf("attempt %d succeeded despite the failed deployment status", i+1)
		}
	}
	if err := f.deliver(t, "github", ""); err != nil {
		t.Fatalf("the third attempt: %v", err)
	}
	var creates, statuses []string
	for _, r := range f.http.Requests() {
		switch {
		case r.Method == "POST" && strings.HasSuffix(r.Path, "/deployments"):
			creates = append(creates, r.Path)
		case r.Method == "POST" && strings.HasSuffix(r.Path, "/deployments/1/statuses"):
			statuses = append(statuses, r.Path)
		}
	}
	if len(creates) != 1 || len(statuses) != 3 {
		t.Fatalf("%d deployments created, %d deployment statuses posted; want 1 and 3 (two failed)", len(creates), len(statuses))
	}
	// A delivery with another key is another deployment.
	d := notifications.Delivery{Key: "k-other", App: "default/guestbook", Trigger: "on-sync-failed", Template: "failed",
		Service: "github", ServiceType: notifications.TypeGitHub}
	if _, err := f.env.ExecuteActivity(DeliverName, DeliverInput{Delivery: d, App: failedApp(), MaxAttempts: 3}); err != nil {
		t.Fatal(err)
	}
	if got := f.http.Requests(); got[len(got)-1].Path != "/gh/repos/acme/guestbook/deployments/2/statuses" {
		t.Errorf("last request %s %s, want the status of a second deployment", got[len(got)-1].Method, got[len(got)-1].Path)
	}
}

var cmpNoHeader = cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Header" }, cmp.Ignore())

func TestDeliverEmailSTARTTLSAndAuth(t *testing.T) {
	f := newFixture(t)
	if err := f.deliver(t, "email", "ops@example.com"); err != nil {
		t.Fatal(err)
	}
	m := f.smtp.Wait(t, 1, 5*time.Second)[0]
	if !m.TLS || m.User != "windlass" || m.From != "windlass@example.com" || !slicesEqual(m.To, []string{"ops@example.com"}) {
		t.Errorf("mail %+v", m)
	}
	for _, want := range []string{"Subject: Sync of guestbook failed\r\n", "Message-ID: <k-email@windlass>\r\n", "\r\n\r\nguestbook failed: apply failed"} {
		if !strings.Contains(m.Data, want) {
			t.Errorf("mail lacks %q:\n%s", want, m.Data)
		}
	}
}

func slicesEqual(a, b []string) bool { return cmp.Equal(a, b) }

// A 5xx is retried, a 4xx is not, and no error carries a credential.
func TestDeliverFailures(t *testing.T) {
	f := newFixture(t)
	for _, tt := range []struct {
		service   string
		status    int
		permanent bool
	}{
		{"hook", 500, false}, {"hook", 400, true}, {"incoming", 503, false}, {"teams", 404, true},
	} {
		t.Run(fmt.Sprintf("%s %d", tt.service, tt.status), func(t *testing.T) {
			f.http.FailNext(1, tt.status)
			err := f.deliver(t, tt.service, "ops")
			if err == nil {
				t.Fatal("delivery succeeded")
			}
			var ae *temporal.ApplicationError
			if !asAppErr(err, &ae) {
				t.Fatalf("error %v is not an application error", err)
			}
			if ae.NonRetryable() != tt.permanent {
				t.Errorf("non-retryable = %v, want %v (%v)", ae.NonRetryable(), tt.permanent, err)
			}
			for k, v := range secrets {
				if len(v) > 0 && strings.Contains(err.Error(), string(v)) {
					t.Errorf("error reveals %s: %v", k, err)
				}
			}
			for _, s := range []string{"hooks3cret", "teams-s3cret"} {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error reveals a webhook URL: %v", err)
				}
			}
		})
	}
	want := []string{"webhook/retried", "webhook/failed", "slack/retried", "teams/failed"}
	if d := cmp.Diff(want, f.rec.got); d != "" {
		t.Errorf("metrics (-want +got):\n%s", d)
	}
}

func TestDeliverRefusesPasswordWithoutTLS(t *testing.T) {
	f := newFixture(t)
	// A plain listener that offers no STARTTLS.
	srv := notifytest.NewPlainSMTP(t)
	cfg, err := notifications.Parse(map[string]string{
		"service.email":   fmt.Sprintf("host: 127.0.0.1\nport: %d\nfrom: a@example.com\nusername: $mail-user\npassword: $mail-pass\n", srv.Port),
		"template.failed": "message: x",
	})
	if err != nil {
		t.Fatal(err)
	}
	f.cfg = cfg
	f.act.cfg = StaticSource{Config: cfg}
	err = f.deliver(t, "email", "ops@example.com")
	if err == nil || !strings.Contains(err.Error(), "refusing to send the password in clear") {
		t.Fatalf("err = %v", err)
	}
	if n := len(srv.Mails()); n != 0 {
		t.Errorf("%d mails sent", n)
	}
}

func asAppErr(err error, target **temporal.ApplicationError) bool { return errors.As(err, target) }

// A GitHub service with a GitHub App posts with an installation token,
// minted once and reused; a wrong installation fails for good, naming the
// app and the installation and never the key.
func TestDeliverGitHubApp(t *testing.T) {
	var next http.Handler
	gh := testbed.StartGitHubApps(testbed.GitHubAppsOptions{Next: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r)
	})})
	t.Cleanup(gh.Close)
	key, err := gh.NewApp(9, 90)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(data map[string]string, secret map[string][]byte) {
		svc := "enterpriseBaseURL: " + gh.EnterpriseBaseURL() + "\nappID: 9\nprivateKey: $github-app-key\n"
		data["service.github.app"] = svc + "installationID: '90'\n"
		data["service.github.wrong"] = svc + "installationID: 91\n"
		secret["github-app-key"] = []byte(key)
	})
	next = f.http.Config.Handler
	for range 2 {
		if err := f.deliver(t, "app", ""); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, q := range f.http.Requests() {
		got = append(got, q.Method+" "+q.Path)
		if tok, _ := strings.CutPrefix(q.Header.Get("Authorization"), "Bearer "); !gh.TokenValid(tok) {
			t.Errorf("%s: authorization %q is not an installation token", q.Path, q.Header.Get("Authorization"))
		}
	}
	if len(got) != 7 || got[0] != "POST /api/v3/repos/acme/guestbook/statuses/abc123" {
		t.Errorf("requests = %v, want the status and deployment calls of two deliveries under /api/v3", got)
	}
	if n := gh.Exchanges(); n != 1 {
		t.Errorf("token exchanges = %d, want 1 for two deliveries", n)
	}

	err = f.deliver(t, "wrong", "")
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || !app.NonRetryable() || app.Type() != ErrTypeDelivery {
		t.Fatalf("deliver with a wrong installation = %v, want a permanent %s", err, ErrTypeDelivery)
	}
	if msg := err.Error(); !strings.Contains(msg, "GitHub App 9 installation 91") || strings.Contains(msg, strings.Split(key, "\n")[1]) {
		t.Errorf("error %q: want the app and installation named, no key", msg)
	}
}
