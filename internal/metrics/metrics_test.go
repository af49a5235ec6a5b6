package metrics

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"go.temporal.io/api/workflowservice/v1"
	sdkinterceptor "go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// families gathers m and returns its families by name.
func families(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	fs, err := m.Registry().Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fs {
		out[f.GetName()] = f
	}
	return out
}

// value returns the counter, gauge or histogram count of the series of
// family name whose labels include want.
func value(t *testing.T, fs map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	f, ok := fs[name]
	if !ok {
		t.Fatalf("family %s missing", name)
	}
next:
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	t.Fatalf("no series of %s with labels %v", name, want)
	return 0
}

func TestRecording(t *testing.T) {
	m := New()
	m.CacheRequest(true)
	m.CacheRequest(true)
	m.CacheRequest(false)
	m.Rendered("helm", 300*time.Millisecond)
	m.Rendered("kustomize", 20*time.Millisecond)
	m.ApplyRequest(false)
	m.ApplyRequest(true)
	m.ApplyRequest(false)
	m.CustomizationsLoaded(true)
	m.CustomizationsLoaded(false)
	m.Notification("slack", "retried")
	m.Notification("slack", "sent")
	m.Notification("email", "failed")
	fs := families(t, m)
	tests := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"windlass_render_cache_requests_total", map[string]string{"result": "hit"}, 2},
		{"windlass_render_cache_requests_total", map[string]string{"result": "miss"}, 1},
		{"windlass_render_duration_seconds", map[string]string{"tool": "helm"}, 1},
		{"windlass_render_duration_seconds", map[string]string{"tool": "kustomize"}, 1},
		{"windlass_apply_requests_total", map[string]string{"dry_run": "false"}, 2},
		{"windlass_apply_requests_total", map[string]string{"dry_run": "true"}, 1},
		{"windlass_resource_customizations_loads_total", map[string]string{"result": "ok"}, 1},
		{"windlass_resource_customizations_loads_total", map[string]string{"result": "failed"}, 1},
		{"windlass_resource_customizations_load_failing", nil, 1},
		{"windlass_notifications_total", map[string]string{"service": "slack", "result": "sent"}, 1},
		{"windlass_notifications_total", map[string]string{"service": "slack", "result": "retried"}, 1},
		{"windlass_notifications_total", map[string]string{"service": "email", "result": "failed"}, 1},
	}
	for _, tt := range tests {
		if got := value(t, fs, tt.name, tt.labels); got != tt.want {
			t.Errorf("%s%v = %v, want %v", tt.name, tt.labels, got, tt.want)
		}
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total"} {
		if _, ok := fs[name]; !ok {
			t.Errorf("family %s missing", name)
		}
	}
}

func TestNilMetricsRecordNothing(t *testing.T) {
	var m *Metrics
	m.CacheRequest(true)
	m.Rendered("helm", time.Second)
	m.ApplyRequest(false)
	m.CustomizationsLoaded(false)
	m.Notification("slack", "sent")
	m.Temporal().Counter("x").Inc(1)
}

func TestTemporalHandler(t *testing.T) {
	m := New()
	h := m.Temporal().WithTags(map[string]string{"namespace": "default"})
	h.Counter("temporal_request").Inc(2)
	// The SDK records one name with different tag sets.
	h.WithTags(map[string]string{"operation": "StartWorkflowExecution"}).Counter("temporal_request").Inc(1)
	h.Gauge("temporal_num_pollers").Update(4)
	h.Timer("temporal_request_latency").Record(40 * time.Millisecond)
	h.Timer("temporal_request_latency").Record(2 * time.Second)
	// Handlers made apart with the same tags, in any order, share a series;
	// another tag value is another series.
	m.Temporal().WithTags(map[string]string{"task_queue": "q", "workflow_type": "A"}).Counter("temporal_task").Inc(1)
	m.Temporal().WithTags(map[string]string{"workflow_type": "A"}).WithTags(map[string]string{"task_queue": "q"}).Counter("temporal_task").Inc(2)
	m.Temporal().WithTags(map[string]string{"task_queue": "q", "workflow_type": "B"}).Counter("temporal_task").Inc(5)
	fs := families(t, m)
	if got := value(t, fs, "temporal_task_total", map[string]string{"task_queue": "q", "workflow_type": "A"}); got != 3 {
		t.Errorf("task counter of A = %v, want 3", got)
	}
	if got := value(t, fs, "temporal_task_total", map[string]string{"task_queue": "q", "workflow_type": "B"}); got != 5 {
		t.Errorf("task counter of B = %v, want 5", got)
	}
	if got := value(t, fs, "temporal_request_total", map[string]string{"namespace": "default", "operation": "StartWorkflowExecution"}); got != 1 {
		t.Errorf("request with operation = %v, want 1", got)
	}
	if got := value(t, fs, "temporal_num_pollers", nil); got != 4 {
		t.Errorf("gauge = %v, want 4", got)
	}
	lat := fs["temporal_request_latency_seconds"].GetMetric()[0].GetHistogram()
	if lat.GetSampleCount() != 2 || lat.GetSampleSum() != 2.04 {
		t.Errorf("histogram count %d sum %v, want 2 and 2.04", lat.GetSampleCount(), lat.GetSampleSum())
	}
	for _, b := range lat.GetBucket() {
		want := uint64(0)
		switch {
		case b.GetUpperBound() >= 2.5:
			want = 2
		case b.GetUpperBound() >= 0.05:
			want = 1
		}
		if b.GetCumulativeCount() != want {
			t.Errorf("bucket le=%v = %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
	}
	// The text exposition carries them too.
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Result().Body)
	for _, s := range []string{`temporal_request_total{namespace="default"} 2`, `temporal_request_latency_seconds_bucket{namespace="default",le="0.05"} 1`} {
		if !strings.Contains(string(body), s) {
			t.Errorf("exposition lacks %q", s)
		}
	}
}

const syncType = "test.Sync"

func syncWorkflow(ctx workflow.Context, outcome string) (string, error) {
	if err := workflow.Sleep(ctx, 3*time.Second); err != nil {
		return "", err
	}
	switch outcome {
	case "fail":
		return "", temporal.NewApplicationError("sync failed", "SyncFailed")
	case "boom":
		return "", errors.New("boom")
	}
	return "ok", nil
}

func TestSyncInterceptor(t *testing.T) {
	m := New()
	classify := func(err error) string {
		var app *temporal.ApplicationError
		if errors.As(err, &app) && app.Type() == "SyncFailed" {
			return SyncFailed
		}
		return SyncError
	}
	for _, outcome := range []string{"ok", "ok", "fail", "boom"} {
		var s testsuite.WorkflowTestSuite
		s.SetMetricsHandler(m.Temporal())
		env := s.NewTestWorkflowEnvironment()
		env.SetWorkerOptions(worker.Options{Interceptors: []sdkinterceptor.WorkerInterceptor{&SyncInterceptor{WorkflowType: syncType, Classify: classify}}})
		env.RegisterWorkflowWithOptions(syncWorkflow, workflow.RegisterOptions{Name: syncType})
		env.ExecuteWorkflow(syncType, outcome)
		if !env.IsWorkflowCompleted() {
			t.Fatal("workflow did not complete")
		}
	}
	fs := families(t, m)
	for result, want := range map[string]float64{SyncSucceeded: 2, SyncFailed: 1, SyncError: 1} {
		if got := value(t, fs, "windlass_sync_total", map[string]string{"result": result}); got != want {
			t.Errorf("windlass_sync_total{result=%s} = %v, want %v", result, got, want)
		}
		if got := value(t, fs, "windlass_sync_duration_seconds", map[string]string{"result": result}); got != want {
			t.Errorf("windlass_sync_duration_seconds{result=%s} count = %v, want %v", result, got, want)
		}
	}
	// The duration is the workflow's (test-clock) 3 s.
	for _, s := range fs["windlass_sync_duration_seconds"].GetMetric() {
		if h := s.GetHistogram(); h.GetSampleSum() < 3*float64(h.GetSampleCount()) {
			t.Errorf("sync duration sum %v for %d syncs, want >= 3 s each", h.GetSampleSum(), h.GetSampleCount())
		}
	}
}

// fakeCounter answers CountWorkflow from a table of queries.
type fakeCounter struct {
	counts  map[string]int64
	queries []string
	err     error
}

func (f *fakeCounter) CountWorkflow(_ context.Context, req *workflowservice.CountWorkflowExecutionsRequest) (*workflowservice.CountWorkflowExecutionsResponse, error) {
	f.queries = append(f.queries, req.GetQuery())
	if f.err != nil {
		return nil, f.err
	}
	return &workflowservice.CountWorkflowExecutionsResponse{Count: f.counts[req.GetQuery()]}, nil
}

func TestRefreshApps(t *testing.T) {
	q := AppsQuery{Namespace: "default", Base: "B", SyncAttr: "S", HealthAttr: "H",
		SyncValues: []string{"Synced", "OutOfSync"}, HealthValues: []string{"Healthy", "Degraded"}}
	f := &fakeCounter{counts: map[string]int64{
		"B AND S = 'Synced'":                    5,
		"B AND S = 'Synced' AND H = 'Healthy'":  4,
		"B AND S = 'Synced' AND H = 'Degraded'": 1,
		"B AND S = 'OutOfSync'":                 0,
	}}
	m := New()
	if err := m.RefreshApps(t.Context(), f, q); err != nil {
		t.Fatal(err)
	}
	// OutOfSync has no apps: not broken down by health.
	wantQueries := []string{"B AND S = 'Synced'", "B AND S = 'Synced' AND H = 'Healthy'", "B AND S = 'Synced' AND H = 'Degraded'", "B AND S = 'OutOfSync'"}
	if d := cmp.Diff(wantQueries, f.queries); d != "" {
		t.Errorf("queries (-want +got):\n%s", d)
	}
	fs := families(t, m)
	got := map[string]float64{}
	for _, s := range fs["windlass_apps"].GetMetric() {
		var ls []string
		for _, l := range s.GetLabel() {
			ls = append(ls, l.GetValue())
		}
		sort.Strings(ls)
		got[strings.Join(ls, ",")] = s.GetGauge().GetValue()
	}
	want := map[string]float64{"Healthy,Synced": 4, "Degraded,Synced": 1, "Healthy,OutOfSync": 0, "Degraded,OutOfSync": 0}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("windlass_apps (-want +got):\n%s", d)
	}
	// A failed count keeps the previous values.
	f.err = errors.New("visibility down")
	if err := m.RefreshApps(t.Context(), f, q); err == nil || !strings.Contains(err.Error(), "visibility down") {
		t.Fatalf("err = %v, want the count error", err)
	}
	if v := value(t, families(t, m), "windlass_apps", map[string]string{"sync_status": "Synced", "health_status": "Healthy"}); v != 4 {
		t.Errorf("after a failed refresh = %v, want 4 kept", v)
	}
}

// BenchmarkTemporalHandler is what the SDK does at every task: a handler
// with the task's tags, and a counter of it.
func BenchmarkTemporalHandler(b *testing.B) {
	h := New().Temporal().WithTags(map[string]string{"namespace": "default", "client_name": "temporal_go"})
	tags := map[string]string{"task_queue": "windlass", "workflow_type": "windlass.ApplicationWorkflow", "worker_type": "WorkflowWorker"}
	b.ReportAllocs()
	for b.Loop() {
		h.WithTags(tags).Counter("temporal_workflow_task_execution_latency").Inc(1)
	}
}
