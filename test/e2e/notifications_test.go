package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/windlass-cd/windlass/activities/notify"
	"github.com/windlass-cd/windlass/api"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/notifications"
	"github.com/windlass-cd/windlass/internal/notifications/notifytest"
	"github.com/windlass-cd/windlass/workflows"
)

// clusterRoleYAML is a cluster-scoped object: a project without a
// cluster resource whitelist refuses it, so its sync fails.
const clusterRoleYAML = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: %s
rules: []
`

// notifyConfig is the configuration of the e2e receivers: every service
// points at the test's own loopback servers.
func notifyConfig(h, flaky *notifytest.HTTP, m *notifytest.SMTP) string {
	return fmt.Sprintf(`service.webhook.hook: |
  url: %[1]s/hook
  bearerToken: $hook-token
service.webhook.flaky: |
  url: %[2]s/flaky
service.slack: |
  token: $slack-token
  apiURL: %[1]s/slack/
service.email.mail: |
  host: %[3]s
  port: %[4]d
  from: windlass@example.com
  username: windlass
  password: $mail-password
  insecure_skip_verify: true
service.teams: |
  recipientUrls:
    ops: $teams-url
service.github: |
  apiURL: %[1]s/gh
  token: $github-token
template.app-sync-failed: |
  message: "{{.app.metadata.name}} sync failed: {{.app.status.operationState.message}}"
  email:
    subject: "[windlass] {{.app.metadata.name}} sync failed"
  slack:
    attachments: '[{"title": "{{.app.metadata.name}}", "color": "danger"}]'
  webhook:
    hook:
      method: POST
      path: /failed/{{.app.metadata.name}}
      body: '{"app": "{{.app.metadata.name}}", "phase": "{{.app.status.operationState.phase}}"}'
  github:
    repoURLPath: "https://github.com/acme/{{.app.metadata.name}}.git"
    status:
      state: failure
      label: windlass/{{.app.metadata.name}}
  teams:
    title: "{{.app.metadata.name}} sync failed"
template.app-deployed: |
  message: "{{.app.metadata.name}} runs {{.app.status.sync.revision}}"
  webhook:
    hook:
      method: POST
      path: /deployed/{{.app.metadata.name}}
      body: '{"app": "{{.app.metadata.name}}", "revision": "{{.app.status.sync.revision}}"}'
    flaky:
      method: POST
      path: /deployed/{{.app.metadata.name}}
      body: '{"revision": "{{.app.status.sync.revision}}"}'
`, h.URL, flaky.URL, m.Host, m.Port)
}

// notifySecrets are the services' credentials, unique to this run.
func notifySecrets(h *notifytest.HTTP) map[string][]byte {
	n := time.Now().UnixNano()
	return map[string][]byte{
		"hook-token":    fmt.Appendf(nil, "ntf-hook-%d-do-not-leak", n),
		"slack-token":   fmt.Appendf(nil, "ntf-slack-%d-do-not-leak", n),
		"mail-password": fmt.Appendf(nil, "ntf-mail-%d-do-not-leak", n),
		"github-token":  fmt.Appendf(nil, "ntf-github-%d-do-not-leak", n),
		"teams-url":     fmt.Appendf(nil, "%s/teams/workflow?sig=ntf-teams-%d-do-not-leak", h.URL, n),
	}
}

// paths returns the requests to a path prefix.
func paths(reqs []notifytest.Request, prefix string) []notifytest.Request {
	var out []notifytest.Request
	for _, r := range reqs {
		if strings.HasPrefix(r.Path, prefix) {
			out = append(out, r)
		}
	}
	return out
}

// The proof cases of notifications, with real receivers: a failed sync
// sends one on-sync-failed to each subscribed service; a sync of a new
// revision sends on-deployed once and a second reconcile nothing; a
// receiver that fails three times gets the message once, with the
// attempts in the history; no credential reaches a history or the logs.
func TestNotificationsDelivered(t *testing.T) {
	recv, flaky := notifytest.NewHTTP(t), notifytest.NewHTTP(t)
	mail := notifytest.NewSMTP(t, "windlass", "")
	secrets := notifySecrets(recv)
	mail.Password = string(secrets["mail-password"])
	if err := bed.store.Put(t.Context(), notify.SecretName, secrets); err != nil {
		t.Fatal(err)
	}
	var view api.NotificationsView
	if code := call(t, http.MethodPut, "/api/v1/settings/notifications", api.NotificationsConfig{Config: notifyConfig(recv, flaky, mail)}, &view); code != http.StatusOK {
		t.Fatalf("save config: status %d", code)
	}
	// Bad input is refused when saved, and the saved configuration stays.
	var pr api.Problem
	if code := call(t, http.MethodPut, "/api/v1/settings/notifications", api.NotificationsConfig{Config: "template.x: |\n  message: '{{.app'\n"}, &pr); code != http.StatusUnprocessableEntity ||
		!strings.Contains(pr.Detail, "template.x: message does not parse") {
		t.Fatalf("bad template: status %d %+v", code, pr)
	}

	// 1. A failed sync.
	proj := uniq("ntf")
	if code := call(t, http.MethodPost, "/api/v1/projects", map[string]any{"name": proj, "sourceRepos": []string{"*"},
		"destinations": []map[string]string{{"server": "*", "namespace": "*"}}}, nil); code != http.StatusCreated {
		t.Fatalf("create project: status %d", code)
	}
	failName, failNS := uniq("ntf-fail"), uniq("ntf-fail")
	repoURL, work := newRepo(t, failName)
	files := guestbookFiles("gcr.io/heptio-images/ks-guestbook-demo:0.1")
	files["guestbook/clusterrole.yaml"] = fmt.Sprintf(clusterRoleYAML, failName)
	push(t, work, files)
	body := appBody(failName, repoURL, "guestbook", failNS)
	body["project"] = proj
	p := notifications.AnnotationPrefix + notifications.TriggerSyncFailed + "."
	body["annotations"] = map[string]string{p + "hook": "", p + "slack": "ops", p + "mail": "ops@example.com", p + "teams": "ops", p + "github": ""}
	if code := call(t, http.MethodPost, "/api/v1/applications", body, nil); code != http.StatusCreated {
		t.Fatalf("create: status %d", code)
	}
	var res workflows.SyncResult
	if code := call(t, http.MethodPost, "/api/v1/applications/"+failName+"/sync?project="+proj, nil, &res); code != http.StatusConflict || res.Phase != workflows.PhaseFailed {
		t.Fatalf("sync: status %d, %s %s", code, res.Phase, res.Message)
	}
	eventually(t, time.Minute, "on-sync-failed at every service", func() (bool, string) {
		r := recv.Requests()
		n := []int{len(paths(r, "/hook/failed/")), len(paths(r, "/slack/chat.postMessage")), len(paths(r, "/teams/")), len(paths(r, "/gh/repos/")), len(mail.Mails())}
		var recs []workflows.NotificationRecord
		call(t, http.MethodGet, "/api/v1/applications/"+failName+"/notifications?project="+proj, nil, &recs)
		return fmt.Sprint(n) == "[1 1 1 1 1]", fmt.Sprintf("hook, slack, teams, github, mail: %v; records %+v", n, recs)
	})
	r := recv.Requests()
	hook := paths(r, "/hook/failed/")[0]
	if want := fmt.Sprintf(`{"app": "%s", "phase": "Failed"}`, failName); hook.Body != want || hook.Header.Get("Authorization") != "Bearer "+string(secrets["hook-token"]) || hook.Header.Get(notify.IdempotencyHeader) == "" {
		t.Errorf("webhook %s %q %v", hook.Path, hook.Body, hook.Header)
	}
	var slack map[string]any
	_ = json.Unmarshal([]byte(paths(r, "/slack/chat.postMessage")[0].Body), &slack)
	if slack["channel"] != "ops" || !strings.HasPrefix(fmt.Sprint(slack["text"]), failName+" sync failed: ") {
		t.Errorf("slack %v", slack)
	}
	if gh := paths(r, "/gh/repos/")[0]; !strings.HasPrefix(gh.Path, "/gh/repos/acme/"+failName+"/statuses/") || !strings.Contains(gh.Body, `"state":"failure"`) || !strings.Contains(gh.Body, `"context":"windlass/`+failName+`"`) {
		t.Errorf("github %s %s", gh.Path, gh.Body)
	}
	if m := mail.Mails()[0]; !m.TLS || !strings.Contains(m.Data, "Subject: [windlass] "+failName+" sync failed") {
		t.Errorf("mail TLS=%v:\n%s", m.TLS, m.Data)
	}

	// 2. A sync of a new revision, and a second reconcile of it.
	okName, okNS := uniq("ntf-ok"), uniq("ntf-ok")
	okURL, okWork := newRepo(t, okName)
	sha := push(t, okWork, guestbookFiles("gcr.io/heptio-images/ks-guestbook-demo:0.1"))
	body = appBody(okName, okURL, "guestbook", okNS)
	d := notifications.AnnotationPrefix + notifications.TriggerDeployed + "."
	body["annotations"] = map[string]string{d + "hook": "", d + "flaky": ""}
	flaky.FailNext(3, http.StatusInternalServerError) // 4. fails three times, then answers
	if code := call(t, http.MethodPost, "/api/v1/applications", body, nil); code != http.StatusCreated {
		t.Fatalf("create: status %d", code)
	}
	syncApp(t, okName)
	eventually(t, time.Minute, "on-deployed at the webhook", func() (bool, string) {
		n := len(paths(recv.Requests(), "/hook/deployed/"))
		return n == 1, fmt.Sprintf("%d requests", n)
	})
	eventually(t, time.Minute, "on-deployed at the flaky webhook after its failures", func() (bool, string) {
		var recs []workflows.NotificationRecord
		call(t, http.MethodGet, "/api/v1/applications/"+okName+"/notifications", nil, &recs)
		for _, rec := range recs {
			if rec.Service == "flaky" {
				return rec.Result == workflows.NotificationSent && rec.Attempts == 4, fmt.Sprintf("%+v", rec)
			}
		}
		return false, fmt.Sprintf("records %+v", recs)
	})
	if got := paths(recv.Requests(), "/hook/deployed/")[0].Body; !strings.Contains(got, sha) {
		t.Errorf("on-deployed body %q lacks the revision %s", got, sha)
	}
	if n := len(flaky.Requests()); n != 4 {
		t.Errorf("the flaky receiver got %d requests, want 3 failed and 1 answered", n)
	}
	before := appView(t, okName).Status.ReconciledAt
	call(t, http.MethodPost, "/api/v1/applications/"+okName+"/refresh", nil, nil)
	eventually(t, time.Minute, "a second reconcile", func() (bool, string) {
		v := appView(t, okName)
		return v.Status.ReconciledAt.After(before) && v.Status.Sync == appspec.SyncSynced, v.Status.ReconciledAt.String()
	})
	failView := func() workflows.AppView {
		var v workflows.AppView
		call(t, http.MethodGet, "/api/v1/applications/"+failName+"?project="+proj, nil, &v)
		return v
	}
	beforeFail := failView().Status.ReconciledAt
	call(t, http.MethodPost, "/api/v1/applications/"+failName+"/refresh?project="+proj, nil, nil)
	eventually(t, time.Minute, "a second reconcile of the failed app", func() (bool, string) {
		v := failView()
		return v.Status.ReconciledAt.After(beforeFail), v.Status.ReconciledAt.String()
	})
	r = recv.Requests()
	if n := []int{len(paths(r, "/hook/deployed/")), len(paths(r, "/hook/failed/")), len(mail.Mails()), len(flaky.Requests())}; fmt.Sprint(n) != "[1 1 1 4]" {
		t.Errorf("after the second reconciles: deployed, failed, mail, flaky = %v, want [1 1 1 4]", n)
	}

	// 5. No credential in any history or in the logs.
	var needles [][]byte
	for _, k := range []string{"hook-token", "slack-token", "mail-password", "github-token", "teams-url"} {
		needles = append(needles, secrets[k])
	}
	scanHistories(t, bed.temporal, needles, func(i int, where string) {
		t.Errorf("a notification credential (%d) is in the history of %s", i, where)
	})
	logs, err := os.ReadFile(bed.logs.Name())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(logs, []byte("notification sent")) {
		t.Fatal("the log has no delivery: the log scan is not looking at the right file")
	}
	for _, n := range needles {
		if bytes.Contains(logs, n) {
			t.Errorf("a notification credential is in the logs")
		}
	}
}
