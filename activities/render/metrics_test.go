package render

import (
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// recordedMetrics records what the renderer reports.
type recordedMetrics struct {
	mu       sync.Mutex
	cache    []bool
	tools    []string
	negative bool // a duration was negative
}

func (m *recordedMetrics) CacheRequest(hit bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cache = append(m.cache, hit)
}

func (m *recordedMetrics) Rendered(tool string, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tools = append(m.tools, tool)
	m.negative = m.negative || d < 0
}

func TestRendererMetrics(t *testing.T) {
	git, req := fixtureRequest(t, "a")
	m := &recordedMetrics{}
	r, err := NewRenderer(Config{Store: &memStore{}, Git: git, Logger: quietLogger(), Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := r.Render(t.Context(), req, false) // miss, render
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Render(t.Context(), req, false); err != nil { // hit
		t.Fatal(err)
	}
	if _, err := r.Load(t.Context(), ref); err != nil { // hit
		t.Fatal(err)
	}
	if _, err := r.Render(t.Context(), req, true); err != nil { // hard: no read, render
		t.Fatal(err)
	}
	bad := req
	bad.Tool = "frobnicate"
	if _, err := r.Render(t.Context(), bad, false); err == nil { // miss, unknown tool
		t.Fatal("an unknown tool rendered")
	}
	if d := cmp.Diff([]bool{false, true, true, false}, m.cache); d != "" {
		t.Errorf("cache requests (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"directory", "directory", "unknown"}, m.tools); d != "" {
		t.Errorf("renders (-want +got):\n%s", d)
	}
	if m.negative {
		t.Error("a negative render duration was recorded")
	}
}
