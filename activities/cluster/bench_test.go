package cluster

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/internal/appspec"
)

// app500 renders a 500-object app: 400 ConfigMaps and 100 Services, with
// rev in every ConfigMap so that each revision changes them all.
func app500(rev int) []*unstructured.Unstructured {
	objs := make([]*unstructured.Unstructured, 0, 500)
	for i := range 400 {
		objs = append(objs, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": fmt.Sprintf("cm-%03d", i)},
			"data":     map[string]any{"rev": fmt.Sprint(rev), "payload": fmt.Sprintf("value-%d", i)},
		}})
	}
	for i := range 100 {
		objs = append(objs, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"name": fmt.Sprintf("svc-%03d", i)},
			"spec": map[string]any{
				"selector": map[string]any{"app": fmt.Sprintf("a%d", i)},
				"ports":    []any{map[string]any{"port": int64(80)}},
			},
		}})
	}
	return objs
}

// BenchmarkDiffApply500 measures one revision of a 500-object app: the
// ApplyWave that configures every object, then a Compare with diffs that
// finds them all Synced. The first creation is reported as create-ms.
func BenchmarkDiffApply500(b *testing.B) {
	h := newHarness(b)
	tg := h.target("bench")
	step := Step{Phase: PhaseSync}
	ctx := b.Context()
	begin := time.Now()
	if _, err := h.a.ApplyWave(ctx, WaveInput{Target: tg, Manifests: h.put(app500(0)...), Operation: SyncOperation{SyncID: "create"}, Step: step}); err != nil {
		b.Fatal(err)
	}
	create := time.Since(begin)
	var applyTime, compareTime time.Duration
	rev := 0
	b.ResetTimer()
	for b.Loop() {
		rev++
		ref := h.put(app500(rev)...)
		t0 := time.Now()
		out, err := h.a.ApplyWave(ctx, WaveInput{Target: tg, Manifests: ref, Operation: SyncOperation{SyncID: fmt.Sprint("rev", rev)}, Step: step})
		if err != nil || len(out.Resources) != 500 {
			b.Fatalf("apply: %d results, %v", len(out.Resources), err)
		}
		t1 := time.Now()
		c, err := h.a.Compare(ctx, CompareInput{Target: tg, Manifests: ref, WithDiff: true})
		if err != nil || c.Sync != appspec.SyncSynced || len(c.Resources) != 500 {
			b.Fatalf("compare: %s with %d resources, %v", c.Sync, len(c.Resources), err)
		}
		applyTime += t1.Sub(t0)
		compareTime += time.Since(t1)
	}
	// A worker that has not seen the objects (no cached dry runs) does a
	// server-side dry run per object.
	cold, err := New(h.loader, h.a.clusters, h.a.log)
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	if c, err := cold.Compare(ctx, CompareInput{Target: tg, Manifests: h.put(app500(rev)...), WithDiff: true}); err != nil || c.Sync != appspec.SyncSynced {
		b.Fatalf("cold compare: %s, %v", c.Sync, err)
	}
	b.ReportMetric(float64(time.Since(t0).Milliseconds()), "compare-cold-ms")
	b.ReportMetric(float64(create.Milliseconds()), "create-ms")
	b.ReportMetric(float64(applyTime.Milliseconds())/float64(b.N), "apply-ms/op")
	b.ReportMetric(float64(compareTime.Milliseconds())/float64(b.N), "compare-ms/op")
}
