package cluster

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ApplyWave reads the live state of a small wave by GET, object by object
// (a list waits for the API server's watch cache), and lists the kinds of
// a large one; either way an object is created when absent and not sent
// again when the apply would change nothing.
func TestApplyWaveReadsLiveState(t *testing.T) {
	for _, tc := range []struct {
		name  string
		n     int
		lists bool
	}{
		{name: "small wave", n: 3},
		{name: "large wave", n: maxWaveGets + 4, lists: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			rec := &listRecorder{clusters: h.a.clusters.(clusters), gvr: gvrConfigMaps}
			h.a.clusters = rec
			var objs []*unstructured.Unstructured
			for i := range tc.n {
				objs = append(objs, configMap(fmt.Sprintf("cm-%02d", i)))
			}
			in := WaveInput{Target: h.target("reads"), Manifests: h.put(objs...), Operation: SyncOperation{SyncID: "s1"}, Step: Step{Phase: PhaseSync}}
			for _, want := range []Action{ActionCreated, ActionUnchanged} {
				got := must[WaveOutput](h, ApplyWaveName, in)
				if acts := actions(got.Resources); len(acts) != tc.n || slices.ContainsFunc(acts, func(a string) bool { return !strings.HasSuffix(a, "="+string(want)) }) {
					t.Fatalf("actions = %v, want %d × %s", acts, tc.n, want)
				}
				if lists := len(rec.take()) > 0; lists != tc.lists {
					t.Fatalf("listed ConfigMaps = %v, want %v", lists, tc.lists)
				}
			}
		})
	}
}
