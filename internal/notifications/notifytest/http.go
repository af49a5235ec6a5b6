package notifytest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Request is one recorded HTTP request.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   string
}

// HTTP is a recording HTTP receiver. It answers 200 with "{}", except:
// the next FailNext requests (to FailNextAt's path suffix) fail,
// chat.postMessage gets Slack's {"ok":true}, and .../deployments acts as
// GitHub's deployments list: POST creates one (ids from 1), GET lists
// those of the query's ref and environment, with their payloads.
type HTTP struct {
	*httptest.Server

	mu          sync.Mutex
	reqs        []Request
	failLeft    int
	failStatus  int
	failSuffix  string
	deployments []deployment
}

// deployment is one created GitHub deployment.
type deployment struct {
	ID          int64           `json:"id"`
	Ref         string          `json:"ref"`
	Environment string          `json:"environment"`
	Payload     json.RawMessage `json:"payload,omitempty"`
}

// NewHTTP starts a receiver on loopback, closed when the test ends.
func NewHTTP(t testing.TB) *HTTP {
	t.Helper()
	h := &HTTP{}
	h.Server = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.Close)
	return h
}

// FailNext makes the next n requests fail with status.
func (h *HTTP) FailNext(n, status int) { h.FailNextAt("", n, status) }

// FailNextAt makes the next n requests whose path ends with suffix fail
// with status.
func (h *HTTP) FailNextAt(suffix string, n, status int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failLeft, h.failStatus, h.failSuffix = n, status, suffix
}

func (h *HTTP) serve(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	h.reqs = append(h.reqs, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: string(b)})
	fail := h.failLeft > 0 && strings.HasSuffix(r.URL.Path, h.failSuffix)
	if fail {
		h.failLeft--
	}
	status := h.failStatus
	var deploys []byte
	if !fail && strings.HasSuffix(r.URL.Path, "/deployments") {
		deploys = h.deploymentsLocked(r.Method, r.URL.Query(), b)
	}
	h.mu.Unlock()
	if fail {
		http.Error(w, "receiver told to fail", status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch {
	case strings.HasSuffix(r.URL.Path, "/chat.postMessage"):
		_, _ = io.WriteString(w, `{"ok":true}`)
	case r.Method == http.MethodPost && deploys != nil:
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(deploys)
	case deploys != nil:
		_, _ = w.Write(deploys)
	default:
		_, _ = io.WriteString(w, `{}`)
	}
}

// deploymentsLocked creates a deployment (POST) or lists the matching
// ones, and returns the answer.
func (h *HTTP) deploymentsLocked(method string, q url.Values, body []byte) []byte {
	if method == http.MethodPost {
		var d deployment
		_ = json.Unmarshal(body, &d)
		d.ID = int64(len(h.deployments) + 1)
		h.deployments = append(h.deployments, d)
		out, _ := json.Marshal(d)
		return out
	}
	list := []deployment{}
	for _, d := range h.deployments {
		if (q.Get("ref") == "" || q.Get("ref") == d.Ref) && (q.Get("environment") == "" || q.Get("environment") == d.Environment) {
			list = append(list, d)
		}
	}
	out, _ := json.Marshal(list)
	return out
}

// Requests returns the requests so far, failed ones included.
func (h *HTTP) Requests() []Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Request(nil), h.reqs...)
}

// Wait waits until at least n requests whose path starts with prefix
// arrived, and returns them.
func (h *HTTP) Wait(t testing.TB, prefix string, n int, timeout time.Duration) []Request {
	t.Helper()
	var got []Request
	deadline := time.Now().Add(timeout)
	for {
		got = got[:0]
		for _, r := range h.Requests() {
			if strings.HasPrefix(r.Path, prefix) {
				got = append(got, r)
			}
		}
		if len(got) >= n || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(got) < n {
		t.Fatalf("%d requests to %s, want %d", len(got), prefix, n)
	}
	return got
}
