package kube

import (
	"errors"
	"slices"
	"testing"

	"github.com/windlass-cd/windlass/internal/testbed"
)

// The factory discovers the served kinds of its cluster (so that prune can
// find tracked objects of any kind) and refuses other clusters.
func TestServerPreferredResources(t *testing.T) {
	env, cleanup, err := testbed.Shared(t.Context(), "kube")
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	f := NewFactory(env.Cluster.Config, Options{})
	lists, err := f.ServerPreferredResources("in-cluster")
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, l := range lists {
		for _, r := range l.APIResources {
			kinds = append(kinds, l.GroupVersion+"/"+r.Kind)
		}
	}
	for _, want := range []string{"apps/v1/Deployment", "v1/ConfigMap", "batch/v1/Job"} {
		if !slices.Contains(kinds, want) {
			t.Errorf("discovery lacks %s", want)
		}
	}
	if _, err := f.ServerPreferredResources("https://elsewhere.example.com"); !errors.Is(err, ErrUnknownCluster) {
		t.Errorf("another cluster: err = %v, want ErrUnknownCluster", err)
	}
}
