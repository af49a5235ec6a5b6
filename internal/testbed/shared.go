package testbed

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// Environment variables read by Shared.
const (
	// EnvClusterDir names the state dir of a running cluster (hack/cluster
	// up) that Shared loads instead of starting one.
	EnvClusterDir = "WINDLASS_TEST_CLUSTER_DIR"
	// EnvRedisAddr is the host:port of a running Redis that Shared uses
	// instead of starting one.
	EnvRedisAddr = "WINDLASS_TEST_REDIS_ADDR"
)

// Env is the test bed handed out by Shared.
type Env struct {
	Cluster   *Cluster
	RedisAddr string
}

// Shared returns a cluster and a Redis for the tests of one package. name
// (the package's name, say) labels the temporary directory and log lines.
//
// When $WINDLASS_TEST_CLUSTER_DIR is set, the cluster running there is
// loaded and left running; otherwise a private cluster is started in a
// temporary directory. Likewise $WINDLASS_TEST_REDIS_ADDR, or a private Redis.
// The returned cleanup stops and removes only what Shared started; call it
// once, after the tests (typically in TestMain after m.Run). Call Shared once
// per test binary: every call without the variables starts new servers.
func Shared(ctx context.Context, name string) (*Env, func(), error) {
	var (
		env      = &Env{}
		cleanups []func()
	)
	cleanup := func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}
	fail := func(err error) (*Env, func(), error) {
		cleanup()
		return nil, func() {}, err
	}
	logger := slog.Default().With("testbed", name)

	if dir := os.Getenv(EnvClusterDir); dir != "" {
		c, err := LoadCluster(dir)
		if err != nil {
			return fail(fmt.Errorf("load cluster from $%s: %w", EnvClusterDir, err))
		}
		env.Cluster = c
	} else {
		dir, err := os.MkdirTemp("", "windlass-"+safeName(name)+"-cluster-")
		if err != nil {
			return fail(fmt.Errorf("create cluster dir: %w", err))
		}
		cleanups = append(cleanups, func() { _ = os.RemoveAll(dir) })
		c, err := StartCluster(ctx, ClusterOptions{Dir: dir, Log: logger.Debug})
		if err != nil {
			return fail(err)
		}
		cleanups = append(cleanups, func() {
			if err := c.Stop(); err != nil {
				logger.Warn("stop private cluster", "err", err)
			}
		})
		env.Cluster = c
	}

	addr, stop, err := SharedRedis(ctx, name)
	if err != nil {
		return fail(err)
	}
	cleanups = append(cleanups, stop)
	env.RedisAddr = addr
	return env, cleanup, nil
}

// SharedRedis returns the address of $WINDLASS_TEST_REDIS_ADDR's Redis, or
// of a private one it starts in a temporary directory, for the tests of
// one package that need Redis alone. The returned cleanup stops and
// removes only what it started; call it once, after the tests.
func SharedRedis(ctx context.Context, name string) (string, func(), error) {
	if addr := os.Getenv(EnvRedisAddr); addr != "" {
		return addr, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "windlass-"+safeName(name)+"-redis-")
	if err != nil {
		return "", func() {}, fmt.Errorf("create redis dir: %w", err)
	}
	r, err := StartRedis(ctx, dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", func() {}, err
	}
	return r.Addr(), func() {
		if err := r.Stop(); err != nil {
			slog.Default().With("testbed", name).Warn("stop private redis", "err", err)
		}
		_ = os.RemoveAll(dir)
	}, nil
}

// safeName keeps name usable in a temporary directory's name.
func safeName(name string) string {
	name = strings.Map(func(r rune) rune {
		if r == filepath.Separator || r == ' ' {
			return '-'
		}
		return r
	}, name)
	if name == "" {
		return "test"
	}
	return name
}
