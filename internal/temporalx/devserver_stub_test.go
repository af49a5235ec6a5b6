//go:build nodevserver

package temporalx

import (
	"errors"
	"testing"
)

func TestStartDevServerNotBuiltIn(t *testing.T) {
	srv, err := StartDevServer(t.Context(), DevServerConfig{DataDir: t.TempDir()})
	if !errors.Is(err, ErrDevServerNotBuiltIn) || srv != nil {
		t.Fatalf("StartDevServer = %v, %v; want ErrDevServerNotBuiltIn", srv, err)
	}
	if DevServerBuiltIn {
		t.Error("DevServerBuiltIn is true in a -tags nodevserver build")
	}
}
