package probe

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestHandler(t *testing.T) {
	redisDown := errors.New("dial tcp 127.0.0.1:1: connection refused")
	hang := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	ok := func(context.Context) error { return nil }
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("m 1\n")) })
	next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	tests := []struct {
		name       string
		checks     map[string]Check
		method     string
		path       string
		wantCode   int
		wantReport *Report
	}{
		{"ready", map[string]Check{"temporal": ok, "redis": ok}, "GET", ReadyPath, 200,
			&Report{Status: "ok", Checks: map[string]string{"temporal": "ok", "redis": "ok"}}},
		{"redis down", map[string]Check{"temporal": ok, "redis": func(context.Context) error { return redisDown }}, "GET", ReadyPath, 503,
			&Report{Status: "unavailable", Checks: map[string]string{"temporal": "ok", "redis": redisDown.Error()}}},
		{"check times out", map[string]Check{"temporal": hang}, "GET", ReadyPath, 503,
			&Report{Status: "unavailable", Checks: map[string]string{"temporal": context.DeadlineExceeded.Error()}}},
		{"a failing check excluded", map[string]Check{"temporal": func(context.Context) error { return redisDown }, "redis": ok}, "GET", ReadyPath + "?exclude=temporal", 200,
			&Report{Status: "ok", Checks: map[string]string{"redis": "ok"}}},
		{"another check excluded", map[string]Check{"temporal": func(context.Context) error { return redisDown }, "redis": ok}, "GET", ReadyPath + "?exclude=redis&exclude=kubernetes", 503,
			&Report{Status: "unavailable", Checks: map[string]string{"temporal": redisDown.Error()}}},
		{"live while a dependency is down", map[string]Check{"redis": func(context.Context) error { return redisDown }}, "GET", LivePath, 200, nil},
		{"metrics", nil, "GET", MetricsPath, 200, nil},
		{"other paths pass through", nil, "GET", "/api/v1/applications", http.StatusTeapot, nil},
		{"POST passes through", nil, "POST", ReadyPath, http.StatusTeapot, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := New(tt.checks)
			p.timeout = 50 * time.Millisecond
			rec := httptest.NewRecorder()
			Handler(p, metrics, next).ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
			if rec.Code != tt.wantCode {
				t.Fatalf("code = %d, want %d (body %s)", rec.Code, tt.wantCode, rec.Body)
			}
			if tt.wantReport == nil {
				return
			}
			var got Report
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(*tt.wantReport, got); d != "" {
				t.Errorf("report (-want +got):\n%s", d)
			}
		})
	}
}

func TestNoMetricsHandler(t *testing.T) {
	rec := httptest.NewRecorder()
	Handler(New(nil), nil, nil).ServeHTTP(rec, httptest.NewRequest("GET", MetricsPath, nil))
	if rec.Code != http.StatusNotFound {
		t.Fatalf("code = %d, want 404", rec.Code)
	}
}

// TestCached: within the ttl a check answers its last outcome without
// running; after it, or with a ttl of 0, it runs again.
func TestCached(t *testing.T) {
	down := errors.New("down")
	for _, tt := range []struct {
		name     string
		ttl      time.Duration
		outcomes []error // what the check answers, run by run
		wantRuns int
		want     []error // what each of the calls answers
	}{
		{"within the ttl", time.Hour, []error{nil, down}, 1, []error{nil, nil, nil}},
		{"a failure is kept too", time.Hour, []error{down, nil}, 1, []error{down, down}},
		{"no ttl", 0, []error{nil, down, nil}, 3, []error{nil, down, nil}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			runs := 0
			c := Cached(func(context.Context) error { runs++; return tt.outcomes[runs-1] }, tt.ttl)
			var got []error
			for range tt.want {
				got = append(got, c(t.Context()))
			}
			if runs != tt.wantRuns || !cmp.Equal(got, tt.want, cmpopts.EquateErrors()) {
				t.Errorf("runs = %d, answers %v; want %d, %v", runs, got, tt.wantRuns, tt.want)
			}
		})
	}
}
