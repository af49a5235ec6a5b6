package cluster

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func cachedObj(rv string, data string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "cfg", "namespace": "web", "uid": "u-1", "resourceVersion": rv},
		"data":     map[string]any{"k": data}}}
}

// The dry-run cache answers the same apply on the same live state; it
// keeps a copy of the answer only when the answer differs from that state.
func TestDryRunCache(t *testing.T) {
	desired := cachedObj("", "v")
	for _, tc := range []struct {
		name string
		// put: live (nil: a real apply's answer) and the answer.
		putLive, answer *unstructured.Unstructured
		get             *unstructured.Unstructured // live at get
		getDesired      *unstructured.Unstructured
		want            string // "live", "copy" or "miss"
	}{
		{name: "a real apply's answer is the live state", answer: cachedObj("7", "v"), get: cachedObj("7", "v"), want: "live"},
		{name: "a dry run that changes nothing", putLive: cachedObj("7", "v"), answer: cachedObj("7", "v"), get: cachedObj("7", "v"), want: "live"},
		{name: "a dry run that changes something keeps its answer", putLive: cachedObj("7", "drifted"), answer: cachedObj("7", "v"), get: cachedObj("7", "drifted"), want: "copy"},
		{name: "another resourceVersion", answer: cachedObj("7", "v"), get: cachedObj("8", "v"), want: "miss"},
		{name: "another desired object", answer: cachedObj("7", "v"), get: cachedObj("7", "v"), getDesired: cachedObj("", "v2"), want: "miss"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c dryRunCache
			c.put(desired, tc.putLive, tc.answer)
			d := desired
			if tc.getDesired != nil {
				d = tc.getDesired
			}
			got := c.get(d, tc.get)
			switch tc.want {
			case "miss":
				if got != nil {
					t.Fatalf("get = %v, want a miss", got.Object)
				}
			case "live":
				if got != tc.get {
					t.Fatalf("get = %v, want the live object itself", got)
				}
				if c.m["u-1"].result != nil {
					t.Fatal("the entry keeps a copy of an answer equal to the live state")
				}
			case "copy":
				if got != tc.answer {
					t.Fatalf("get = %v, want the stored answer", got)
				}
			}
		})
	}
}
