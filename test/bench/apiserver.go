package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// apiRequests counts the API server's requests (apiserver_request_total,
// from its /metrics) by "VERB resource[/subresource][ dry-run]", from
// every client: Windlass, the controllers, kwok and the harness. The
// difference over a run shows what the test bed served per app.
type apiRequests map[string]float64

// apiServerRequests reads the API server's request counters now.
func (e *env) apiServerRequests(ctx context.Context) (apiRequests, error) {
	body, err := e.kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the API server's metrics: %w", err)
	}
	return parseAPIRequests(string(body)), nil
}

// parseAPIRequests sums apiserver_request_total's samples by verb,
// resource, subresource and dry run, in the Prometheus text format.
func parseAPIRequests(text string) apiRequests {
	out := apiRequests{}
	for line := range strings.Lines(text) {
		rest, ok := strings.CutPrefix(line, "apiserver_request_total{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		l := map[string]string{}
		for kv := range strings.SplitSeq(labels, ",") {
			k, val, ok := strings.Cut(kv, "=")
			if ok {
				l[k] = strings.Trim(val, `"`)
			}
		}
		key := l["verb"] + " " + l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		if l["dry_run"] != "" {
			key += " dry-run"
		}
		out[key] += v
	}
	return out
}

// perApp is the requests made between before and r, per app: the
// largest counts first, at most limit of them, and the total.
func (r apiRequests) perApp(before apiRequests, apps, limit int) (top []apiCount, total float64) {
	for k, v := range r {
		d := (v - before[k]) / float64(apps)
		if d <= 0 {
			continue
		}
		total += d
		top = append(top, apiCount{Request: k, PerApp: d})
	}
	slices.SortFunc(top, func(a, b apiCount) int {
		return cmp.Or(cmp.Compare(b.PerApp, a.PerApp), cmp.Compare(a.Request, b.Request))
	})
	return top[:min(limit, len(top))], total
}

// apiCount is one kind of request's count per app.
type apiCount struct {
	Request string  `json:"request"`
	PerApp  float64 `json:"perApp"`
}
