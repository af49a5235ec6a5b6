package roles

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/windlass-cd/windlass/activities/render"
)

// TestMain makes this test binary a render sandbox or a plugin server
// when a worker that a test runs starts it as one.
func TestMain(m *testing.M) {
	if os.Getenv(render.SandboxEnv) == "1" {
		os.Exit(render.SandboxMain(os.Stdin, os.Stdout))
	}
	if len(os.Args) > 1 && os.Args[1] == "plugin-server" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := PluginServer(ctx, os.Args[2:])
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
