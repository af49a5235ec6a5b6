package roles

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"
	"k8s.io/client-go/rest"

	"github.com/windlass-cd/windlass/internal/metrics"
	"github.com/windlass-cd/windlass/internal/probe"
	"github.com/windlass-cd/windlass/internal/temporalx"
	"github.com/windlass-cd/windlass/internal/testbed"
)

// freeAddr returns a loopback address free at the time of the call.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func suffix() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// scrape returns the text exposition of url.
func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return string(b)
}

// sample returns the value of the first sample of the exposition whose
// line starts with name and contains every label, or -1.
func sample(text, name string, labels ...string) float64 {
	for line := range strings.SplitSeq(text, "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(line, l)
		}
		if !ok {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			return v
		}
	}
	return -1
}

// gitApp serves a repository on loopback whose folder app/ holds file,
// and returns its URL.
func gitApp(t *testing.T, repo, file, content string) string {
	t.Helper()
	gitSrv, err := testbed.StartGitServer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gitSrv.Close() })
	repoURL, err := gitSrv.CreateRepo(repo)
	if err != nil {
		t.Fatal(err)
	}
	work, err := testbed.NewWorkRepo(t.Context(), t.TempDir(), repoURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := work.WriteFile("app/"+file, content); err != nil {
		t.Fatal(err)
	}
	if _, err := work.CommitAndPush(t.Context(), "app"); err != nil {
		t.Fatal(err)
	}
	return repoURL
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// api calls the REST API with the token and decodes the answer into out.
func apiCall(t *testing.T, method, url, token string, body any, out any) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, url, err, raw)
		}
	}
}

// TestMetricsAndProbes runs `windlass dev` (embedded Temporal, the test
// bed's Redis and cluster) and a `windlass worker` against it, syncs an
// app through the REST API, then scrapes /metrics and the probes of both
// roles; a Redis that does not answer makes /readyz 503.
func TestMetricsAndProbes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Temporal and the test bed")
	}
	env, cleanup, err := testbed.Shared(t.Context(), "cmd-ops")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	appsRefresh = 500 * time.Millisecond
	t.Cleanup(func() { appsRefresh = 30 * time.Second })

	// A Git repository with a ConfigMap.
	repoURL := gitApp(t, "ops.git", "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ops\ndata:\n  k: v\n")

	ctx, cancel := context.WithCancel(t.Context())
	sfx := suffix()
	dataDir := t.TempDir()
	apiAddr, devMetrics, temporalAddr, workerMetrics := freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t)
	clearProdEnv(t)
	t.Setenv("KUBECONFIG", env.Cluster.Kubeconfig)
	devCfg, err := loadDevConfig([]string{"--data-dir", dataDir, "--api-address", apiAddr, "--temporal-address", temporalAddr,
		"--temporal-ui-address", "off", "--redis-address", env.RedisAddr, "--metrics-address", devMetrics,
		"--management-namespace", "windlass-ops-" + sfx, "--self-heal-sweep", "-1s", "--log-level", "warn"})
	if err != nil {
		t.Fatal(err)
	}
	devDone := make(chan error, 1)
	go func() { devDone <- runDev(ctx, devCfg) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-devDone:
			if err != nil {
				t.Errorf("windlass dev: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("windlass dev did not stop")
		}
	})
	api := "http://" + apiAddr
	eventually(t, 2*time.Minute, "windlass dev to serve", func() bool {
		select {
		case err := <-devDone:
			t.Fatalf("windlass dev ended: %v", err)
		default:
		}
		resp, err := http.Get(api + probe.ReadyPath)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	// The worker role, against dev's Temporal, on queues of its own (the
	// app's work stays with dev's worker, whose metrics are checked below).
	wcfg, err := loadWorkerConfig([]string{"--temporal-address", temporalAddr, "--redis-address", env.RedisAddr,
		"--task-queue", "ops-a-" + sfx, "--task-queue", "ops-b-" + sfx,
		"--metrics-address", workerMetrics, "--cache-dir", t.TempDir(), "--management-namespace", "windlass-ops-" + sfx,
		"--self-heal-sweep", "-1s", "--log-level", "warn"})
	if err != nil {
		t.Fatal(err)
	}
	workerDone := make(chan error, 1)
	wctx, wcancel := context.WithCancel(ctx)
	go func() { workerDone <- runWorker(wctx, wcfg) }()
	t.Cleanup(func() { wcancel(); <-workerDone })
	var report probe.Report
	eventually(t, time.Minute, "the worker to be ready", func() bool {
		resp, err := http.Get("http://" + workerMetrics + probe.ReadyPath)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		_ = json.NewDecoder(resp.Body).Decode(&report)
		return resp.StatusCode == http.StatusOK
	})
	if len(report.Checks) != 4 || report.Checks[checkWorker] != "ok" || report.Checks[checkRedis] != "ok" || report.Checks[checkTemporal] != "ok" ||
		report.Checks[checkKube] != "ok" {
		t.Errorf("worker readiness %+v", report)
	}

	// Log in, create an app and sync it.
	pw, err := os.ReadFile(filepath.Join(dataDir, "initial-admin-password"))
	if err != nil {
		t.Fatal(err)
	}
	var session struct{ Token string }
	apiCall(t, "POST", api+"/api/v1/session", "", map[string]string{"username": "admin", "password": strings.TrimSpace(string(pw))}, &session)
	name, ns := "ops-"+sfx, "ops-"+sfx
	apiCall(t, "POST", api+"/api/v1/applications", session.Token, map[string]any{
		"name": name, "project": "default",
		"source":      map[string]string{"repoURL": repoURL, "path": "app", "targetRevision": "HEAD"},
		"destination": map[string]string{"server": "https://kubernetes.default.svc", "namespace": ns},
		"syncPolicy":  map[string]any{"syncOptions": []string{"CreateNamespace=true"}},
	}, nil)
	apiCall(t, "POST", api+"/api/v1/applications/"+name+"/sync", session.Token, map[string]any{}, nil)

	// dev serves the metrics on the API listener and on --metrics-address.
	var text string
	eventually(t, time.Minute, "the app to be counted Synced and Healthy", func() bool {
		text = scrape(t, "http://"+devMetrics+probe.MetricsPath)
		return sample(text, "windlass_apps", `sync_status="Synced"`, `health_status="Healthy"`) == 1
	})
	onAPI := scrape(t, api+probe.MetricsPath)
	for _, want := range []struct {
		name   string
		labels []string
	}{
		{"windlass_sync_total", []string{`result="Succeeded"`}},
		{"windlass_sync_duration_seconds_count", []string{`result="Succeeded"`}},
		{"windlass_reconcile_duration_seconds_count", nil},
		{"windlass_render_cache_requests_total", []string{`result="miss"`}},
		{"windlass_render_duration_seconds_count", []string{`tool="directory"`}},
		{"windlass_apply_requests_total", []string{`dry_run="false"`}},
		{"temporal_request_total", nil},
		{"temporal_workflow_completed_total", []string{`workflow_type="windlass.SyncWorkflow"`}},
		{"temporal_activity_execution_latency_seconds_count", []string{`activity_type="render.Render"`}},
	} {
		if v := sample(text, want.name, want.labels...); v < 1 {
			t.Errorf("%s%v = %v, want at least 1", want.name, want.labels, v)
		}
		if v := sample(onAPI, want.name, want.labels...); v < 1 {
			t.Errorf("on the API listener: %s%v = %v, want at least 1", want.name, want.labels, v)
		}
	}
	if v := sample(text, "windlass_render_cache_requests_total", `result="hit"`); v < 0 {
		t.Error("windlass_render_cache_requests_total{result=hit} missing")
	}
	// The worker role serves the SDK's metrics of its own client.
	if v := sample(scrape(t, "http://"+workerMetrics+probe.MetricsPath), "temporal_request_total"); v < 1 {
		t.Errorf("worker temporal_request_total = %v", v)
	}
	if t.Failed() {
		t.Logf("dev /metrics:\n%s", regexp.MustCompile(`(?m)^(go|process)_.*\n`).ReplaceAllString(text, ""))
	}

	// Readiness with a Redis that does not answer: 503, naming redis.
	c, err := temporalx.Dial(t.Context(), temporalx.ClientConfig{HostPort: temporalAddr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dead := redis.NewClient(&redis.Options{Addr: testbed.ClosedAddr(t), MaxRetries: -1})
	defer dead.Close()
	rec := httptest.NewRecorder()
	probe.Handler(readiness(c, "default", dead, nil), nil, nil).ServeHTTP(rec, httptest.NewRequest("GET", probe.ReadyPath, nil))
	var down probe.Report
	_ = json.Unmarshal(rec.Body.Bytes(), &down)
	if rec.Code != http.StatusServiceUnavailable || down.Checks[checkTemporal] != "ok" || down.Checks[checkRedis] == "ok" {
		t.Errorf("readyz with redis down: %d %+v", rec.Code, down)
	}
}

// noApps answers every count with an error: apiOps's windlass_apps
// refresh, without a Temporal.
type noApps struct{ client.Client }

func (noApps) CountWorkflow(context.Context, *workflowservice.CountWorkflowExecutionsRequest) (*workflowservice.CountWorkflowExecutionsResponse, error) {
	return nil, errors.New("no visibility in this test")
}

// TestDebugOnMetricsListenerOnly: the --metrics-address listener serves
// the Go profiles under /debug/pprof/ (not the command line, which may
// hold secrets); the API listener passes /debug/pprof/ to the API.
func TestDebugOnMetricsListenerOnly(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	log := slog.New(slog.DiscardHandler)
	addr, err := serveOps(ctx, log, "127.0.0.1:0", probe.New(nil), metrics.New())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path     string
		wantCode int
		want     string
	}{
		{"/debug/pprof/", http.StatusOK, "goroutine"},
		{"/debug/pprof/heap?debug=1", http.StatusOK, "heap profile"},
		{"/debug/pprof/goroutine?debug=1", http.StatusOK, "goroutine profile"},
		{"/debug/pprof/profile?seconds=1", http.StatusOK, ""},
		{"/debug/pprof/cmdline", http.StatusNotFound, ""},
		{probe.LivePath, http.StatusOK, "ok"},
		{"/api/v1/applications", http.StatusNotFound, ""},
	} {
		t.Run(tc.path, func(t *testing.T) {
			resp, err := http.Get("http://" + addr.String() + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.wantCode || !strings.Contains(string(body), tc.want) {
				t.Errorf("GET %s: %d, want %d with %q; body %.200q", tc.path, resp.StatusCode, tc.wantCode, tc.want, body)
			}
		})
	}

	api := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	h, err := prodSettings{}.apiOps(ctx, log, api, probe.New(nil), metrics.New(), noApps{}, "default")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/profile", "/debug/pprof/heap"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusTeapot {
			t.Errorf("API listener GET %s: %d, want the API's own answer (%d)", path, rec.Code, http.StatusTeapot)
		}
	}
}

// fakeTemporal answers the health check with health and DescribeNamespace
// with db (nil: both succeed).
type fakeTemporal struct {
	client.Client
	health, db error
}

func (f fakeTemporal) CheckHealth(context.Context, *client.CheckHealthRequest) (*client.CheckHealthResponse, error) {
	return &client.CheckHealthResponse{}, f.health
}

func (f fakeTemporal) WorkflowService() workflowservice.WorkflowServiceClient {
	return fakeNamespaces{err: f.db}
}

type fakeNamespaces struct {
	workflowservice.WorkflowServiceClient
	err error
}

func (f fakeNamespaces) DescribeNamespace(context.Context, *workflowservice.DescribeNamespaceRequest, ...grpc.CallOption) (*workflowservice.DescribeNamespaceResponse, error) {
	return &workflowservice.DescribeNamespaceResponse{}, f.err
}

// healthyTemporal answers every health check.
var healthyTemporal = fakeTemporal{}

// TestTemporalCheck: readiness fails, naming the part, when the frontend
// or Temporal's database does not answer; the outcome is reused for
// readyTTL.
func TestTemporalCheck(t *testing.T) {
	down := serviceerror.NewUnavailable("connection refused")
	for _, tt := range []struct {
		name string
		c    fakeTemporal
		want string // "" when the check passes
	}{
		{name: "both answer", c: fakeTemporal{}},
		{name: "frontend down", c: fakeTemporal{health: down}, want: "frontend: connection refused"},
		{name: "database down", c: fakeTemporal{db: down}, want: "database (namespace ns): connection refused"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			check := temporalCheck(tt.c, "ns")
			err := check(t.Context())
			if got := fmt.Sprint(err); (tt.want == "" && err != nil) || (tt.want != "" && got != tt.want) {
				t.Fatalf("check = %v, want %q", err, tt.want)
			}
			if again := check(t.Context()); again != err {
				t.Errorf("second check within the TTL = %v, want the first outcome %v", again, err)
			}
		})
	}
}

// TestReadinessKube: neither the API nor a worker is ready while the
// management cluster's API, which holds their Secrets, does not answer.
func TestReadinessKube(t *testing.T) {
	addr := os.Getenv(testbed.EnvRedisAddr)
	if addr == "" {
		rd, err := testbed.StartRedis(t.Context(), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rd.Stop() })
		addr = rd.Addr()
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = rdb.Close() })
	kubeUp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(kubeUp.Close)
	for _, tt := range []struct {
		name, host string
		code       int
		kube       string // the check's outcome, or a part of its error
	}{
		{name: "kubernetes up", host: kubeUp.URL, code: http.StatusOK, kube: "ok"},
		{name: "kubernetes down", host: "https://" + testbed.ClosedAddr(t), code: http.StatusServiceUnavailable, kube: "the Kubernetes API is unreachable"},
	} {
		started := &atomic.Bool{}
		started.Store(true)
		for role, probes := range map[string]func() (*probe.Probes, error){
			"api": func() (*probe.Probes, error) {
				return apiReadiness(healthyTemporal, "default", rdb, &rest.Config{Host: tt.host})
			},
			"worker": func() (*probe.Probes, error) {
				return workerReadiness(healthyTemporal, "default", rdb, &rest.Config{Host: tt.host}, started)
			},
		} {
			t.Run(tt.name+", "+role, func(t *testing.T) {
				probes, err := probes()
				if err != nil {
					t.Fatal(err)
				}
				rec := httptest.NewRecorder()
				probe.Handler(probes, nil, nil).ServeHTTP(rec, httptest.NewRequest("GET", probe.ReadyPath, nil))
				var r probe.Report
				if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
					t.Fatalf("readyz body %q: %v", rec.Body, err)
				}
				if rec.Code != tt.code || !strings.Contains(r.Checks[checkKube], tt.kube) || r.Checks[checkRedis] != "ok" {
					t.Errorf("readyz = %d %+v, want %d with %s %q", rec.Code, r.Checks, tt.code, checkKube, tt.kube)
				}
			})
		}
	}
}
