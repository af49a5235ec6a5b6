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
	"github.com/windlass-cd/windlass/internal/lastknown"
	"github.com/windlass-cd/windlass/internal/probe"
	"github.com/windlass-cd/windlass/internal/temporalx"
	"github.com/windlass-cd/windlass/internal/testbed"
	"github.com/windlass-cd/windlass/workflows"
)

// Issue 28: PostgreSQL, Temporal's database, stops under a running fleet
// whose syncs were just asked for. While it is down the app list and app
// answer their last known status, marked stale, within seconds; the syncs
// list and writes answer a 503 problem naming the workflow engine;
// /healthz stays up and /readyz of the server and the worker fails on the
// temporal check. Once it is back every app converges, nothing is stale,
// and every sync ran exactly once. The stack (PostgreSQL, one Temporal,
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
	fleet := startOwnFleet(t, "pgoutage", "--temporal-address", temporalAddr, "--redis-address", bed.env.RedisAddr,
		"--kubeconfig", bed.env.Cluster.Kubeconfig, "--management-namespace", mgmt)
	base := fleet.api
	var session struct {
		Token string `json:"token"`
	}
	if _, err := requestAt(ctx, base, "", http.MethodPost, "/api/v1/session", map[string]string{"username": "admin", "password": fleet.password}, &session); err != nil {
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
	repoURL, work := newWorkRepo(t, prefix)
	push := func(greeting string) string {
		t.Helper()
		return commitFiles(t, work, map[string]string{"app/configmap.yaml": strings.Replace(configMapYAML, "hello", greeting, 1)}, greeting)
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
	// The list is read once, as a user would: the API keeps that answer.
	call(http.MethodGet, "/api/v1/applications", nil, nil)

	// A new commit, a refresh of every app, and PostgreSQL stops.
	second := push("after")
	for _, name := range names {
		call(http.MethodPost, "/api/v1/applications/"+name+"/refresh", nil, nil)
	}
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()

	// The list and an app answer quickly with their last known status,
	// marked stale; what has no last answer (the syncs) and writes answer
	// a problem that names the engine.
	staleRead := func(path string, out any) (bool, string) {
		began := time.Now()
		code, hdr, body := rawGetHeader(t, base+path, session.Token)
		if took := time.Since(began); took > 30*time.Second {
			t.Fatalf("GET %s took %s during the outage", path, took)
		}
		var mark struct {
			Stale *lastknown.Stale `json:"stale"`
		}
		if code != http.StatusOK || json.Unmarshal([]byte(body), &mark) != nil {
			t.Fatalf("GET %s during the outage: %d %s; want the last known answer", path, code, body)
		}
		if mark.Stale == nil {
			return false, "fresh" // answered from state the frontend or history still had
		}
		if w := hdr.Get("Warning"); !strings.HasPrefix(w, `110 - "the workflow engine is unavailable since`) || mark.Stale.AsOf.After(mark.Stale.UnavailableSince) {
			t.Fatalf("GET %s during the outage: Warning %q, stale %+v", path, w, mark.Stale)
		}
		if err := json.Unmarshal([]byte(body), out); err != nil {
			t.Fatal(err)
		}
		t.Logf("GET %s during the outage: stale, %s", path, hdr.Get("Warning"))
		return true, ""
	}
	var list struct {
		Items []struct {
			Name string `json:"name"`
			Sync string `json:"sync"`
		} `json:"items"`
	}
	eventually(t, time.Minute, time.Second, "the app list to answer its last known status", func() (bool, string) {
		return staleRead("/api/v1/applications", &list)
	})
	listed := map[string]string{}
	for _, it := range list.Items {
		listed[it.Name] = it.Sync
	}
	for _, name := range names {
		if listed[name] == "" {
			t.Errorf("stale list: %s is missing (%v)", name, listed)
		}
	}
	var last workflows.AppView
	eventually(t, time.Minute, time.Second, "the app to answer its last known status", func() (bool, string) {
		return staleRead("/api/v1/applications/"+names[0], &last)
	})
	if last.Status.SHA != first && last.Status.SHA != second {
		t.Errorf("stale app: SHA %q, want %s or %s", last.Status.SHA, first, second)
	}
	engineProblem := func(code int, ctype, body, what string) {
		t.Helper()
		var p struct {
			Status int    `json:"status"`
			Detail string `json:"detail"`
		}
		if err := json.Unmarshal([]byte(body), &p); err != nil || code != http.StatusServiceUnavailable || p.Status != code ||
			ctype != "application/problem+json" || !strings.Contains(p.Detail, "workflow engine is unavailable") || strings.Contains(body, "goroutine") {
			t.Fatalf("%s during the outage: %d %s %s; want a 503 problem naming the workflow engine", what, code, ctype, body)
		}
	}
	syncsPath := "/api/v1/applications/" + names[0] + "/syncs"
	eventually(t, time.Minute, time.Second, "GET "+syncsPath+" to report the outage", func() (bool, string) {
		code, hdr, body := rawGetHeader(t, base+syncsPath, session.Token)
		if code == http.StatusOK {
			return false, "200"
		}
		engineProblem(code, hdr.Get("Content-Type"), body, "GET "+syncsPath)
		return true, ""
	})
	if code, err := requestAt(ctx, base, session.Token, http.MethodPost, "/api/v1/applications/"+names[0]+"/refresh", nil, nil); err == nil {
		t.Errorf("POST refresh during the outage: %d; want 503", code)
	} else if code != http.StatusServiceUnavailable || !strings.Contains(err.Error(), "workflow engine is unavailable") {
		t.Errorf("POST refresh during the outage: %d %v; want a 503 naming the workflow engine", code, err)
	}
	if code, _, body := rawGet(t, base+"/healthz", ""); code != http.StatusOK {
		t.Errorf("/healthz during the outage: %d %s; want 200 (the process serves)", code, body)
	}
	// /readyz reads Temporal's database, so it fails, naming the check.
	for _, ready := range []string{base + "/readyz", "http://" + fleet.workerMetrics + "/readyz"} {
		eventually(t, 30*time.Second, time.Second, ready+" to fail", func() (bool, string) {
			code, _, body := rawGet(t, ready, "")
			var r probe.Report
			_ = json.Unmarshal([]byte(body), &r)
			if code == http.StatusOK {
				return false, body
			}
			if code != http.StatusServiceUnavailable || r.Checks["temporal"] == "ok" || r.Checks["redis"] != "ok" || strings.Contains(body, pg.Password()) {
				t.Fatalf("%s during the outage: %d %s; want 503 failing the temporal check only", ready, code, body)
			}
			t.Logf("%s during the outage: %d %s", ready, code, strings.TrimSpace(body))
			return true, ""
		})
	}
	if code, _, body := rawGet(t, base+"/readyz?exclude=temporal", ""); code != http.StatusOK {
		t.Errorf("/readyz?exclude=temporal during the outage: %d %s; want 200, as the server still serves last answers", code, body)
	}

	if err := pg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("PostgreSQL was down for %s", time.Since(stopped).Round(100*time.Millisecond))
	back := time.Now()
	allSyncedAt(3*time.Minute, second)
	t.Logf("%d apps synced at the new commit %s after PostgreSQL returned", n, since(back))
	for _, ready := range []string{base + "/readyz", "http://" + fleet.workerMetrics + "/readyz"} {
		eventually(t, 30*time.Second, time.Second, ready+" to pass again", func() (bool, string) {
			code, _, body := rawGet(t, ready, "")
			return code == http.StatusOK, body
		})
	}
	for _, path := range []string{"/api/v1/applications", "/api/v1/applications/" + names[0]} {
		if code, hdr, body := rawGetHeader(t, base+path, session.Token); code != http.StatusOK || hdr.Get("Warning") != "" || strings.Contains(body, `"stale"`) {
			t.Errorf("GET %s after the outage: %d, Warning %q; want a fresh answer", path, code, hdr.Get("Warning"))
		}
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
	code, hdr, body := rawGetHeader(t, url, token)
	return code, hdr.Get("Content-Type"), body
}

// rawGetHeader is rawGet with the answer's headers.
func rawGetHeader(t *testing.T, url, token string) (int, http.Header, string) {
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
	return resp.StatusCode, resp.Header, string(body)
}
