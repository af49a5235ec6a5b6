package settings

import (
	"errors"
	"testing"

	"github.com/windlass-cd/windlass/internal/appspec"
)

// A registered cluster's task queue is stored, shown and served by server
// URL or name; the in-cluster destination and unknown servers use the
// default queue (""); a bad name is refused.
func TestClusterTaskQueue(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	noisy := Cluster{Name: "noisy", Server: "https://noisy.example:6443/", BearerToken: "t", TaskQueue: "windlass-noisy"}
	if err := s.PutCluster(ctx, noisy); err != nil {
		t.Fatal(err)
	}
	if err := s.PutCluster(ctx, Cluster{Name: "quiet", Server: "https://quiet.example", BearerToken: "t"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ server, want string }{
		{"https://noisy.example:6443", "windlass-noisy"},
		{"https://noisy.example:6443/", "windlass-noisy"},
		{"noisy", "windlass-noisy"},
		{"https://quiet.example", ""},
		{"https://unknown.example", ""},
		{appspec.InClusterServer, ""},
		{"in-cluster", ""},
		{"", ""},
	}
	for _, tt := range tests {
		got, err := s.ClusterTaskQueue(ctx, tt.server)
		if err != nil || got != tt.want {
			t.Errorf("ClusterTaskQueue(%q) = %q, %v; want %q", tt.server, got, err, tt.want)
		}
	}
	list, err := s.Clusters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list {
		if c.Name == "noisy" && c.View().TaskQueue != "windlass-noisy" {
			t.Errorf("view %+v", c.View())
		}
	}
	for _, bad := range []string{"has space", "a/b", string(make([]byte, 201))} {
		c := noisy
		c.TaskQueue = bad
		if err := s.PutCluster(ctx, c); !errors.Is(err, ErrInvalid) {
			t.Errorf("taskQueue %q: err = %v", bad, err)
		}
	}
}
