package scaleout

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/temporalx"
	"github.com/windlass-cd/windlass/internal/testbed"
	"github.com/windlass-cd/windlass/workflows"
)

// Issue 28: PostgreSQL, Temporal's database, stops under a running fleet
// whose syncs were just asked for. While it is down the API answers
// within seconds with a 503 problem naming the workflow engine and /healthz
// stays up; once it is back every app converges and every sync ran exactly
// once. The stack (PostgreSQL, one Temporal,
// server, worker) is the test's own: the shared PostgreSQL stays up.
func TestPostgresOutage(t *testing.T) {
	const n = 4
	ctx := t.Context()
	pgDir, err := os.MkdirTemp("", "windlass-pgoutage-") // StartPostgres hands it to the postgres user
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(pgDir) })
	dir := t.TempDir()
	pg, err := testbed.StartPostgres(ctx, pgDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Stop() })

	tp, err := startProc("pgoutage-temporal", "temporal", "--postgres-dsn", pg.DSN("temporal"), "--postgres-password-file", pg.PasswordFile(),
		"--data-dir", filepath.Join(dir, "temporal"), "--address", "127.0.0.1:0", "--ui-address", "off", "--log-level", "warn")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tp.Stop)
	temporalAddr, err := tp.WaitLine(ctx, "Frontend:")
	if err != nil {
		t.Fatal(err)
	}
	tc, err := temporalx.Dial(ctx, temporalx.ClientConfig{HostPort: temporalAddr, Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.Close)

	mgmt := fmt.Sprintf("windlass-pgoutage-%d", time.Now().UnixNano()%1e9)
	sp, err := startProc("pgoutage-server", "server", "--api-address", "127.0.0.1:0", "--redis-address", bed.env.RedisAddr,
		"--kubeconfig", bed.env.Cluster.Kubeconfig, "--temporal-address", temporalAddr, "--management-namespace", mgmt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sp.Stop)
	addr, err := sp.LogValue(ctx, `msg="windlass is ready"`, "api")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + addr
	password, err := sp.WaitLine(ctx, "initial admin password (shown once, stored hashed):")
	if err != nil {
		t.Fatal(err)
	}
	var session struct {
		Token string `json:"token"`
	}
	if _, err := requestAt(ctx, base, "", http.MethodPost, "/api/v1/session", map[string]string{"username": "admin", "password": password}, &session); err != nil {
		t.Fatal(err)
	}
	wp, err := startProc("pgoutage-worker", "worker", "--temporal-address", temporalAddr, "--redis-address", bed.env.RedisAddr,
		"--kubeconfig", bed.env.Cluster.Kubeconfig, "--cache-dir", filepath.Join(dir, "cache"), "--management-namespace", mgmt,
		"--metrics-address", "127.0.0.1:0", "--self-heal-sweep=-1s")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(wp.Stop)
	if _, err := wp.WaitLine(ctx, `msg="windlass is ready"`); err != nil {
		t.Fatal(err)
	}
	call := func(method, path string, body, out any) {
		t.Helper()
		if _, err := requestAt(ctx, base, session.Token, method, path, body, out); err != nil {
			t.Fatal(err)
		}
	}
	view := func(name string) workflows.AppView {
		var v workflows.AppView
		call(http.MethodGet, "/api/v1/applications/"+name, nil, &v)
		return v
	}

	// A fleet of automated apps, each synced once.
	prefix := fmt.Sprintf("po%d", time.Now().UnixNano()%1e6)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%02d", prefix, i)
	}
	cleanupNamespaces(t, prefix+"-")
	repoURL, err := bed.git.CreateRepo(prefix)
	if err != nil {
		t.Fatal(err)
	}
	work, err := testbed.NewWorkRepo(ctx, t.TempDir(), repoURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	push := func(greeting string) string {
		t.Helper()
		if err := work.WriteFile("app/configmap.yaml", strings.Replace(configMapYAML, "hello", greeting, 1)); err != nil {
			t.Fatal(err)
		}
		sha, err := work.CommitAndPush(ctx, greeting)
		if err != nil {
			t.Fatal(err)
		}
		return sha
	}
	first := push("before")
	for _, name := range names {
		call(http.MethodPost, "/api/v1/applications", appBody(name, repoURL, "app", appspec.InClusterServer, true), nil)
	}
	syncedAt := func(name, sha string) bool {
		var v workflows.AppView
		if _, err := requestAt(ctx, base, session.Token, http.MethodGet, "/api/v1/applications/"+name, nil, &v); err != nil {
			return false
		}
		return v.Status.Sync == appspec.SyncSynced && v.Status.SHA == sha && v.Status.Operation == nil &&
			len(v.History) > 0 && v.History[0].SHA == sha && v.History[0].Phase == workflows.PhaseSucceeded
	}
	allSyncedAt := func(within time.Duration, sha string) {
		t.Helper()
		eventually(t, within, 500*time.Millisecond, "every app synced at "+sha, func() (bool, string) {
			done := 0
			for _, name := range names {
				if syncedAt(name, sha) {
					done++
				}
			}
			return done == n, fmt.Sprintf("%d of %d", done, n)
		})
	}
	allSyncedAt(2*time.Minute, first)

	// A new commit, a refresh of every app, and PostgreSQL stops.
	second := push("after")
	for _, name := range names {
		call(http.MethodPost, "/api/v1/applications/"+name+"/refresh", nil, nil)
	}
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()

	// The API answers quickly with a problem that names the engine.
	for _, path := range []string{"/api/v1/applications", "/api/v1/applications/" + names[0], "/api/v1/applications/" + names[0] + "/syncs"} {
		eventually(t, time.Minute, time.Second, "GET "+path+" to report the outage", func() (bool, string) {
			began := time.Now()
			code, ctype, body := rawGet(t, base+path, session.Token)
			took := time.Since(began)
			if took > 30*time.Second {
				t.Fatalf("GET %s took %s during the outage", path, took)
			}
			if code == http.StatusOK {
				return false, "200" // answered from state the frontend still had
			}
			var p struct {
				Status int    `json:"status"`
				Detail string `json:"detail"`
			}
			if err := json.Unmarshal([]byte(body), &p); err != nil || code != http.StatusServiceUnavailable || p.Status != code ||
				ctype != "application/problem+json" || !strings.Contains(p.Detail, "workflow engine is unavailable") || strings.Contains(body, "goroutine") {
				t.Fatalf("GET %s during the outage: %d %s %s; want a 503 problem naming the workflow engine", path, code, ctype, body)
			}
			t.Logf("GET %s during the outage: %d in %s: %s", path, code, took.Round(time.Millisecond), p.Detail)
			return true, ""
		})
	}
	if code, _, body := rawGet(t, base+"/healthz", ""); code != http.StatusOK {
		t.Errorf("/healthz during the outage: %d %s; want 200 (the process serves)", code, body)
	}
	// /readyz checks the frontend (CheckHealth), which answers without the
	// database: it is logged here, not asserted.
	code, _, body := rawGet(t, base+"/readyz", "")
	t.Logf("/readyz during the outage: %d %s", code, strings.TrimSpace(body))

	if err := pg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("PostgreSQL was down for %s", time.Since(stopped).Round(100*time.Millisecond))
	back := time.Now()
	allSyncedAt(3*time.Minute, second)
	t.Logf("%d apps synced at the new commit %s after PostgreSQL returned", n, since(back))
	code, _, body = rawGet(t, base+"/readyz", "")
	if code != http.StatusOK {
		t.Errorf("/readyz after the outage: %d %s", code, body)
	}

	// Exactly two syncs per app, each run once: none lost, none repeated.
	for _, name := range names {
		want := []string{workflows.SyncWorkflowID("default", name, 1) + "=" + workflows.PhaseSucceeded, workflows.SyncWorkflowID("default", name, 2) + "=" + workflows.PhaseSucceeded}
		if got := syncIDs(view(name)); !slices.Equal(got, want) {
			t.Errorf("%s: syncs %v, want %v", name, got, want)
		}
	}
	runs := map[string]int{}
	eventually(t, 30*time.Second, 500*time.Millisecond, "visibility to list every sync", func() (bool, string) {
		clear(runs)
		resp, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query:    fmt.Sprintf("WorkflowType = '%s' AND %s STARTS_WITH 'default/%s-'", workflows.SyncWorkflowName, workflows.SearchAttrApp, prefix),
			PageSize: 100,
		})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range resp.GetExecutions() {
			runs[e.GetExecution().GetWorkflowId()]++
		}
		return len(runs) == 2*n, fmt.Sprint(runs)
	})
	for id, c := range runs {
		if c != 1 {
			t.Errorf("%s: %d executions, want 1", id, c)
		}
	}
	for _, f := range []string{"pgoutage-temporal", "pgoutage-server", "pgoutage-worker"} {
		data, err := os.ReadFile(filepath.Join(bed.tmp, "logs", f+".log"))
		if err == nil && strings.Contains(string(data), pg.Password()) {
			t.Errorf("%s's log holds the PostgreSQL password", f)
		}
	}
}

// rawGet is a GET of url with the token, bounded by a minute, that returns
// the status, content type and body.
func rawGet(t *testing.T, url, token string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(body)
}
