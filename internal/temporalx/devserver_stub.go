//go:build nodevserver

package temporalx

import "context"

// DevServerBuiltIn tells whether this build has the embedded server.
const DevServerBuiltIn = false

// StartDevServer is not available: this binary was built with -tags
// nodevserver.
func StartDevServer(context.Context, DevServerConfig) (*DevServer, error) {
	return nil, ErrDevServerNotBuiltIn
}
