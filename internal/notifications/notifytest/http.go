package notifytest

import (
	"io"
	"net/http"
	"net/http/httptest"
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
// the first Fail requests get FailStatus, chat.postMessage gets Slack's
// {"ok":true}, and POST .../deployments gets {"id":1}.
type HTTP struct {
	*httptest.Server

	mu         sync.Mutex
	reqs       []Request
	failLeft   int
	failStatus int
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
func (h *HTTP) FailNext(n, status int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failLeft, h.failStatus = n, status
}

func (h *HTTP) serve(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	h.reqs = append(h.reqs, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: string(b)})
	fail := h.failLeft > 0
	if fail {
		h.failLeft--
	}
	status := h.failStatus
	h.mu.Unlock()
	if fail {
		http.Error(w, "receiver told to fail", status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch {
	case strings.HasSuffix(r.URL.Path, "/chat.postMessage"):
		_, _ = io.WriteString(w, `{"ok":true}`)
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/deployments"):
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"id":1}`)
	default:
		_, _ = io.WriteString(w, `{}`)
	}
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
