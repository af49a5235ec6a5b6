package ui

import (
	"context"
	"encoding/json"
	"errors"
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

	"github.com/windlass-cd/windlass/activities/notify"
	"github.com/windlass-cd/windlass/internal/notifications/notifytest"
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
// back: edits of live Deployments with client-go (a scale, or a strategic
// merge patch), and simulated pod logs.
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
	mux.HandleFunc("POST /patch", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Namespace, Name string
			Patch           json.RawMessage
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_, err := bed.kube.AppsV1().Deployments(in.Namespace).Patch(r.Context(), in.Name, types.StrategicMergePatchType, in.Patch,
			metav1.PatchOptions{FieldManager: "ui-test"})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	// Simulated pod logs: /logs adds lines to a file and makes kwok serve
	// it as the log of every pod in a namespace; /logs/append adds lines.
	logFile := filepath.Join(t.TempDir(), "pods.log")
	logs := func(serve bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			var in struct {
				Namespace string
				Lines     []string
			}
			if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if err := testbed.AppendCRILog(logFile, in.Lines...); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			if serve {
				cleanup, err := testbed.SimulatePodLogs(t.Context(), bed.env.Cluster.Config, in.Namespace, logFile, "")
				switch {
				case errors.Is(err, testbed.ErrNoPodLogs):
					// An older test bed's cluster: the script skips the logs.
					http.Error(w, err.Error(), http.StatusNotImplemented)
					return
				case err != nil:
					http.Error(w, err.Error(), http.StatusInternalServerError)
					return
				}
				t.Cleanup(cleanup)
			}
			w.WriteHeader(http.StatusNoContent)
		}
	}
	mux.HandleFunc("POST /logs", logs(true))
	mux.HandleFunc("POST /logs/append", logs(false))
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

// fixtureRepo creates a repository on the test bed's Git server with one
// commit of files (path to content), and returns its URL.
func fixtureRepo(t *testing.T, name string, files map[string]string, message string) string {
	t.Helper()
	url, err := bed.git.CreateRepo(name)
	if err != nil {
		t.Fatal(err)
	}
	repo, err := testbed.NewWorkRepo(t.Context(), t.TempDir(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for p, c := range files {
		if err := repo.WriteFile(p, c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := repo.CommitAndPush(t.Context(), message); err != nil {
		t.Fatal(err)
	}
	return url
}

// screenshotDir is where a script saves its screenshots.
func screenshotDir(t *testing.T) string {
	if d := os.Getenv(envScreenshots); d != "" {
		return d
	}
	return t.TempDir()
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
	url := fixtureRepo(t, "guestbook-ui", map[string]string{"guestbook/deployment.yaml": deploymentYAML, "guestbook/service.yaml": serviceYAML},
		commitMessage+"\n\nThe body is not shown.\n")
	shots := screenshotDir(t)
	suffix := time.Now().UnixNano() % 1_000_000
	notifyConfig, token := browserNotifications(t)
	runScript(t, 4*time.Minute, "browser.mjs", map[string]string{
		"WINDLASS_NOTIFY_CONFIG":  notifyConfig,
		"WINDLASS_NOTIFY_SECRET":  token,
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

// browserNotifications starts two loopback webhook receivers, one that
// takes messages and one that refuses them (400), stores the first one's
// token, and returns the configuration the script saves and the token,
// which the UI must never show.
func browserNotifications(t *testing.T) (string, string) {
	t.Helper()
	ok, down := notifytest.NewHTTP(t), notifytest.NewHTTP(t)
	down.FailNext(1000, http.StatusBadRequest)
	token := fmt.Sprintf("ui-hook-%d-do-not-show", time.Now().UnixNano())
	if err := bed.store.Put(t.Context(), notify.SecretName, map[string][]byte{"hook-token": []byte(token)}); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`service.webhook.hook: |
  url: %s/hook
  bearerToken: $hook-token
service.webhook.down: |
  url: %s/down
template.app-deployed: |
  message: "{{.app.metadata.name}} runs {{.app.status.sync.revision}}"
  webhook:
    hook:
      method: POST
      path: /deployed
      body: '{"revision": "{{.app.status.sync.revision}}"}'
    down:
      method: POST
      path: /deployed
      body: '{"revision": "{{.app.status.sync.revision}}"}'
`, ok.URL, down.URL), token
}

// Names long enough that a node of the default width cuts them.
const (
	longDeployment = "checkout-payments-reconciliation-worker-eu-west-1"
	longConfigMap  = "checkout-payments-reconciliation-settings-eu-west-1"
)

// layoutFiles are the fixture of TestBrowserLayout: long/ syncs, broken/
// does not (a ConfigMap key the API server refuses).
var layoutFiles = map[string]string{
	"long/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ` + longDeployment + `
spec:
  replicas: 1
  selector:
    matchLabels: {app: worker}
  template:
    metadata:
      labels: {app: worker}
    spec:
      containers:
      - name: worker
        image: registry.example/worker:1
        resources:
          requests: {cpu: 10m}
`,
	"long/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: ` + longConfigMap + `
data:
  mode: reconcile
`,
	// The test bed's worker excludes PodDisruptionBudgets: the app gets
	// an ExcludedResourceWarning condition.
	"excluded/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: kept
data:
  mode: on
`,
	"excluded/pdb.yaml": `apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: worker
spec:
  minAvailable: 1
  selector:
    matchLabels: {app: worker}
`,
	"broken/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: broken
data:
  "not a valid key!": "x"
`,
}

// TestBrowserLayout checks in chromium that the UI shows whole what it
// shows: tree nodes with long names and long statuses (OutOfSync,
// Missing, Progressing) are not cut, a resource's events keep their
// messages readable (not a word per line), the list marks an app
// whose last sync failed, and an app's page shows its conditions.
func TestBrowserLayout(t *testing.T) {
	requireBrowser(t)
	url := fixtureRepo(t, "layout", layoutFiles, "layout fixtures")
	shots := screenshotDir(t)
	suffix := time.Now().UnixNano() % 1_000_000
	ns := fmt.Sprintf("layout-%d", suffix)
	// The apps stay (Temporal goes with the test); their objects go.
	t.Cleanup(func() {
		_ = bed.kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	runScript(t, 4*time.Minute, "layout.mjs", map[string]string{
		"WINDLASS_URL":            bed.api.URL,
		"WINDLASS_ADMIN_PASSWORD": bed.adminPassword,
		"WINDLASS_REPO":           url,
		"WINDLASS_APP":            ns,
		"WINDLASS_APP_NAMESPACE":  ns,
		"WINDLASS_DEPLOYMENT":     longDeployment,
		"WINDLASS_CONFIGMAP":      longConfigMap,
		"WINDLASS_CONTROL":        control(t).URL,
		"WINDLASS_SCREENSHOTS":    shots,
		"CHROMIUM":                chromiumPath(),
	})
}
