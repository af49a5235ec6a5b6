package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-cd/windlass/api"
	"github.com/windlass-cd/windlass/internal/testbed"
)

// openGet does a GET as admin that accepts accept ("" for any) and
// returns the open answer; the test closes it.
func openGet(t *testing.T, path, accept string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, bed.api.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+bed.token)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// getText does a GET as admin and returns the status and the body.
func getText(t *testing.T, path, accept string) (int, string) {
	t.Helper()
	resp := openGet(t, path, accept)
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// One of an app's pods and its Deployment: their logs (kwok serves a
// file of the test's as every container's log), their live objects, a
// patch and a deletion, each refused for what is not the app's or not
// the caller's to do.
func TestResourceLogsAndOperations(t *testing.T) {
	ns, name := uniq("res"), uniq("res")
	repoURL, work := newRepo(t, name)
	push(t, work, guestbookFiles("gcr.io/heptio-images/ks-guestbook-demo:0.1"))
	if code := call(t, http.MethodPost, "/api/v1/applications", appBody(name, repoURL, "guestbook", ns), nil); code != http.StatusCreated {
		t.Fatalf("create: status %d", code)
	}
	eventually(t, time.Minute, "the first comparison", func() (bool, string) {
		v := appView(t, name)
		return v.Status.SHA != "", string(v.Status.Sync)
	})
	syncApp(t, name)
	base := "/api/v1/applications/" + name

	dir := t.TempDir()
	logFile, prevFile := filepath.Join(dir, "current.log"), filepath.Join(dir, "previous.log")
	if err := testbed.AppendCRILog(logFile, "starting", "GET /healthz 200", "GET / 500"); err != nil {
		t.Fatal(err)
	}
	if err := testbed.AppendCRILog(prevFile, "crashed"); err != nil {
		t.Fatal(err)
	}
	// A cluster of an older test bed serves no simulated logs: the log
	// tests skip, the others run.
	cleanup, noLogs := testbed.SimulatePodLogs(t.Context(), bed.env.Cluster.Config, ns, logFile, prevFile)
	switch {
	case noLogs == nil:
		t.Cleanup(cleanup)
	case !errors.Is(noLogs, testbed.ErrNoPodLogs):
		t.Fatal(noLogs)
	}

	var pod string
	eventually(t, time.Minute, "the Deployment's pod", func() (bool, string) {
		pods, err := bed.kube.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "app=guestbook-ui"})
		if err != nil || len(pods.Items) != 1 {
			return false, fmt.Sprintf("%v %v", pods, err)
		}
		pod = pods.Items[0].Name
		return true, ""
	})
	podQ := "?kind=Pod&namespace=" + ns + "&name=" + pod
	depQ := "?group=apps&kind=Deployment&namespace=" + ns + "&name=guestbook-ui"

	t.Run("logs", func(t *testing.T) {
		if noLogs != nil {
			t.Skip(noLogs)
		}
		// kwok picks the ClusterLogs up from its watch, and the tree must
		// hold the pod.
		eventually(t, time.Minute, "the pod's logs", func() (bool, string) {
			code, body := getText(t, base+"/logs"+podQ, "")
			return code == http.StatusOK && body == "starting\nGET /healthz 200\nGET / 500\n", fmt.Sprintf("%d %q", code, body)
		})
		for _, tc := range []struct{ query, want string }{
			{depQ, pod + ": starting\n" + pod + ": GET /healthz 200\n" + pod + ": GET / 500\n"},
			{podQ + "&tailLines=1", "GET / 500\n"},
			// No resource: all the app's pods, each line prefixed.
			{"?tailLines=1", pod + ": GET / 500\n"},
			{podQ + "&filter=GET", "GET /healthz 200\nGET / 500\n"},
			{podQ + "&filter=" + url.QueryEscape("!GET"), "starting\n"},
			{podQ + "&previous=true&container=guestbook-ui", "crashed\n"},
		} {
			if code, body := getText(t, base+"/logs"+tc.query, ""); code != http.StatusOK || body != tc.want {
				t.Errorf("logs%s: %d %q, want %q", tc.query, code, body, tc.want)
			}
		}
		// Server-sent events, for the browser.
		_, sse := getText(t, base+"/logs"+podQ+"&tailLines=1", "text/event-stream")
		if want := "event: log\ndata: {\"pod\":\"" + pod + "\",\"line\":\"GET / 500\"}\n\n"; sse != want {
			t.Errorf("events %q, want %q", sse, want)
		}
		for _, tc := range []struct {
			query string
			code  int
		}{
			{"?kind=Pod&namespace=" + ns + "&name=not-the-apps", http.StatusNotFound},
			{"?kind=Pod&namespace=kube-system&name=" + pod, http.StatusNotFound},
			{"?kind=Service&namespace=" + ns + "&name=guestbook-ui", http.StatusNotFound}, // no pods
			{podQ + "&container=nope", http.StatusBadRequest},
			{podQ + "&tailLines=x", http.StatusBadRequest},
		} {
			if code, body := getText(t, base+"/logs"+tc.query, ""); code != tc.code {
				t.Errorf("logs%s: %d %s, want %d", tc.query, code, body, tc.code)
			}
		}
	})

	t.Run("follow", func(t *testing.T) {
		if noLogs != nil {
			t.Skip(noLogs)
		}
		resp := openGet(t, base+"/logs"+depQ+"&follow=true&tailLines=1", "")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("follow: status %d", resp.StatusCode)
		}
		lines := make(chan string)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		next := func() string {
			select {
			case l := <-lines:
				return l
			case <-time.After(30 * time.Second):
				t.Fatal("no line in 30 s")
				return ""
			}
		}
		if l := next(); l != pod+": GET / 500" {
			t.Fatalf("first line %q", l)
		}
		if err := testbed.AppendCRILog(logFile, "a new request"); err != nil {
			t.Fatal(err)
		}
		if l := next(); l != pod+": a new request" {
			t.Fatalf("followed line %q", l)
		}
	})

	t.Run("get", func(t *testing.T) {
		var obj map[string]any
		if code := call(t, http.MethodGet, base+"/resource"+depQ, nil, &obj); code != http.StatusOK || obj["kind"] != "Deployment" {
			t.Fatalf("get: %d %v", code, obj)
		}
		if md, _ := obj["metadata"].(map[string]any); md["managedFields"] != nil {
			t.Error("the live object shows its managed fields")
		}
		// Without a namespace: the app's destination namespace.
		if code := call(t, http.MethodGet, base+"/resource?group=apps&kind=Deployment&name=guestbook-ui", nil, &obj); code != http.StatusOK || obj["kind"] != "Deployment" {
			t.Errorf("get without a namespace: %d %v", code, obj)
		}
		if code := call(t, http.MethodGet, base+"/resource?kind=ConfigMap&namespace="+ns+"&name=kube-root-ca.crt", nil, nil); code != http.StatusNotFound {
			t.Errorf("get of an object not the app's: %d, want 404", code)
		}
	})

	t.Run("patch", func(t *testing.T) {
		if code := callAs(t, bed.viewerToken, http.MethodPatch, base+"/resource"+depQ, `{"spec":{"replicas":2}}`, nil); code != http.StatusForbidden {
			t.Errorf("viewer's patch: %d, want 403", code)
		}
		var obj map[string]any
		if code := call(t, http.MethodPatch, base+"/resource"+depQ+"&patchType=merge", `{"spec":{"replicas":2}}`, &obj); code != http.StatusOK {
			t.Fatalf("patch: %d %v", code, obj)
		}
		if spec, _ := obj["spec"].(map[string]any); spec["replicas"] != float64(2) {
			t.Errorf("patched object's replicas %v", spec["replicas"])
		}
		jp := `[{"op":"replace","path":"/spec/replicas","value":1}]`
		if code := call(t, http.MethodPatch, base+"/resource"+depQ+"&patchType=json", jp, nil); code != http.StatusOK {
			t.Errorf("json patch: %d", code)
		}
		var p api.Problem
		if code := call(t, http.MethodPatch, base+"/resource"+depQ+"&patchType=strategic", `{"spec":{"replicas":-1}}`, &p); code != http.StatusUnprocessableEntity ||
			!strings.Contains(p.Detail, "spec.replicas") {
			t.Errorf("refused patch: %d %+v, want 422 with the API server's message", code, p)
		}
		if code := call(t, http.MethodPatch, base+"/resource"+depQ+"&patchType=yaml", `{}`, nil); code != http.StatusBadRequest {
			t.Errorf("unknown patch type: %d, want 400", code)
		}
		eventually(t, 30*time.Second, "the patch in the app's events", func() (bool, string) {
			var ev api.EventsView
			call(t, http.MethodGet, base+"/events", nil, &ev)
			for _, e := range ev.Events {
				if e.Source == api.SourceWindlass && e.Reason == "ResourcePatched" && strings.Contains(e.Message, "by admin") {
					return true, ""
				}
			}
			return false, fmt.Sprintf("%+v", ev.Events)
		})
	})

	t.Run("cli", func(t *testing.T) {
		if noLogs != nil {
			t.Skip(noLogs)
		}
		cli := windlassCLI(t)
		if _, stderr, code := cli(bed.adminPassword+"\n", "login", "--server", bed.api.URL, "--username", "admin", "--password-stdin"); code != 0 {
			t.Fatalf("login: exit %d: %s", code, stderr)
		}
		dep := []string{"--group", "apps", "--kind", "Deployment", "--namespace", ns, "--resource-name", "guestbook-ui"}
		run := func(args ...string) (string, string, int) { return cli("", append([]string{"app"}, args...)...) }
		if out, stderr, code := run(append([]string{"logs", name, "--tail", "1"}, dep...)...); code != 0 || out != pod+": a new request\n" {
			t.Errorf("app logs: exit %d, %q %s", code, out, stderr)
		}
		// No resource: all the app's pods, as argocd app logs NAME.
		if out, stderr, code := run("logs", name, "--tail", "1"); code != 0 || out != pod+": a new request\n" {
			t.Errorf("app logs without a resource: exit %d, %q %s", code, out, stderr)
		}
		if out, stderr, code := run(append([]string{"get-resource", name}, dep...)...); code != 0 || !strings.Contains(out, "kind: Deployment") {
			t.Errorf("app get-resource: exit %d, %q %s", code, out, stderr)
		}
		if out, stderr, code := run(append([]string{"patch-resource", name, "--patch", `{"spec":{"replicas":-1}}`}, dep...)...); code != 1 ||
			!strings.Contains(stderr, "spec.replicas") {
			t.Errorf("refused app patch-resource: exit %d, %q %s", code, out, stderr)
		}
		if _, stderr, code := run("delete-resource", name, "--kind", "Service", "--namespace", ns, "--resource-name", "nope"); code != 4 {
			t.Errorf("app delete-resource of what is not the app's: exit %d, %s", code, stderr)
		}
	})

	t.Run("delete", func(t *testing.T) {
		if code := callAs(t, bed.viewerToken, http.MethodDelete, base+"/resource"+podQ, nil, nil); code != http.StatusForbidden {
			t.Errorf("viewer's delete: %d, want 403", code)
		}
		if code := call(t, http.MethodDelete, base+"/resource"+podQ+"&force=true", nil, nil); code != http.StatusNoContent {
			t.Fatalf("delete: %d", code)
		}
		eventually(t, 30*time.Second, "the pod gone", func() (bool, string) {
			_, err := bed.kube.CoreV1().Pods(ns).Get(t.Context(), pod, metav1.GetOptions{})
			return err != nil, fmt.Sprint(err)
		})
		eventually(t, 30*time.Second, "the deletion in the app's events", func() (bool, string) {
			var ev api.EventsView
			call(t, http.MethodGet, base+"/events", nil, &ev)
			for _, e := range ev.Events {
				if e.Reason == "ResourceDeleted" && strings.Contains(e.Message, pod) && strings.Contains(e.Message, "(force)") {
					return true, ""
				}
			}
			return false, fmt.Sprintf("%+v", ev.Events)
		})
	})
}
