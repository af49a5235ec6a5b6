package frontdoor

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/windlass-cd/windlass/internal/testbed"
)

// dyn is a client of the test bed's cluster, where Windlass's CRDs are
// installed; cfg its configuration.
var (
	dyn dynamic.Interface
	cfg *rest.Config
)

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
	if err := testbed.InstallCRDs(ctx, env.Cluster.Config, "deploy/crds/applications.yaml", "deploy/crds/appprojects.yaml", "api/frontdoor/testdata/strict-crd.yaml"); err != nil {
		fmt.Fprintln(os.Stderr, "frontdoor tests:", err)
		return 1
	}
	cfg = env.Cluster.Config
	if dyn, err = dynamic.NewForConfig(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "frontdoor tests:", err)
		return 1
	}
	return m.Run()
}
