package customizations

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/windlass-cd/windlass/internal/health"
	"github.com/windlass-cd/windlass/internal/testbed"
)

// testRedis is the test bed's Redis, or one of the test's own.
func testRedis(t *testing.T) *redis.Client {
	t.Helper()
	addr := os.Getenv(testbed.EnvRedisAddr)
	if addr == "" {
		r, err := testbed.StartRedis(t.Context(), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Stop() })
		addr = r.Addr()
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// testStore keeps the test's keys apart from every other's.
func testStore(t *testing.T, rdb *redis.Client) RedisStatuses {
	base := "windlass:test:customizations:" + t.Name() + ":" + time.Now().Format(time.RFC3339Nano)
	return RedisStatuses{Client: rdb, Prefix: base + ":", SetPrefix: base + "-set:"}
}

// Workers publish their status after every load; the API lists them.
func TestRedisStatuses(t *testing.T) {
	rdb := testRedis(t)
	store := testStore(t, rdb)

	empty, err := store.List(t.Context())
	if err != nil || len(empty) != 0 {
		t.Fatalf("no workers: %v, %v", empty, err)
	}
	dir := t.TempDir()
	src := &flaky{dir: dir, rev: "1111111111111111111111111111111111111111"}
	report := func(worker string) Option {
		return WithReport(func(ctx context.Context, st Status, set *Set) {
			if err := store.Publish(ctx, worker, st, set, time.Minute); err != nil {
				t.Error(err)
			}
		})
	}
	good := NewLibrary(health.Options{}, nil, WithSource(src, "repo@main"), report("w2"))
	if err := good.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	bad := NewLibrary(health.Options{}, nil, WithSource(&flaky{err: errors.New("no route to host")}, "repo@main"), report("w1"))
	if err := bad.Load(t.Context()); err == nil {
		t.Fatal("no error")
	}
	got, err := store.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := []WorkerStatus{
		{Worker: "w1", Status: Status{Source: "repo@main", Origin: OriginFlags, Error: "fetch repo@main: no route to host", FailedAt: bad.Status().FailedAt}},
		{Worker: "w2", Status: Status{Source: "repo@main", Origin: OriginFlags, Revision: src.rev, Digest: good.Current().Digest, LoadedAt: good.Status().LoadedAt}},
	}
	if d := cmp.Diff(want, got, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); d != "" {
		t.Errorf("statuses (-want +got):\n%s", d)
	}
}
