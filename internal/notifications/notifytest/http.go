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
	// Failed: the receiver was told to fail it (FailNext).
	Failed bool
	// Held: HoldNext held it, unanswered, until its client went away.
	Held bool
	// Duplicate: a request with the same Idempotency-Key was answered
	// 2xx before; the receiver answers it again and does not accept it.
	Duplicate bool
}

// idempotencyHeader is the header the notify activities send a
// delivery's key in.
const idempotencyHeader = "Idempotency-Key"

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
	accepted    map[string]bool
	holdPrefix  string
	held        chan struct{}
	stop        chan struct{}
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
	h := &HTTP{accepted: map[string]bool{}, stop: make(chan struct{})}
	h.Server = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(func() {
		close(h.stop) // releases a held request whose client still waits
		h.Close()
	})
	return h
}

// HoldNext holds the next request whose path starts with prefix: it is
// recorded, then left unanswered until its client goes away (or the test
// ends). The channel is closed when it arrives: the sender is then
// caught in the middle of a delivery.
func (h *HTTP) HoldNext(prefix string) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.holdPrefix, h.held = prefix, make(chan struct{})
	return h.held
}

// Accepted returns the requests to a path prefix that were answered 2xx
// and were not duplicates: the messages the receiver took in.
func (h *HTTP) Accepted(prefix string) []Request {
	var out []Request
	for _, r := range h.Requests() {
		if strings.HasPrefix(r.Path, prefix) && !r.Held && !r.Duplicate && !r.Failed {
			out = append(out, r)
		}
	}
	return out
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
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: string(b)}
	if h.held != nil && strings.HasPrefix(r.URL.Path, h.holdPrefix) {
		req.Held = true
		h.reqs = append(h.reqs, req)
		close(h.held)
		h.held = nil
		h.mu.Unlock()
		select {
		case <-r.Context().Done():
		case <-h.stop:
		}
		return
	}
	fail := h.failLeft > 0 && strings.HasSuffix(r.URL.Path, h.failSuffix)
	if fail {
		h.failLeft--
		req.Failed = true
	} else if key := r.Header.Get(idempotencyHeader); key != "" {
		req.Duplicate = h.accepted[key]
		h.accepted[key] = true
	}
	h.reqs = append(h.reqs, req)
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
