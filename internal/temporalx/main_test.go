//go:build !nodevserver

package temporalx

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/windlass-cd/windlass/internal/testbed"
)

// sharedPG is the package's PostgreSQL, started by the first test that
// asks for it (testPostgres) and stopped after all tests.
var sharedPG struct {
	once    sync.Once
	pg      *testbed.Postgres
	err     error
	cleanup func()
}

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedPG.cleanup != nil {
		sharedPG.cleanup()
	}
	os.Exit(code)
}

// testPostgres is the shared PostgreSQL of the test bed.
func testPostgres(t *testing.T) *testbed.Postgres {
	t.Helper()
	sharedPG.once.Do(func() {
		sharedPG.pg, sharedPG.cleanup, sharedPG.err = testbed.SharedPostgres(context.Background(), "temporalx")
	})
	if sharedPG.err != nil {
		t.Fatal(fmt.Errorf("postgres: %w", sharedPG.err))
	}
	return sharedPG.pg
}
