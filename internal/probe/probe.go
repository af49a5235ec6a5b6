package probe

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"sync"
	"time"
)

// Paths of the operational endpoints.
const (
	LivePath    = "/healthz"
	ReadyPath   = "/readyz"
	MetricsPath = "/metrics"
)

// Check reports whether a dependency is usable.
type Check func(ctx context.Context) error

// DefaultTimeout bounds one check.
const DefaultTimeout = 3 * time.Second

// Probes are the named readiness checks of a role.
type Probes struct {
	checks  map[string]Check
	timeout time.Duration
}

// New makes probes with the given readiness checks.
func New(checks map[string]Check) *Probes {
	return &Probes{checks: checks, timeout: DefaultTimeout}
}

// Report is the body of /readyz.
type Report struct {
	// Status is "ok" or "unavailable".
	Status string `json:"status"`
	// Checks maps each check to "ok" or its error.
	Checks map[string]string `json:"checks"`
}

// Ready runs every check but the excluded ones and reports.
func (p *Probes) Ready(ctx context.Context, exclude ...string) Report {
	r := Report{Status: "ok", Checks: make(map[string]string, len(p.checks))}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	names := make([]string, 0, len(p.checks))
	for n := range p.checks {
		if !slices.Contains(exclude, n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, p.timeout)
			defer cancel()
			res := "ok"
			if err := p.checks[n](cctx); err != nil {
				res = err.Error()
			}
			mu.Lock()
			defer mu.Unlock()
			r.Checks[n] = res
			if res != "ok" {
				r.Status = "unavailable"
			}
		})
	}
	wg.Wait()
	return r
}

// ServeReady answers 200 when every check passes, else 503. As with the
// kube-apiserver, ?exclude=NAME (repeated) leaves checks out: an API
// server probed with /readyz?exclude=temporal stays in rotation while
// Temporal is down, serving the apps' last known status.
func (p *Probes) ServeReady(w http.ResponseWriter, req *http.Request) {
	r := p.Ready(req.Context(), req.URL.Query()["exclude"]...)
	code := http.StatusOK
	if r.Status != "ok" {
		code = http.StatusServiceUnavailable
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(r)
}

// ServeLive answers 200: the process serves.
func ServeLive(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte("ok\n"))
}

// Handler serves /healthz, /readyz and /metrics (when metrics is not nil)
// for GET and HEAD requests, and passes everything else to next (404 when
// next is nil).
func Handler(p *Probes, metrics http.Handler, next http.Handler) http.Handler {
	if next == nil {
		next = http.NotFoundHandler()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			switch r.URL.Path {
			case LivePath:
				ServeLive(w, r)
				return
			case ReadyPath:
				p.ServeReady(w, r)
				return
			case MetricsPath:
				if metrics != nil {
					metrics.ServeHTTP(w, r)
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// Cached runs check at most once per ttl and answers the last outcome in
// between, so that frequent probes stay cheap for the dependency. Callers
// wait for a run in progress. A ttl of 0 runs check every time.
func Cached(check Check, ttl time.Duration) Check {
	var (
		mu   sync.Mutex
		at   time.Time
		last error
	)
	return func(ctx context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		if !at.IsZero() && time.Since(at) < ttl {
			return last
		}
		last = check(ctx)
		at = time.Now()
		return last
	}
}
