//go:build nodevserver

package temporalx

import (
	"context"
	"errors"
)

// StartDevServer is not available: this binary was built with -tags
// nodevserver.
func StartDevServer(context.Context, DevServerConfig) (*DevServer, error) {
	return nil, errors.New("embedded dev server not built in (built with -tags nodevserver)")
}
