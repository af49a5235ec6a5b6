package deploy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/windlass-cd/windlass/internal/testbed"
)

// bed is the shared test bed: $WINDLASS_TEST_CLUSTER_DIR's cluster, or a
// private one.
var bed *testbed.Env

// root is the repository's root directory.
var root string

func TestMain(m *testing.M) {
	r, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	root = r
	env, cleanup, err := testbed.Shared(context.Background(), "deploy")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bed = env
	code := m.Run()
	cleanup()
	os.Exit(code)
}
