package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-cd/windlass/api"
	"github.com/windlass-cd/windlass/internal/labelmatch"
	"github.com/windlass-cd/windlass/workflows"
)

// quotaDeploymentYAML never gets a pod (a quota of 0 pods), so the
// Deployment passes its short progress deadline and turns Degraded.
const quotaDeploymentYAML = `apiVersion: v1
kind: ResourceQuota
metadata:
  name: pods
  annotations: {argocd.argoproj.io/sync-wave: "-1"}
spec:
  hard: {pods: "0"}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: guestbook-ui
spec:
  replicas: 1
  progressDeadlineSeconds: 10
  selector:
    matchLabels: {app: guestbook-ui}
  template:
    metadata:
      labels: {app: guestbook-ui}
    spec:
      containers:
      - name: guestbook-ui
        image: gcr.io/heptio-images/ks-guestbook-demo:0.1
`

// envSetYAML is a git-directories set over the environments' directories;
// each app deploys to its own namespace, <set>-<dir>.
func envSetYAML(name, repoURL string) string {
	return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: %[1]s}
spec:
  generators:
  - git:
      repoURL: %[2]s
      revision: main
      directories: [{path: '*'}]
  template:
    metadata: {name: '%[1]s-{{path.basename}}', labels: {env: '{{path.basename}}'}}
    spec:
      project: default
      source: {repoURL: %[2]s, targetRevision: main, path: '{{path}}'}
      destination: {server: 'https://kubernetes.default.svc', namespace: '%[1]s-{{path.basename}}'}
      syncPolicy: {syncOptions: [CreateNamespace=true]}
`, name, repoURL)
}

// adminToken logs the admin in through the API.
func adminToken(t *testing.T) string {
	t.Helper()
	var out struct {
		Token string `json:"token"`
	}
	if code := apiCall(t, "", http.MethodPost, "/api/v1/session", map[string]string{"username": "admin", "password": bed.adminPassword}, &out); code != http.StatusOK && code != http.StatusCreated {
		t.Fatalf("login: status %d", code)
	}
	return out.Token
}

// apiCall calls the API with a JSON body (a string is sent as it is) and
// decodes the answer into out; it returns the status.
func apiCall(t *testing.T, token, method, path string, body, out any) int {
	t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, bed.api.URL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: decode %s: %v", method, path, b, err)
		}
	}
	return resp.StatusCode
}

// TestBrowserAppSets drives the set pages in chromium against a real set
// (a git-directories set of dev, staging and prod, on real Git and
// Temporal) and its RollingSync rollout, in which staging turns Degraded:
// the list shows the set live with its generator, app count and state, and
// a set that fails; the set's page shows its apps, the generators' output
// and the rollout halted at step 2 naming the staging app; a read-only
// user cannot control it; abort ends it; deleting the set through the UI
// takes it off the list.
func TestBrowserAppSets(t *testing.T) {
	requireBrowser(t)
	url := fixtureRepo(t, "envs", map[string]string{
		"dev/deployment.yaml":     deploymentYAML,
		"staging/deployment.yaml": quotaDeploymentYAML,
		"prod/deployment.yaml":    deploymentYAML,
	}, "envs: dev, staging and prod")
	set := fmt.Sprintf("envs-%d", time.Now().UnixNano()%1_000_000)
	t.Cleanup(func() {
		for _, env := range []string{"dev", "staging", "prod"} {
			_ = bed.kube.CoreV1().Namespaces().Delete(context.Background(), set+"-"+env, metav1.DeleteOptions{})
		}
	})
	token := adminToken(t)
	if code := apiCall(t, token, http.MethodPost, "/api/v1/applicationsets", envSetYAML(set, url), nil); code != http.StatusCreated {
		t.Fatalf("create set %s: status %d", set, code)
	}
	apps := waitSetApps(t, token, set, 3)
	startEnvRollout(t, set, apps)

	runScript(t, 5*time.Minute, "appsets.mjs", map[string]string{
		"WINDLASS_URL":            bed.api.URL,
		"WINDLASS_ADMIN_PASSWORD": bed.adminPassword,
		"WINDLASS_VIEWER":         viewerName + ":" + viewerPassword,
		"WINDLASS_SET":            set,
		"WINDLASS_SCREENSHOTS":    screenshotDir(t),
		"CHROMIUM":                chromiumPath(),
	})
}

// waitSetApps waits until the set has n apps and answers them.
func waitSetApps(t *testing.T, token, set string, n int) []string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var d api.AppSetDetail
		code := apiCall(t, token, http.MethodGet, "/api/v1/applicationsets/"+set, nil, &d)
		if code == http.StatusOK && len(d.Status.Apps) == n {
			return d.Status.Apps
		}
		if time.Now().After(deadline) {
			t.Fatalf("set %s: status %d, apps %v, error %q; want %d apps", set, code, d.Status.Apps, d.Status.Error, n)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// startEnvRollout starts the set's RollingSync rollout, dev then staging
// then prod, as the set's workflow does; a rollout the set has started
// already is kept.
func startEnvRollout(t *testing.T, set string, apps []string) {
	t.Helper()
	in := workflows.RolloutInput{Set: set, Project: "default", Target: "main", PollSeconds: 2}
	for _, env := range []string{"dev", "staging", "prod"} {
		in.Steps = append(in.Steps, workflows.RolloutStep{MatchExpressions: []labelmatch.Expression{{Key: "env", Operator: labelmatch.OpIn, Values: []string{env}}}})
		ref := "default/" + set + "-" + env
		if !slices.Contains(apps, ref) {
			t.Fatalf("the set's apps %v lack %s", apps, ref)
		}
		in.Apps = append(in.Apps, workflows.RolloutApp{Project: "default", Name: set + "-" + env, Labels: map[string]string{"env": env}})
	}
	_, err := bed.temporal.ExecuteWorkflow(t.Context(), client.StartWorkflowOptions{
		ID: workflows.RolloutWorkflowID(set), TaskQueue: workflows.TaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, workflows.RollingSyncWorkflowName, in)
	if err != nil {
		t.Fatalf("start the rollout of %s: %v", set, err)
	}
}
