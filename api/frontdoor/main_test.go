package frontdoor

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"

	"github.com/windlass-cd/windlass/internal/testbed"
)

// dyn is a client of the test bed's cluster, where Windlass's CRDs are
// installed.
var dyn dynamic.Interface

func TestMain(m *testing.M) {
	os.Exit(setup(m))
}

func setup(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env, cleanup, err := testbed.Shared(ctx, "frontdoor")
	if err != nil {
		fmt.Fprintln(os.Stderr, "frontdoor tests:", err)
		return 1
	}
	defer cleanup()
	if err := testbed.InstallCRDs(ctx, env.Cluster.Config, "deploy/crds/applications.yaml"); err != nil {
		fmt.Fprintln(os.Stderr, "frontdoor tests:", err)
		return 1
	}
	if dyn, err = dynamic.NewForConfig(env.Cluster.Config); err != nil {
		fmt.Fprintln(os.Stderr, "frontdoor tests:", err)
		return 1
	}
	return m.Run()
}
