package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/windlass-cd/windlass/api"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/testbed"
	"github.com/windlass-cd/windlass/workflows"
)

func (e *env) login(ctx context.Context, password string) (string, error) {
	var out struct {
		Token string `json:"token"`
	}
	code, err := e.request(ctx, http.MethodPost, "/api/v1/session", map[string]string{"username": "admin", "password": password}, &out)
	if err != nil || code != http.StatusOK || out.Token == "" {
		return "", fmt.Errorf("login: status %d: %v", code, err)
	}
	return out.Token, nil
}

// request calls the API as admin with body (a string as it is, YAML of
// Argo CD manifests; anything else as JSON) and decodes the JSON answer
// into out (if not nil). A status of 300 or more is an error.
func (e *env) request(ctx context.Context, method, path string, body, out any) (int, error) {
	var r io.Reader
	if s, ok := body.(string); ok {
		r = strings.NewReader(s)
	} else if body != nil {
		js, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		r = bytes.NewReader(js)
	}
	req, err := http.NewRequestWithContext(ctx, method, e.api+path, r)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode >= 300 {
		return resp.StatusCode, fmt.Errorf("%s %s: status %d: %s", method, path, resp.StatusCode, data)
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: decode: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}

func (e *env) appView(ctx context.Context, name string) (workflows.AppView, error) {
	var v workflows.AppView
	_, err := e.request(ctx, http.MethodGet, "/api/v1/applications/"+name, nil, &v)
	return v, err
}

// countApps counts the apps whose names start with prefix that the list
// shows with the filter parameters.
func (e *env) countApps(ctx context.Context, prefix, filter string) (int, error) {
	total := 0
	for cursor := ""; ; {
		var page api.AppList
		if _, err := e.request(ctx, http.MethodGet, "/api/v1/applications?limit=1000&search="+url.QueryEscape(prefix)+filter+"&cursor="+url.QueryEscape(cursor), nil, &page); err != nil {
			return 0, err
		}
		total += len(page.Items)
		if page.Next == "" {
			return total, nil
		}
		cursor = page.Next
	}
}

// poll calls cond every interval until it holds, fails, or timeout passes.
func poll(ctx context.Context, timeout, interval time.Duration, what string, cond func() (bool, string, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	state := ""
	for {
		ok, s, err := cond()
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if ok {
			return nil
		}
		if s != "" {
			state = s
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out after %s waiting for %s; last state: %s", timeout, what, state)
		case <-time.After(interval):
		}
	}
}

// Fixture of B1-B3: a ConfigMap of about 2 KB, a Deployment with one
// replica and a Service.
const (
	deploymentYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports:
        - containerPort: 80
`
	serviceYAML = `apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
  - port: 80
    targetPort: 80
`
)

// configMapYAML is the ConfigMap with version in its data, about 2 KB.
func configMapYAML(version string) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  version: \"" + version + "\"\n")
	for i := range 24 {
		fmt.Fprintf(&b, "  key%02d: %q\n", i, strings.Repeat("x", 64))
	}
	return b.String()
}

// newRepo creates a repository with the fixture under app/ and returns its
// URL and work tree (for later pushes).
func (e *env) newRepo(ctx context.Context, name string) (string, *testbed.WorkRepo, error) {
	repoURL, err := e.git.CreateRepo(name)
	if err != nil {
		return "", nil, err
	}
	w, err := e.pushFiles(ctx, name, repoURL,
		map[string]string{"app/configmap.yaml": configMapYAML("0"), "app/deployment.yaml": deploymentYAML, "app/service.yaml": serviceYAML})
	return repoURL, w, err
}

// pushFiles commits files to the repository at repoURL through a work tree
// named name, and returns the work tree.
func (e *env) pushFiles(ctx context.Context, name, repoURL string, files map[string]string) (*testbed.WorkRepo, error) {
	w, err := testbed.NewWorkRepo(ctx, e.tmp+"/work/"+name, repoURL, nil)
	if err != nil {
		return nil, err
	}
	if err := w.WriteFiles(files); err != nil {
		return nil, err
	}
	if _, err := w.CommitAndPush(ctx, "fixture"); err != nil {
		return nil, err
	}
	return w, nil
}

// appBody is an automated app of repoURL's app/ in its own namespace,
// created with CreateNamespace. The refresh interval is an hour: only
// webhooks, the cluster watch and the sync itself move it.
func appBody(name, repoURL string, selfHeal bool) map[string]any {
	return map[string]any{
		"name": name, "project": "default", "refreshSeconds": 3600,
		"source":      map[string]any{"repoURL": repoURL, "path": "app", "targetRevision": "main"},
		"destination": map[string]any{"server": appspec.InClusterServer, "namespace": name},
		"syncPolicy": map[string]any{"syncOptions": []string{"CreateNamespace=true"},
			"automated": map[string]any{"selfHeal": selfHeal}},
	}
}

// waitSynced waits until the app is Synced and Healthy at sha (any SHA
// when empty), with no operation running.
func (e *env) waitSynced(ctx context.Context, name, sha string, timeout, interval time.Duration) error {
	return poll(ctx, timeout, interval, name+" Synced and Healthy", func() (bool, string, error) {
		v, err := e.appView(ctx, name)
		if err != nil {
			return false, err.Error(), nil
		}
		st := v.Status
		return st.Sync == appspec.SyncSynced && st.Health == appspec.HealthHealthy && st.Operation == nil && (sha == "" || st.SHA == sha),
			fmt.Sprintf("%s/%s sha=%s", st.Sync, st.Health, st.SHA), nil
	})
}
