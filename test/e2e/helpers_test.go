package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/windlass-cd/windlass/internal/testbed"
)

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; last state: %s", timeout, what, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// call does an API request as admin and decodes the JSON answer into out
// (if not nil).
func call(t *testing.T, method, path string, body any, out any) int {
	t.Helper()
	return callAs(t, bed.token, method, path, body, out)
}

// callAs does an API request with a bearer token ("" for none).
func callAs(t *testing.T, token, method, path string, body any, out any) int {
	t.Helper()
	return callBase(t, bed.api.URL, token, method, path, body, out)
}

// callBase does a request of the API at base with a bearer token ("" for
// none): a string body as it is, another as JSON. It decodes the JSON
// answer into out (if not nil) and returns the status code.
func callBase(t *testing.T, base, token, method, path string, body any, out any) int {
	t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		js, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(js)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, base+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: decode %q: %v", method, path, data, err)
		}
	}
	return resp.StatusCode
}

// newRepo creates a fixture repository and a work tree to push to it.
func newRepo(t *testing.T, name string) (string, *testbed.WorkRepo) {
	t.Helper()
	url, err := bed.git.CreateRepo(name)
	if err != nil {
		t.Fatal(err)
	}
	w, err := testbed.NewWorkRepo(t.Context(), t.TempDir(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return url, w
}

func push(t *testing.T, w *testbed.WorkRepo, files map[string]string) string {
	t.Helper()
	for p, c := range files {
		if err := w.WriteFile(p, c); err != nil {
			t.Fatal(err)
		}
	}
	sha, err := w.CommitAndPush(t.Context(), "update")
	if err != nil {
		t.Fatal(err)
	}
	return sha
}

func uniq(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()%1_000_000_000)
}

const deploymentYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: guestbook-ui
spec:
  replicas: 1
  selector:
    matchLabels: {app: guestbook-ui}
  template:
    metadata:
      labels: {app: guestbook-ui}
    spec:
      containers:
      - name: guestbook-ui
        image: %s
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

// newAuthRepo clones a repository of the authenticated Git server.
func newAuthRepo(t *testing.T, url string) *testbed.WorkRepo {
	t.Helper()
	w, err := testbed.NewWorkRepo(t.Context(), t.TempDir(), url, &githttp.BasicAuth{Username: "deploy", Password: bed.secret})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// pemOf is PEM data given inline, or read from its file.
func pemOf(t *testing.T, data []byte, file string) string {
	t.Helper()
	if len(data) > 0 || file == "" {
		return string(data)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
