package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/windlass-cd/windlass/internal/testbed"
	"github.com/windlass-cd/windlass/web"
)

// envRequired makes a missing browser, Node.js or UI bundle fail the test
// instead of skipping it (make test sets it when Node.js is there).
const envRequired = "WINDLASS_UI_REQUIRED"

// envScreenshots names a directory for the screenshots (docs/img to
// update the README's); by default they go to a temporary directory.
const envScreenshots = "WINDLASS_UI_SCREENSHOTS"

// chromiumPath is Debian's chromium (hack/deps.sh installs it).
func chromiumPath() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	return "/usr/bin/chromium"
}

// requireBrowser skips (or, with envRequired, fails) unless Node.js,
// playwright-core, chromium and a built UI are there.
func requireBrowser(t *testing.T) {
	t.Helper()
	var missing []string
	if _, err := exec.LookPath("node"); err != nil {
		missing = append(missing, "node (Node.js 20.19+)")
	}
	if _, err := os.Stat(filepath.Join("..", "..", "web", "node_modules", "playwright-core", "package.json")); err != nil {
		missing = append(missing, "playwright-core (make ui installs web/node_modules)")
	}
	if _, err := os.Stat(chromiumPath()); err != nil {
		missing = append(missing, "chromium (make deps installs it)")
	}
	if _, built := web.Assets(); !built {
		missing = append(missing, "the UI bundle (make ui)")
	}
	if len(missing) == 0 {
		return
	}
	if os.Getenv(envRequired) != "" {
		t.Fatalf("the browser test needs %s", strings.Join(missing, ", "))
	}
	t.Skipf("the browser test needs %s", strings.Join(missing, ", "))
}

// control is what the browser script asks the test to do behind the UI's
// back: edits of live objects with client-go.
func control(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /scale", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Namespace, Name string
			Replicas        int
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, in.Replicas)
		_, err := bed.kube.AppsV1().Deployments(in.Namespace).Patch(r.Context(), in.Name, types.MergePatchType, patch,
			metav1.PatchOptions{FieldManager: "ui-test"})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return hs
}

// runScript runs a node script of this directory with env, logging its
// output as it comes; it fails the test when the script fails.
func runScript(t *testing.T, timeout time.Duration, script string, env map[string]string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var mu sync.Mutex
	var out strings.Builder
	w := lineWriter(func(line string) {
		mu.Lock()
		defer mu.Unlock()
		out.WriteString(line + "\n")
		t.Log(line)
	})
	cmd.Stdout, cmd.Stderr = w, w
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s failed: %v (ctx: %v)", script, err, ctx.Err())
	}
	mu.Lock()
	defer mu.Unlock()
	return out.String()
}

// lineWriter calls f with each complete line written to it.
type lineWriter func(string)

func (f lineWriter) Write(p []byte) (int, error) {
	for _, l := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		f(l)
	}
	return len(p), nil
}

const deploymentYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: guestbook-ui
spec:
  replicas: 2
  selector:
    matchLabels: {app: guestbook-ui}
  template:
    metadata:
      labels: {app: guestbook-ui}
    spec:
      containers:
      - name: guestbook-ui
        image: gcr.io/heptio-images/ks-guestbook-demo:0.2
        ports:
        - containerPort: 80
`

const serviceYAML = `apiVersion: v1
kind: Service
metadata:
  name: guestbook-ui
spec:
  ports:
  - port: 80
    targetPort: 80
  selector:
    app: guestbook-ui
`

// commitMessage is the subject of the fixture's commit, which the list and
// the app's header show next to its SHA.
const commitMessage = "guestbook: a Deployment and a Service"

// TestBrowser drives the UI in chromium: 1 log in; 2 an app created
// through the API appears in the list live; 3 its tree shows Deployment →
// ReplicaSet → Pods; 4 a live edit makes it OutOfSync with a diff; 5 Sync
// shows the progress until Synced and Healthy; 6 the history rolls back;
// 7 a read-only user sees no Sync button; 8 Delete takes the app off the
// list. The list and the header show the commit's subject, and an unknown
// page is the UI's "page not found". No request leaves the origin.
func TestBrowser(t *testing.T) {
	requireBrowser(t)
	url, err := bed.git.CreateRepo("guestbook-ui")
	if err != nil {
		t.Fatal(err)
	}
	repo, err := testbed.NewWorkRepo(t.Context(), t.TempDir(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for p, c := range map[string]string{"guestbook/deployment.yaml": deploymentYAML, "guestbook/service.yaml": serviceYAML} {
		if err := repo.WriteFile(p, c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := repo.CommitAndPush(t.Context(), commitMessage+"\n\nThe body is not shown.\n"); err != nil {
		t.Fatal(err)
	}
	shots := os.Getenv(envScreenshots)
	if shots == "" {
		shots = t.TempDir()
	}
	suffix := time.Now().UnixNano() % 1_000_000
	runScript(t, 4*time.Minute, "browser.mjs", map[string]string{
		"WINDLASS_URL":            bed.api.URL,
		"WINDLASS_ADMIN_PASSWORD": bed.adminPassword,
		"WINDLASS_VIEWER":         viewerName + ":" + viewerPassword,
		"WINDLASS_REPO":           url,
		"WINDLASS_COMMIT_MESSAGE": commitMessage,
		"WINDLASS_APP":            fmt.Sprintf("guestbook-%d", suffix),
		"WINDLASS_APP_NAMESPACE":  fmt.Sprintf("guestbook-ui-%d", suffix),
		"WINDLASS_CONTROL":        control(t).URL,
		"WINDLASS_SCREENSHOTS":    shots,
		"CHROMIUM":                chromiumPath(),
	})
}
