package healthlog

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/windlass-cd/windlass/internal/testbed"
)

// redisAddr is the test bed's Redis ($WINDLASS_TEST_REDIS_ADDR), or a
// private one started by TestMain.
var redisAddr string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	addr, stop, err := testbed.SharedRedis(ctx, "healthlog")
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start redis:", err)
		return 1
	}
	defer stop()
	redisAddr = addr
	return m.Run()
}
