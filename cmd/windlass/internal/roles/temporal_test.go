package roles

import (
	"context"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/windlass-cd/windlass/internal/syncbuf"
	"github.com/windlass-cd/windlass/internal/temporalx"
)

// The temporal role serves a frontend that clients can dial, prints its
// address and that of its profiles (--debug-address), and stops when its
// context ends.
func TestRunTemporal(t *testing.T) {
	cfg, err := loadTemporalConfig([]string{"--data-dir", t.TempDir(), "--address", "127.0.0.1:0", "--ui-address", "off", "--log-level", "warn", "--debug-address", "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var out syncbuf.Buffer
	done := make(chan error, 1)
	go func() { done <- runTemporal(ctx, cfg, &out) }()
	var addr, profiles string
	deadline := time.Now().Add(2 * time.Minute)
	for addr == "" {
		if time.Now().After(deadline) {
			t.Fatalf("no frontend address printed: %q", out.String())
		}
		select {
		case err := <-done:
			t.Fatalf("temporal ended early: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
		for line := range strings.Lines(out.String()) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Frontend:"); ok {
				addr = strings.TrimSpace(v)
			}
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Profiles:"); ok {
				profiles = strings.TrimSpace(v)
			}
		}
	}
	c, err := temporalx.Dial(ctx, temporalx.ClientConfig{HostPort: addr, Namespace: cfg.Namespace})
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	c.Close()
	for _, tc := range []struct {
		path string
		want int
	}{
		{"goroutine?debug=1", http.StatusOK},
		{"cmdline", http.StatusNotFound}, // flags may carry secrets
	} {
		resp, err := http.Get(profiles + tc.path)
		if err != nil {
			t.Fatalf("profiles at %q: %v", profiles, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("GET %s%s: %d, want %d: %.200q", profiles, tc.path, resp.StatusCode, tc.want, body)
		}
		if tc.want == http.StatusOK && !strings.Contains(string(body), "go.temporal.io/server") {
			t.Errorf("GET %s%s: the server's goroutines not listed: %.300q", profiles, tc.path, body)
		}
	}
	if !strings.Contains(out.String(), filepath.Join(cfg.DataDir, "temporal.db")) {
		t.Fatalf("database not named: %q", out.String())
	}
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("stop: %v", err)
	}
}
