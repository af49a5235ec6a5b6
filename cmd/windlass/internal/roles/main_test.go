package roles

import (
	"os"
	"testing"

	"github.com/windlass-cd/windlass/activities/render"
)

// TestMain makes this test binary a render sandbox when a worker that a
// test runs starts it as one.
func TestMain(m *testing.M) {
	if os.Getenv(render.SandboxEnv) == "1" {
		os.Exit(render.SandboxMain(os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}
