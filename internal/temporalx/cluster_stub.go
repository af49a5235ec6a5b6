//go:build nodevserver

package temporalx

import "context"

// StartClusterServer is not available: this binary was built with -tags
// nodevserver.
func StartClusterServer(context.Context, ClusterServerConfig) (*DevServer, error) {
	return nil, ErrDevServerNotBuiltIn
}
