package settings

import (
	"context"
	"fmt"

	"github.com/windlass-cd/windlass/internal/appspec"
)

// ClusterServer is the server URL of the cluster registered under name
// (Argo CD's destination.name); "in-cluster" is InClusterServer. An
// unknown name is an error wrapping ErrNotFound.
func (s *Store) ClusterServer(ctx context.Context, name string) (string, error) {
	if name == appspec.InClusterName {
		return appspec.InClusterServer, nil
	}
	list, err := s.Clusters(ctx)
	if err != nil {
		return "", err
	}
	for _, c := range list {
		if c.Name == name {
			return c.Server, nil
		}
	}
	return "", fmt.Errorf("no cluster is registered under the name %s (windlass cluster add): %w", name, ErrNotFound)
}

// ResolveDestination returns d with the server its name stands for.
func (s *Store) ResolveDestination(ctx context.Context, d appspec.Destination) (appspec.Destination, error) {
	if d.Name == "" || d.Server != "" {
		return d, nil
	}
	server, err := s.ClusterServer(ctx, d.Name)
	if err != nil {
		return d, err
	}
	return d.Resolved(server), nil
}
