package metrics

import (
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
)

// sdkHandler adapts Temporal's client.MetricsHandler to Prometheus.
// Counters become <name>_total, timers histograms <name>_seconds (with
// Buckets), gauges <name>; tags become labels.
type sdkHandler struct {
	c    *sdkCollector
	tags map[string]string
	// key is tags in the collector's series IDs, made once per WithTags:
	// the SDK asks for a counter or timer at every task it handles.
	key string
}

var _ client.MetricsHandler = sdkHandler{}

func (h sdkHandler) WithTags(tags map[string]string) client.MetricsHandler {
	merged := make(map[string]string, len(h.tags)+len(tags))
	maps.Copy(merged, h.tags)
	maps.Copy(merged, tags)
	return sdkHandler{c: h.c, tags: merged, key: tagsKey(merged)}
}

// tagsKey is the sorted pairs of tags, in a form no tag contains.
func tagsKey(tags map[string]string) string {
	n := 0
	for k, v := range tags {
		n += len(k) + len(v) + 2
	}
	var b strings.Builder
	b.Grow(n) // one allocation
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		b.WriteString("\xff")
		b.WriteString(k)
		b.WriteString("\xfe")
		b.WriteString(tags[k])
	}
	return b.String()
}

func (h sdkHandler) Counter(name string) client.MetricsCounter {
	s := h.c.series(kindCounter, name+"_total", h)
	return counter{s}
}

func (h sdkHandler) Gauge(name string) client.MetricsGauge {
	return gauge{h.c.series(kindGauge, name, h)}
}

func (h sdkHandler) Timer(name string) client.MetricsTimer {
	return timer{h.c.series(kindTimer, name+"_seconds", h)}
}

type counter struct{ s *series }

func (c counter) Inc(n int64) {
	if n > 0 {
		c.s.add(float64(n))
	}
}

type gauge struct{ s *series }

func (g gauge) Update(v float64) { g.s.value.Store(math.Float64bits(v)) }

type timer struct{ s *series }

func (t timer) Record(d time.Duration) { t.s.observe(d.Seconds()) }

type kind int

const (
	kindCounter kind = iota
	kindGauge
	kindTimer
)

// series is one metric with its labels.
type series struct {
	kind   kind
	desc   *prometheus.Desc
	values []string
	// value holds a counter or gauge as float64 bits.
	value atomic.Uint64

	mu      sync.Mutex // the histogram fields
	buckets []uint64   // per bucket of Buckets, not cumulative
	count   uint64
	sum     float64
}

func (s *series) add(v float64) {
	for {
		old := s.value.Load()
		if s.value.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

func (s *series) observe(v float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, _ := slices.BinarySearch(Buckets, v); i < len(Buckets) {
		s.buckets[i]++
	}
	s.count++
	s.sum += v
}

func (s *series) metric() (prometheus.Metric, error) {
	switch s.kind {
	case kindCounter:
		return prometheus.NewConstMetric(s.desc, prometheus.CounterValue, math.Float64frombits(s.value.Load()), s.values...)
	case kindGauge:
		return prometheus.NewConstMetric(s.desc, prometheus.GaugeValue, math.Float64frombits(s.value.Load()), s.values...)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cum := make(map[float64]uint64, len(Buckets))
	var n uint64
	for i, b := range Buckets {
		n += s.buckets[i]
		cum[b] = n
	}
	return prometheus.NewConstHistogram(s.desc, s.count, s.sum, cum, s.values...)
}

// sdkCollector holds the series the SDK and the workflows record. It is
// an unchecked collector: the SDK records one name with different tag
// sets (a request with and without an operation, say), which a fixed
// label set per family could not hold.
type sdkCollector struct {
	mu sync.RWMutex
	m  map[seriesID]*series
}

// seriesID names a series: its metric and its handler's tagsKey.
type seriesID struct{ name, tags string }

func newSDKCollector() *sdkCollector { return &sdkCollector{m: map[seriesID]*series{}} }

// Help texts of the workflow-side Windlass metrics.
var sdkHelp = map[string]string{
	SyncCounter + "_total":      "Finished syncs by result (Succeeded, Failed, Terminated, Error).",
	SyncTimer + "_seconds":      "Duration of finished syncs by result.",
	ReconcileTimer + "_seconds": "Duration of one application reconcile pass: project, resolve, render, compare.",
}

func (c *sdkCollector) series(k kind, name string, h sdkHandler) *series {
	name = sanitize(name)
	id := seriesID{name: name, tags: h.key}
	c.mu.RLock()
	s, ok := c.m[id]
	c.mu.RUnlock()
	if ok {
		return s
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.m[id]; ok {
		return s
	}
	keys := slices.Sorted(maps.Keys(h.tags))
	labels := make([]string, len(keys))
	values := make([]string, len(keys))
	for i, k := range keys {
		labels[i], values[i] = sanitize(k), h.tags[k]
	}
	help := sdkHelp[name]
	if help == "" {
		help = "Temporal SDK metric " + name + "."
	}
	s = &series{kind: k, desc: prometheus.NewDesc(name, help, labels, nil), values: values}
	if k == kindTimer {
		s.buckets = make([]uint64, len(Buckets))
	}
	c.m[id] = s
	return s
}

// Describe sends nothing: the collector is unchecked.
func (c *sdkCollector) Describe(chan<- *prometheus.Desc) {}

// Collect sends every series.
func (c *sdkCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.RLock()
	all := slices.Collect(maps.Values(c.m))
	c.mu.RUnlock()
	for _, s := range all {
		m, err := s.metric()
		if err != nil {
			m = prometheus.NewInvalidMetric(s.desc, err)
		}
		ch <- m
	}
}

// sanitize maps a name onto [a-zA-Z0-9_:], as Prometheus requires.
func sanitize(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == ':' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			return r
		}
		return '_'
	}, name)
}
