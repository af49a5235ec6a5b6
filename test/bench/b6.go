package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-cd/windlass/api"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

// B6's apps: one tiny ConfigMap each, manual sync, refreshed once a day,
// all in one namespace that exists (so the compare's dry run succeeds).
const (
	b6Prefix    = "b6-"
	b6Namespace = "b6-list"
	b6PageSize  = 100
	b6Refresh   = 86400
	b6InFlight  = 16
	b6ConfigMap = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b6\ndata:\n  k: v\n"
)

// b6Run is B6's numbers.
type b6Run struct {
	Apps int `json:"apps"`
	// Registration: the creates through the API, and from the first
	// create until visibility shows every app reconciled (OutOfSync: the
	// ConfigMap is Missing, and nothing syncs it).
	RegisterSeconds   float64 `json:"registerSeconds"`
	CreatesPerSecond  float64 `json:"createsPerSecond"`
	ReconciledSeconds float64 `json:"reconciledSeconds"`
	Reconciled        int64   `json:"reconciled"`
	// CPU-seconds per app over the registration, per process.
	ServerCPUPerApp   float64 `json:"serverCPUSecondsPerApp"`
	WorkerCPUPerApp   float64 `json:"workerCPUSecondsPerApp"`
	TemporalCPUPerApp float64 `json:"temporalCPUSecondsPerApp"`
	// Each timed request: the first page, then the next with its cursor.
	FirstPageMillis []float64 `json:"firstPageMillis"`
	NextPageMillis  []float64 `json:"nextPageMillis"`
	// Body sizes (JSON, not compressed: the API does not gzip it) and
	// rows of the first and the next page.
	FirstPageBytes int `json:"firstPageBytes"`
	NextPageBytes  int `json:"nextPageBytes"`
	FirstPageItems int `json:"firstPageItems"`
	// A walk through every page after the samples.
	WalkPages         int     `json:"walkPages"`
	WalkItems         int     `json:"walkItems"`
	WalkPageP50Millis float64 `json:"walkPageMillisP50"`
	WalkPageMaxMillis float64 `json:"walkPageMillisMax"`
	WalkMaxBytes      int     `json:"walkMaxPageBytes"`
	LoadAverage       string  `json:"loadAverage"`
}

// benchList is B6: n apps registered through the API, then
// GET /api/v1/applications?limit=100 timed for the first page and the
// next (with the first's cursor), samples times each after a warm-up,
// with the size of each page; then one walk through every page.
func benchList(ctx context.Context, e *env, res *results, n, samples int) error {
	run := b6Run{Apps: n}
	repoURL, err := e.git.CreateRepo("b6")
	if err != nil {
		return err
	}
	if _, err := e.pushFiles(ctx, "b6", repoURL, map[string]string{"app/configmap.yaml": b6ConfigMap}); err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: b6Namespace}}
	if _, err := e.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	body := func(name string) any {
		return map[string]any{
			"name": name, "project": "default", "refreshSeconds": b6Refresh,
			"source":      map[string]any{"repoURL": repoURL, "path": "app", "targetRevision": "main"},
			"destination": map[string]any{"server": appspec.InClusterServer, "namespace": b6Namespace},
		}
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s%05d", b6Prefix, i)
	}
	slog.Info("B6 registering apps", "apps", n, "in flight", b6InFlight)
	cpu0 := e.cpuSeconds()
	start := time.Now()
	if err := e.createAll(ctx, names, b6InFlight, body); err != nil {
		return fmt.Errorf("register %d apps: %w", n, err)
	}
	run.RegisterSeconds = time.Since(start).Seconds()
	run.CreatesPerSecond = float64(n) / run.RegisterSeconds
	fmt.Printf("# B6: %d apps created in %.0f s (%.1f/s, %d in flight)\n", n, run.RegisterSeconds, run.CreatesPerSecond, b6InFlight)

	// Wait until every app has reconciled, so that the worker is idle
	// while the list is timed; measure anyway when that takes too long.
	reconciled := fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running' AND %s STARTS_WITH '%s' AND %s IN ('%s', '%s')",
		workflows.ApplicationWorkflowName, workflows.SearchAttrName, b6Prefix, workflows.SearchAttrSync, appspec.SyncSynced, appspec.SyncOutOfSync)
	err = poll(ctx, 10*time.Minute+time.Duration(n)*100*time.Millisecond, 5*time.Second, "every B6 app reconciled", func() (bool, string, error) {
		resp, err := e.tc.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: "default", Query: reconciled})
		if err != nil {
			return false, err.Error(), nil
		}
		run.Reconciled = resp.GetCount()
		return run.Reconciled >= int64(n), fmt.Sprintf("%d of %d reconciled", run.Reconciled, n), nil
	})
	run.ReconciledSeconds = time.Since(start).Seconds()
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		res.note("B6: %v; timing the list anyway", err)
	}
	cpu1 := e.cpuSeconds()
	run.ServerCPUPerApp = (cpu1[0] - cpu0[0]) / float64(n)
	run.WorkerCPUPerApp = (cpu1[1] - cpu0[1]) / float64(n)
	run.TemporalCPUPerApp = (cpu1[2] - cpu0[2]) / float64(n)
	fmt.Printf("# B6: %d of %d reconciled %.0f s after the first create; CPU-s per app: server %.4f, worker %.4f, Temporal %.4f\n",
		run.Reconciled, n, run.ReconciledSeconds, run.ServerCPUPerApp, run.WorkerCPUPerApp, run.TemporalCPUPerApp)

	id := fmt.Sprintf("B6.N%d", n)
	if err := e.timeList(ctx, res, id, samples, &run); err != nil {
		return err
	}
	res.emit(id+".register_seconds", run.RegisterSeconds, "s", 1)
	res.emit(id+".reconciled_seconds", run.ReconciledSeconds, "s", 1)
	return nil
}

// timeList times GET /api/v1/applications?limit=100, the first page and
// the next (with the first's cursor), samples times each after a warm-up,
// with the size of each page, then walks through every page; it records
// run (whose Apps is the fleet's size) and emits the figures under id.
func (e *env) timeList(ctx context.Context, res *results, id string, samples int, run *b6Run) error {
	n := run.Apps
	// One keep-alive connection, as a browser's.
	client := &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 1}, Timeout: time.Minute}
	defer client.CloseIdleConnections()
	pair := func() (first, next listPage, err error) {
		if first, err = e.listPage(ctx, client, ""); err != nil {
			return first, next, err
		}
		if first.list.Next == "" {
			if n <= b6PageSize {
				return first, next, nil // one page: nothing next
			}
			return first, next, fmt.Errorf("the first page of %d rows has no next cursor", len(first.list.Items))
		}
		next, err = e.listPage(ctx, client, first.list.Next)
		return first, next, err
	}
	for range 5 { // warm-up
		if _, _, err := pair(); err != nil {
			return err
		}
	}
	for range samples {
		first, next, err := pair()
		if err != nil {
			return err
		}
		run.FirstPageMillis = append(run.FirstPageMillis, first.millis)
		if first.list.Next != "" {
			run.NextPageMillis = append(run.NextPageMillis, next.millis)
		}
		run.FirstPageBytes, run.NextPageBytes = max(run.FirstPageBytes, first.bytes), max(run.NextPageBytes, next.bytes)
		run.FirstPageItems = len(first.list.Items)
	}
	var walk []float64
	for cursor := ""; ; {
		p, err := e.listPage(ctx, client, cursor)
		if err != nil {
			return err
		}
		walk = append(walk, p.millis)
		run.WalkItems += len(p.list.Items)
		run.WalkMaxBytes = max(run.WalkMaxBytes, p.bytes)
		if cursor = p.list.Next; cursor == "" {
			break
		}
	}
	run.WalkPages = len(walk)
	run.WalkPageP50Millis, run.WalkPageMaxMillis = median(walk), percentile(walk, 100)
	run.LoadAverage = loadAverage()
	res.addRun(id, run)
	if run.WalkItems < n {
		res.note("%s: the walk through every page saw %d rows, fewer than the apps", id, run.WalkItems)
	}
	fmt.Printf("# %s: first page p50 %.1f ms (%d B, %d rows), next page p50 %.1f ms (%d B); walk: %d pages, %d rows, p50 %.1f ms, max %.1f ms, largest %d B; load %s\n",
		res.label(id), median(run.FirstPageMillis), run.FirstPageBytes, run.FirstPageItems, median(run.NextPageMillis), run.NextPageBytes,
		run.WalkPages, run.WalkItems, run.WalkPageP50Millis, run.WalkPageMaxMillis, run.WalkMaxBytes, run.LoadAverage)
	res.emit(id+".first_page.p50", median(run.FirstPageMillis), "ms", samples)
	res.emit(id+".first_page.p95", percentile(run.FirstPageMillis, 95), "ms", samples)
	if len(run.NextPageMillis) > 0 {
		res.emit(id+".next_page.p50", median(run.NextPageMillis), "ms", samples)
		res.emit(id+".next_page.p95", percentile(run.NextPageMillis, 95), "ms", samples)
	}
	res.emit(id+".page_bytes", float64(max(run.FirstPageBytes, run.NextPageBytes, run.WalkMaxBytes)), "B", 1)
	res.emit(id+".walk_page.p50", run.WalkPageP50Millis, "ms", run.WalkPages)
	return nil
}

// listPage is one timed page of the list.
type listPage struct {
	list   api.AppList
	millis float64
	bytes  int
}

// listPage gets one page of B6PageSize rows after cursor ("" for the
// first), timed from the request until the body is read.
func (e *env) listPage(ctx context.Context, client *http.Client, cursor string) (listPage, error) {
	var p listPage
	path := fmt.Sprintf("/api/v1/applications?limit=%d", b6PageSize)
	if cursor != "" {
		path += "&cursor=" + url.QueryEscape(cursor)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.api+path, nil)
	if err != nil {
		return p, err
	}
	req.Header.Set("Authorization", "Bearer "+e.token)
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return p, err
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	p.millis = float64(time.Since(start).Microseconds()) / 1000
	if err != nil {
		return p, err
	}
	if resp.StatusCode != http.StatusOK {
		return p, fmt.Errorf("GET %s: status %d: %.200s", path, resp.StatusCode, data)
	}
	p.bytes = len(data)
	if err := json.Unmarshal(data, &p.list); err != nil {
		return p, fmt.Errorf("GET %s: %w", path, err)
	}
	return p, nil
}
