package settings

import (
	"errors"
	"testing"

	"github.com/windlass-cd/windlass/internal/appspec"
)

func TestResolveDestination(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	if err := s.PutCluster(ctx, Cluster{Name: "edge", Server: "https://edge.example.com:6443", BearerToken: "t"}); err != nil {
		t.Fatal(err)
	}
	d, err := s.ResolveDestination(ctx, appspec.Destination{Name: "edge", Namespace: "web"})
	if err != nil || d != (appspec.Destination{Name: "edge", Server: "https://edge.example.com:6443", Namespace: "web"}) {
		t.Fatalf("ResolveDestination(edge) = %+v, %v", d, err)
	}
	// Re-pointing the cluster is followed.
	if err := s.PutCluster(ctx, Cluster{Name: "edge", Server: "https://edge2.example.com", BearerToken: "t"}); err != nil {
		t.Fatal(err)
	}
	if server, err := s.ClusterServer(ctx, "edge"); err != nil || server != "https://edge2.example.com" {
		t.Fatalf("ClusterServer(edge) after re-pointing = %q, %v", server, err)
	}
	if server, err := s.ClusterServer(ctx, appspec.InClusterName); err != nil || server != appspec.InClusterServer {
		t.Fatalf("ClusterServer(in-cluster) = %q, %v", server, err)
	}
	if _, err := s.ClusterServer(ctx, "nowhere"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ClusterServer(nowhere) = %v, want ErrNotFound", err)
	}
}
