package settings

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A cluster's labels are stored, listed and shown; replacing the cluster
// without labels drops them; a bad key or value is refused.
func TestClusterLabels(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	c := Cluster{Name: "prod", Server: "https://prod.example", BearerToken: "t",
		Labels: map[string]string{"env": "prod", "windlass.dev/region": "eu-west-1"}}
	if err := s.PutCluster(ctx, c); err != nil {
		t.Fatal(err)
	}
	list, err := s.Clusters(ctx)
	if err != nil || len(list) != 1 {
		t.Fatalf("Clusters = %v, %v", list, err)
	}
	if d := cmp.Diff(c.Labels, list[0].View().Labels); d != "" {
		t.Errorf("labels (-want +got):\n%s", d)
	}
	c.Labels = nil
	if err := s.PutCluster(ctx, c); err != nil {
		t.Fatal(err)
	}
	if list, _ = s.Clusters(ctx); len(list[0].Labels) != 0 {
		t.Errorf("labels after replacing without them: %v", list[0].Labels)
	}
	for _, bad := range []map[string]string{{"has space": "x"}, {"env": "not valid!"}, {"": "x"}} {
		c.Labels = bad
		if err := s.PutCluster(ctx, c); !errors.Is(err, ErrInvalid) {
			t.Errorf("labels %v: err = %v, want ErrInvalid", bad, err)
		}
	}
}
