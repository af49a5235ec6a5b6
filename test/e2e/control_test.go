package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/windlass-cd/windlass/api"
	"github.com/windlass-cd/windlass/workflows"
)

// sendGitHubPush posts a GitHub push event for repoURL's main branch,
// signed with secret, and returns the status code.
func sendGitHubPush(t *testing.T, repoURL, sha, secret string) int {
	t.Helper()
	code, _ := postGitHubPush(t, map[string]any{
		"ref": "refs/heads/main", "after": sha,
		"repository": map[string]any{"html_url": repoURL, "clone_url": repoURL + ".git", "default_branch": "main"},
	}, secret)
	return code
}

// postGitHubPush posts payload as a GitHub push event signed with secret,
// and returns the status code and the response body.
func postGitHubPush(t *testing.T, payload map[string]any, secret string) (int, []byte) {
	t.Helper()
	body, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, bed.api.URL+"/api/webhook", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	if _, err := out.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out.Bytes()
}

// A push followed by a signed GitHub webhook makes an automated app sync
// the new SHA with no other call; a bad signature is refused with 401 and
// refreshes nothing.
func TestWebhookPushSyncs(t *testing.T) {
	ns, name := uniq("hook"), uniq("hook")
	repoURL, work := newRepo(t, name)
	push(t, work, guestbookFiles("gcr.io/heptio-images/ks-guestbook-demo:0.1"))
	body := appBody(name, repoURL, "guestbook", ns)
	body["syncPolicy"].(map[string]any)["automated"] = map[string]any{}
	if code := call(t, http.MethodPost, "/api/v1/applications", body, nil); code != http.StatusCreated {
		t.Fatalf("create: status %d", code)
	}
	eventually(t, time.Minute, "first auto-sync", func() (bool, string) {
		return image(t, ns) == "gcr.io/heptio-images/ks-guestbook-demo:0.1", image(t, ns)
	})
	eventually(t, 30*time.Second, "the app listed under its repository", func() (bool, string) {
		var list api.AppList
		call(t, http.MethodGet, "/api/v1/applications?repo="+repoURL+".git", nil, &list)
		return len(list.Items) == 1 && list.Items[0].Name == name, fmt.Sprintf("%+v", list.Items)
	})

	before := appView(t, name).Refreshes
	sha := push(t, work, guestbookFiles("gcr.io/heptio-images/ks-guestbook-demo:0.2"))
	if code := sendGitHubPush(t, repoURL, sha, "not-the-secret"); code != http.StatusUnauthorized {
		t.Fatalf("bad signature: status %d, want 401", code)
	}
	if got := appView(t, name).Refreshes; got != before {
		t.Fatalf("a refused webhook refreshed the app (%d -> %d)", before, got)
	}
	if code := sendGitHubPush(t, repoURL, sha, bed.hookSecret); code != http.StatusOK {
		t.Fatalf("webhook: status %d", code)
	}
	eventually(t, time.Minute, "the pushed SHA synced", func() (bool, string) {
		v := appView(t, name)
		return v.Status.SHA == sha && v.Status.Sync == "Synced" && image(t, ns) == "gcr.io/heptio-images/ks-guestbook-demo:0.2",
			fmt.Sprintf("%s at %s, image %s", v.Status.Sync, v.Status.SHA, image(t, ns))
	})
}

// A project that forbids a namespace makes the create fail with 403 and
// the reason; a read-only user can read but not sync.
func TestProjectAndRBACRefusals(t *testing.T) {
	proj := uniq("restricted")
	p := map[string]any{"name": proj, "sourceRepos": []string{"*"},
		"destinations": []map[string]string{{"server": "*", "namespace": "allowed-*"}}}
	if code := call(t, http.MethodPost, "/api/v1/projects", p, nil); code != http.StatusCreated {
		t.Fatalf("create project: status %d", code)
	}
	repoURL, work := newRepo(t, uniq("proj"))
	push(t, work, guestbookFiles("gcr.io/heptio-images/ks-guestbook-demo:0.1"))
	body := appBody(uniq("refused"), repoURL, "guestbook", "forbidden-ns")
	body["project"] = proj
	var pr api.Problem
	if code := call(t, http.MethodPost, "/api/v1/applications", body, &pr); code != http.StatusForbidden ||
		!strings.Contains(pr.Detail, "not permitted") || pr.Field != "destination" {
		t.Fatalf("create in a forbidden namespace: status %d %+v", code, pr)
	}

	name, ns := uniq("ro"), uniq("ro")
	if code := call(t, http.MethodPost, "/api/v1/applications", appBody(name, repoURL, "guestbook", ns), nil); code != http.StatusCreated {
		t.Fatalf("create: status %d", code)
	}
	var view workflows.AppView
	if code := callAs(t, bed.viewerToken, http.MethodGet, "/api/v1/applications/"+name, nil, &view); code != http.StatusOK || view.Spec.Name != name {
		t.Fatalf("viewer get: status %d", code)
	}
	if code := callAs(t, bed.viewerToken, http.MethodPost, "/api/v1/applications/"+name+"/sync", nil, &pr); code != http.StatusForbidden ||
		!strings.Contains(pr.Detail, "permission denied") {
		t.Fatalf("viewer sync: status %d %+v", code, pr)
	}
	if code := callAs(t, "", http.MethodGet, "/api/v1/applications/"+name, nil, nil); code != http.StatusUnauthorized {
		t.Fatalf("anonymous get: status %d, want 401", code)
	}
}

// An Argo CD Application manifest is accepted as is and converted.
func TestCreateFromArgoApplication(t *testing.T) {
	name, ns := uniq("argo"), uniq("argo")
	repoURL, work := newRepo(t, name)
	push(t, work, guestbookFiles("gcr.io/heptio-images/ks-guestbook-demo:0.1"))
	manifest := fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %s
  namespace: argocd
  finalizers: [resources-finalizer.argocd.argoproj.io]
spec:
  project: default
  source:
    repoURL: %s
    targetRevision: HEAD
    path: guestbook
  destination:
    server: https://kubernetes.default.svc
    namespace: %s
  syncPolicy:
    automated: {prune: true, selfHeal: true}
    syncOptions: [CreateNamespace=true]
`, name, repoURL, ns)
	if code := call(t, http.MethodPost, "/api/v1/applications", manifest, nil); code != http.StatusCreated {
		t.Fatalf("create from Argo CD YAML: status %d", code)
	}
	eventually(t, time.Minute, "the imported app synced", func() (bool, string) {
		return image(t, ns) == "gcr.io/heptio-images/ks-guestbook-demo:0.1", image(t, ns)
	})
	var pr api.Problem
	bad := strings.Replace(manifest, "  project: default\n", "  project: default\n  revisionHistoryLimit: -1\n", 1)
	if code := call(t, http.MethodPost, "/api/v1/applications", bad, &pr); code != http.StatusBadRequest || pr.Field != "spec.revisionHistoryLimit" {
		t.Fatalf("negative revisionHistoryLimit: status %d %+v", code, pr)
	}
}

// readEvents reads Server-Sent Events from path until done accepts one
// (nil) or the deadline passes (an error). It may run in any goroutine.
func readEvents(ctx context.Context, path string, timeout time.Duration, done func(event, data string) bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, bed.api.URL+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+bed.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		return fmt.Errorf("stream %s: status %d, content type %q", path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	var event string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if done(event, strings.TrimPrefix(line, "data: ")) {
				return nil
			}
		}
	}
	return fmt.Errorf("stream %s ended before the expected event: %v", path, sc.Err())
}

// The app's stream shows a sync's operation while it runs and the
// result after; the list's stream shows the app's row change.
func TestStreamsShowSync(t *testing.T) {
	ns, name := uniq("sse"), uniq("sse")
	repoURL, work := newRepo(t, name)
	push(t, work, guestbookFiles("gcr.io/heptio-images/ks-guestbook-demo:0.1"))
	if code := call(t, http.MethodPost, "/api/v1/applications", appBody(name, repoURL, "guestbook", ns), nil); code != http.StatusCreated {
		t.Fatalf("create: status %d", code)
	}
	listDone := make(chan error, 1)
	go func() {
		listDone <- readEvents(t.Context(), "/api/v1/stream/applications?search="+name, time.Minute, func(event, data string) bool {
			var row api.AppSummary
			return event == "application" && json.Unmarshal([]byte(data), &row) == nil && row.Name == name && row.Sync == "Synced"
		})
	}()
	var acc workflows.SyncAccepted
	if code := call(t, http.MethodPost, "/api/v1/applications/"+name+"/sync?wait=false", nil, &acc); code != http.StatusAccepted {
		t.Fatalf("sync: status %d", code)
	}
	sawOperation := false
	err := readEvents(t.Context(), "/api/v1/stream/applications/"+name, time.Minute, func(event, data string) bool {
		var v workflows.AppView
		if event != "application" || json.Unmarshal([]byte(data), &v) != nil {
			return false
		}
		sawOperation = sawOperation || (v.Status.Operation != nil && v.Status.Operation.SyncID == acc.ID)
		return len(v.History) > 0 && v.History[0].ID == acc.ID && v.Status.Sync == "Synced"
	})
	if err != nil {
		t.Fatal(err)
	}
	if !sawOperation {
		t.Log("the sync ended before the stream saw its operation (a fast sync); the result event was seen")
	}
	if err := <-listDone; err != nil {
		t.Fatalf("list stream: %v", err)
	}
}
