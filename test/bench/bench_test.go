package main

import "testing"

func TestMedianPercentile(t *testing.T) {
	for _, tc := range []struct {
		name        string
		xs          []float64
		median, p50 float64
		p95         float64
	}{
		{name: "empty"},
		{name: "one", xs: []float64{3}, median: 3, p50: 3, p95: 3},
		{name: "odd unsorted", xs: []float64{5, 1, 3}, median: 3, p50: 3, p95: 5},
		{name: "even", xs: []float64{4, 1, 3, 2}, median: 2.5, p50: 2, p95: 4},
		{name: "twenty", xs: []float64{20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, median: 10.5, p50: 10, p95: 19},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first := 0.0
			if len(tc.xs) > 0 {
				first = tc.xs[0]
			}
			if got := median(tc.xs); got != tc.median {
				t.Errorf("median = %v, want %v", got, tc.median)
			}
			if got := percentile(tc.xs, 50); got != tc.p50 {
				t.Errorf("p50 = %v, want %v", got, tc.p50)
			}
			if got := percentile(tc.xs, 95); got != tc.p95 {
				t.Errorf("p95 = %v, want %v", got, tc.p95)
			}
			if len(tc.xs) > 0 && tc.xs[0] != first {
				t.Error("the input was sorted in place")
			}
		})
	}
}

func TestBenchLine(t *testing.T) {
	for _, tc := range []struct {
		line, tool, kase, ns string
	}{
		{"BenchmarkRender/directory/cache-hit-2         \t    2497\t    956940 ns/op\t     15471 json-bytes\t 101822 B/op", "directory", "cache-hit", "956940"},
		{"BenchmarkRender/helm/warm-mirror-2     \t      48\t  42632124 ns/op\t 4660672 B/op", "helm", "warm-mirror", "42632124"},
		{"BenchmarkRender/jsonnet/cold-checkout \t 19\t 80909231.5 ns/op", "jsonnet", "cold-checkout", "80909231.5"},
		{"--- SKIP: BenchmarkRender/plugin", "", "", ""},
		{"ok  \tgithub.com/windlass-cd/windlass/activities/render\t12.3s", "", "", ""},
	} {
		m := benchLine.FindStringSubmatch(tc.line)
		if tc.tool == "" {
			if m != nil {
				t.Errorf("%q matched: %q", tc.line, m)
			}
			continue
		}
		if m == nil || m[1] != tc.tool || m[2] != tc.kase || m[4] != tc.ns {
			t.Errorf("%q: got %q, want %s/%s %s ns", tc.line, m, tc.tool, tc.kase, tc.ns)
		}
	}
}
