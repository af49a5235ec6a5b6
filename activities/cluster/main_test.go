package cluster

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/windlass-cd/windlass/internal/testbed"
)

// bed is the shared test bed: $WINDLASS_TEST_CLUSTER_DIR's cluster, or a
// private one.
var bed *testbed.Env

func TestMain(m *testing.M) {
	env, cleanup, err := testbed.Shared(context.Background(), "cluster")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bed = env
	code := m.Run()
	cleanup()
	os.Exit(code)
}
