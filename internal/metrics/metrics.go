package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.temporal.io/sdk/client"
)

// Names of the metrics recorded through the Temporal metrics handler, from
// workflow code (replay-safe). The handler adds _total to counters and
// _seconds to timers.
const (
	SyncCounter    = "windlass_sync"
	SyncTimer      = "windlass_sync_duration"
	ReconcileTimer = "windlass_reconcile_duration"
	// ResultTag labels a sync with its outcome.
	ResultTag = "result"
)

// Cache request results.
const (
	ResultHit  = "hit"
	ResultMiss = "miss"
)

// Buckets (seconds) of every duration histogram: from a cache hit to a
// slow sync.
var Buckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// Metrics is the registry of a process and its Windlass families.
type Metrics struct {
	reg            *prometheus.Registry
	cacheRequests  *prometheus.CounterVec
	renderDuration *prometheus.HistogramVec
	applyRequests  *prometheus.CounterVec
	apps           *prometheus.GaugeVec
	customLoads    *prometheus.CounterVec
	customFailing  prometheus.Gauge
	notifications  *prometheus.CounterVec
	temporal       *sdkCollector
}

// New makes a registry with the Windlass families, the Go and process
// collectors and the collector behind Temporal's metrics handler.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		cacheRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "windlass_render_cache_requests_total",
			Help: "Manifest cache reads by result (hit or miss); the hit ratio is hit/(hit+miss).",
		}, []string{"result"}),
		renderDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "windlass_render_duration_seconds", Buckets: Buckets,
			Help: "Time to render one source, by tool (cache hits excluded).",
		}, []string{"tool"}),
		applyRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "windlass_apply_requests_total",
			Help: "Apply requests sent to clusters (server-side apply, replace or create); rate() is the apply QPS.",
		}, []string{"dry_run"}),
		apps: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "windlass_apps",
			Help: "Running applications by sync and health status, from Temporal visibility.",
		}, []string{"sync_status", "health_status"}),
		customLoads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "windlass_resource_customizations_loads_total",
			Help: "Loads of the resource customizations (Lua health and action scripts) by result (ok or failed).",
		}, []string{"result"}),
		customFailing: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "windlass_resource_customizations_load_failing",
			Help: "1 when the last load of the resource customizations failed and the worker runs on the last good set.",
		}),
		notifications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "windlass_notifications_total",
			Help: "Notification delivery attempts by service type and result (sent, retried, failed).",
		}, []string{"service", "result"}),
		temporal: newSDKCollector(),
	}
	// Both results exist from the start, so that the ratio is defined.
	m.cacheRequests.WithLabelValues(ResultHit)
	m.cacheRequests.WithLabelValues(ResultMiss)
	m.reg.MustRegister(
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.cacheRequests, m.renderDuration, m.applyRequests, m.apps, m.customLoads, m.customFailing, m.notifications, m.temporal,
	)
	return m
}

// Registry is the registry, for tests and for extra collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Temporal is the metrics handler for the Temporal client
// (client.Options.MetricsHandler): the SDK's metrics and the workflow-side
// Windlass metrics land in this registry.
func (m *Metrics) Temporal() client.MetricsHandler {
	if m == nil {
		return client.MetricsNopHandler
	}
	return sdkHandler{c: m.temporal}
}

// CacheRequest counts a manifest cache read.
func (m *Metrics) CacheRequest(hit bool) {
	if m == nil {
		return
	}
	r := ResultMiss
	if hit {
		r = ResultHit
	}
	m.cacheRequests.WithLabelValues(r).Inc()
}

// Rendered records the time tool took to render a source.
func (m *Metrics) Rendered(tool string, d time.Duration) {
	if m == nil {
		return
	}
	m.renderDuration.WithLabelValues(tool).Observe(d.Seconds())
}

// CustomizationsLoaded counts a load of the resource customizations and
// sets the failing gauge (customizations.Recorder).
func (m *Metrics) CustomizationsLoaded(ok bool) {
	if m == nil {
		return
	}
	result, failing := "ok", 0.0
	if !ok {
		result, failing = "failed", 1
	}
	m.customLoads.WithLabelValues(result).Inc()
	m.customFailing.Set(failing)
}

// ApplyRequest counts an apply request sent to a cluster.
func (m *Metrics) ApplyRequest(dryRun bool) {
	if m == nil {
		return
	}
	m.applyRequests.WithLabelValues(strconv.FormatBool(dryRun)).Inc()
}

// Notification counts a delivery attempt (notify.Recorder).
func (m *Metrics) Notification(service, result string) {
	if m == nil {
		return
	}
	m.notifications.WithLabelValues(service, result).Inc()
}
