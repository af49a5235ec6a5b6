//go:build nodevserver

package temporalx

import (
	"strings"
	"testing"
)

func TestStartDevServerNotBuiltIn(t *testing.T) {
	srv, err := StartDevServer(t.Context(), DevServerConfig{DataDir: t.TempDir()})
	if err == nil || srv != nil {
		t.Fatalf("StartDevServer = %v, %v; want an error", srv, err)
	}
	if !strings.Contains(err.Error(), "nodevserver") {
		t.Errorf("error %q does not mention the build tag", err)
	}
}
