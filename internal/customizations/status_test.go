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

// Workers publish their status after every load; the API lists them.
func TestRedisStatuses(t *testing.T) {
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
	store := RedisStatuses{Client: rdb, Prefix: "windlass:test:customizations:" + t.Name() + ":" + time.Now().Format(time.RFC3339Nano) + ":"}

	empty, err := store.List(t.Context())
	if err != nil || len(empty) != 0 {
		t.Fatalf("no workers: %v, %v", empty, err)
	}
	dir := t.TempDir()
	src := &flaky{dir: dir, rev: "1111111111111111111111111111111111111111"}
	report := func(worker string) Option {
		return WithReport(func(ctx context.Context, st Status) {
			if err := store.Put(ctx, worker, st, time.Minute); err != nil {
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
		{Worker: "w2", Status: Status{Source: "repo@main", Origin: OriginFlags, Revision: src.rev, LoadedAt: good.Status().LoadedAt}},
	}
	if d := cmp.Diff(want, got, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); d != "" {
		t.Errorf("statuses (-want +got):\n%s", d)
	}
}
