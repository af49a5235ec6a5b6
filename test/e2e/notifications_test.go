package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/windlass-cd/windlass/activities/notify"
	"github.com/windlass-cd/windlass/api"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/notifications"
	"github.com/windlass-cd/windlass/internal/notifications/notifytest"
	"github.com/windlass-cd/windlass/internal/secretstore"
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
service.webhook.basic: |
  url: %[1]s/basic
  basicAuth:
    username: ops
    password: $basic-password
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
    basic:
      method: POST
      path: /failed/{{.app.metadata.name}}
      body: '{"app": "{{.app.metadata.name}}"}'
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
		"hook-token":     fmt.Appendf(nil, "ntf-hook-%d-do-not-leak", n),
		"basic-password": fmt.Appendf(nil, "ntf-basic-%d-do-not-leak", n),
		"slack-token":    fmt.Appendf(nil, "ntf-slack-%d-do-not-leak", n),
		"mail-password":  fmt.Appendf(nil, "ntf-mail-%d-do-not-leak", n),
		"github-token":   fmt.Appendf(nil, "ntf-github-%d-do-not-leak", n),
		"teams-url":      fmt.Appendf(nil, "%s/teams/workflow?sig=ntf-teams-%d-do-not-leak", h.URL, n),
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

// notifyBed is the notifications of a test: loopback receivers, the
// services' credentials in the secret store, and a configuration of
// every service type saved through the API.
type notifyBed struct {
	recv, flaky *notifytest.HTTP
	mail        *notifytest.SMTP
	secrets     map[string][]byte
}

func setupNotifications(t *testing.T) *notifyBed {
	t.Helper()
	n := &notifyBed{recv: notifytest.NewHTTP(t), flaky: notifytest.NewHTTP(t), mail: notifytest.NewSMTP(t, "windlass", "")}
	n.secrets = notifySecrets(n.recv)
	n.mail.Password = string(n.secrets["mail-password"])
	if err := bed.store.Put(t.Context(), notify.SecretName, n.secrets); err != nil {
		t.Fatal(err)
	}
	if code := call(t, http.MethodPut, "/api/v1/settings/notifications", api.NotificationsConfig{Config: notifyConfig(n.recv, n.flaky, n.mail)}, nil); code != http.StatusOK {
		t.Fatalf("save config: status %d", code)
	}
	return n
}

// needles are the services' credentials, for the secrets scans: the
// webhook's bearer token and basic password, the Slack token, the SMTP
// password, the GitHub token and the Teams URL.
func (n *notifyBed) needles() [][]byte {
	var out [][]byte
	for _, k := range []string{"hook-token", "basic-password", "slack-token", "mail-password", "github-token", "teams-url"} {
		out = append(out, n.secrets[k])
	}
	return out
}

// failingSubscribedApp creates an app, in a project of its own, whose
// sync fails, subscribed to on-sync-failed at every service; it syncs it
// and waits until each service got the message. It returns the app and
// its project.
func (n *notifyBed) failingSubscribedApp(t *testing.T) (string, string) {
	t.Helper()
	proj := uniq("ntf")
	if code := call(t, http.MethodPost, "/api/v1/projects", map[string]any{"name": proj, "sourceRepos": []string{"*"},
		"destinations": []map[string]string{{"server": "*", "namespace": "*"}}}, nil); code != http.StatusCreated {
		t.Fatalf("create project: status %d", code)
	}
	name, ns := uniq("ntf-fail"), uniq("ntf-fail")
	repoURL, work := newRepo(t, name)
	files := guestbookFiles("gcr.io/heptio-images/ks-guestbook-demo:0.1")
	files["guestbook/clusterrole.yaml"] = fmt.Sprintf(clusterRoleYAML, name)
	push(t, work, files)
	body := appBody(name, repoURL, "guestbook", ns)
	body["project"] = proj
	p := notifications.AnnotationPrefix + notifications.TriggerSyncFailed + "."
	body["annotations"] = map[string]string{p + "hook": "", p + "basic": "", p + "slack": "ops", p + "mail": "ops@example.com", p + "teams": "ops", p + "github": ""}
	if code := call(t, http.MethodPost, "/api/v1/applications", body, nil); code != http.StatusCreated {
		t.Fatalf("create: status %d", code)
	}
	var res workflows.SyncResult
	if code := call(t, http.MethodPost, "/api/v1/applications/"+name+"/sync?project="+proj, nil, &res); code != http.StatusConflict || res.Phase != workflows.PhaseFailed {
		t.Fatalf("sync: status %d, %s %s", code, res.Phase, res.Message)
	}
	eventually(t, time.Minute, "on-sync-failed at every service", func() (bool, string) {
		r := n.recv.Requests()
		got := []int{len(paths(r, "/hook/failed/")), len(paths(r, "/basic/failed/")), len(paths(r, "/slack/chat.postMessage")),
			len(paths(r, "/teams/")), len(paths(r, "/gh/repos/")), len(n.mail.Mails())}
		var recs []workflows.NotificationRecord
		call(t, http.MethodGet, "/api/v1/applications/"+name+"/notifications?project="+proj, nil, &recs)
		return fmt.Sprint(got) == "[1 1 1 1 1 1]", fmt.Sprintf("hook, basic, slack, teams, github, mail: %v; records %+v", got, recs)
	})
	return name, proj
}

// The proof cases of notifications, with real receivers: a failed sync
// sends one on-sync-failed to each subscribed service; a sync of a new
// revision sends on-deployed once and a second reconcile nothing; a
// receiver that fails three times gets the message once, with the
// attempts in the history; no credential reaches a history or the logs.
func TestNotificationsDelivered(t *testing.T) {
	n := setupNotifications(t)
	recv, flaky, mail, secrets := n.recv, n.flaky, n.mail, n.secrets
	// Bad input is refused when saved, and the saved configuration stays.
	var pr api.Problem
	if code := call(t, http.MethodPut, "/api/v1/settings/notifications", api.NotificationsConfig{Config: "template.x: |\n  message: '{{.app'\n"}, &pr); code != http.StatusUnprocessableEntity ||
		!strings.Contains(pr.Detail, "template.x: message does not parse") {
		t.Fatalf("bad template: status %d %+v", code, pr)
	}

	// 1. A failed sync.
	failName, proj := n.failingSubscribedApp(t)
	r := recv.Requests()
	hook := paths(r, "/hook/failed/")[0]
	if want := fmt.Sprintf(`{"app": "%s", "phase": "Failed"}`, failName); hook.Body != want || hook.Header.Get("Authorization") != "Bearer "+string(secrets["hook-token"]) || hook.Header.Get(notify.IdempotencyHeader) == "" {
		t.Errorf("webhook %s %q %v", hook.Path, hook.Body, hook.Header)
	}
	if user, pass, ok := (&http.Request{Header: paths(r, "/basic/failed/")[0].Header}).BasicAuth(); !ok || user != "ops" || pass != string(secrets["basic-password"]) {
		t.Errorf("basic-auth webhook: user %q, ok %v", user, ok)
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
	body := appBody(okName, okURL, "guestbook", okNS)
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
	if got := []int{len(paths(r, "/hook/deployed/")), len(paths(r, "/hook/failed/")), len(mail.Mails()), len(flaky.Requests())}; fmt.Sprint(got) != "[1 1 1 4]" {
		t.Errorf("after the second reconciles: deployed, failed, mail, flaky = %v, want [1 1 1 4]", got)
	}

	// 5. No credential in any history or in the logs.
	needles := n.needles()
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

// Case 3: the worker is killed (SIGKILL) while a delivery is in flight,
// after the sync ended. The receiver holds the first attempt, unanswered,
// so the kill falls inside it; once dev runs again, the retry delivers
// the message, and the receiver, which dedupes on the idempotency key,
// takes it in exactly once.
func TestNotificationSurvivesWorkerKill(t *testing.T) {
	mns := uniq("dev-ntf")
	d := startDev(t, "WINDLASS_MANAGEMENT_NAMESPACE="+mns)
	recv := notifytest.NewHTTP(t)
	store, err := secretstore.NewKubernetes(bed.kube, mns)
	if err != nil {
		t.Fatal(err)
	}
	// The configuration of every service; the app subscribes to one.
	secrets := notifySecrets(recv)
	token := secrets["hook-token"]
	if err := store.Put(t.Context(), notify.SecretName, secrets); err != nil {
		t.Fatal(err)
	}
	config := notifyConfig(recv, notifytest.NewHTTP(t), notifytest.NewSMTP(t, "windlass", ""))
	if code := d.call(t, http.MethodPut, "/api/v1/settings/notifications", api.NotificationsConfig{Config: config}, nil); code != http.StatusOK {
		t.Fatalf("save config: status %d", code)
	}
	held := recv.HoldNext("/hook/deployed/")

	name, ns := uniq("ntf-kill"), uniq("ntf-kill")
	repoURL, work := newRepo(t, name)
	sha := push(t, work, guestbookFiles("gcr.io/heptio-images/ks-guestbook-demo:0.1"))
	manifest := filepath.Join(t.TempDir(), "app.yaml")
	doc := strings.Replace(argoApp(name, repoURL, "path: guestbook", ns), "metadata: {name: "+name+"}",
		"metadata: {name: "+name+", annotations: {"+notifications.AnnotationPrefix+notifications.TriggerDeployed+".hook: \"\"}}", 1)
	if err := os.WriteFile(manifest, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, stderr, code := d.cli("", "app", "create", "-f", manifest); code != 0 {
		t.Fatalf("create %s: exit %d: %s%s", name, code, out, stderr)
	}
	d.syncAsync(t, name)
	select {
	case <-held:
	case <-time.After(3 * time.Minute):
		v, state, _ := d.app(name)
		t.Fatalf("no delivery started: %s; records %+v", state, v.Status)
	}
	if v, state, _ := d.app(name); len(v.History) != 1 || v.History[0].Phase != workflows.PhaseSucceeded {
		t.Fatalf("the delivery started before the sync ended: %s", state)
	}

	d.kill(t)
	var recs []workflows.NotificationRecord
	eventually(t, 4*time.Minute, "the delivery sent by the new worker", func() (bool, string) {
		recs = nil
		d.call(t, http.MethodGet, "/api/v1/applications/"+name+"/notifications", nil, &recs)
		return len(recs) == 1 && recs[0].Result == workflows.NotificationSent, fmt.Sprintf("records %+v", recs)
	})
	reqs := paths(recv.Requests(), "/hook/deployed/")
	if len(reqs) != 2 || !reqs[0].Held || reqs[1].Held || reqs[1].Duplicate {
		t.Fatalf("requests %+v, want the held attempt and one retry", reqs)
	}
	if k0, k1 := reqs[0].Header.Get(notify.IdempotencyHeader), reqs[1].Header.Get(notify.IdempotencyHeader); k0 == "" || k0 != k1 {
		t.Errorf("idempotency keys %q and %q, want one key", k0, k1)
	}
	if got := recv.Accepted("/hook/deployed/"); len(got) != 1 || !strings.Contains(got[0].Body, sha) ||
		got[0].Header.Get("Authorization") != "Bearer "+string(token) {
		t.Errorf("accepted %+v, want one message at %s", got, sha)
	}
	if recs[0].Trigger != notifications.TriggerDeployed || recs[0].Attempts != 2 {
		t.Errorf("record %+v, want on-deployed sent at attempt 2", recs[0])
	}
	if where, n := d.historiesContain(t, token); where != "" || n == 0 {
		t.Errorf("the webhook token is in the history of %q (%d events scanned)", where, n)
	}
	if strings.Contains(d.logs.String(), string(token)) {
		t.Error("the webhook token is in dev's logs")
	}
	t.Logf("%s: delivered once across a SIGKILL, at attempt %d", name, recs[0].Attempts)
}
