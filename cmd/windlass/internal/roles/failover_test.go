package roles

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/api/auth"
	"github.com/windlass-cd/windlass/internal/testbed"
)

// TestRedisSentinelFailover: a client made from the Sentinel flags follows
// the sentinels to the promoted replica after the primary is killed. The
// revocations and the manifest cache written (and replicated) before the
// crash are there after it, no call blocks beyond the client's timeouts,
// and the cache takes writes again.
func TestRedisSentinelFailover(t *testing.T) {
	rs, err := testbed.StartRedisSentinel(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rs.Stop() })
	addr := strings.Join(rs.SentinelAddrs(), ",")
	conn := redisConn{SentinelMaster: testbed.SentinelMaster, addr: &addr}
	if err := conn.validate(); err != nil {
		t.Fatal(err)
	}
	rdb, err := conn.client(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := t.Context()

	revs := auth.RedisRevocations{Client: rdb}
	store := render.RedisStore{Client: rdb}
	gen, err := revs.Generation(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := revs.Revoke(ctx, "logged-out", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := store.Set(ctx, "windlass:manifests:v2:before", []byte("[]"), time.Hour); err != nil {
		t.Fatal(err)
	}
	// Replication is asynchronous: wait until the replica has the writes.
	if n, err := rdb.Do(ctx, "WAIT", 1, 5000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT for the replica: %d, %v", n, err)
	}

	old, err := rs.Primary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if err := rs.Kill(old); err != nil {
		t.Fatal(err)
	}
	// Every call returns within the client's timeouts while the sentinels
	// vote; the first that succeeds marks the end of the outage.
	var failed int
	for {
		begin := time.Now()
		revoked, err := revs.Revoked(ctx, "logged-out", gen)
		if took := time.Since(begin); took > 15*time.Second {
			t.Fatalf("a call during the failover took %s", took)
		}
		if err == nil {
			if !revoked {
				t.Fatal("the revocation did not survive the failover")
			}
			break
		}
		if !errors.Is(err, auth.ErrRedisUnreachable) {
			t.Fatalf("during the failover: %v, want %v", err, auth.ErrRedisUnreachable)
		}
		failed++
		if time.Since(killed) > time.Minute {
			t.Fatalf("no new primary a minute after the kill: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("served again %s after the kill, %d calls failed meanwhile", time.Since(killed).Round(100*time.Millisecond), failed)
	if now, err := rs.Primary(ctx); err != nil || now == old {
		t.Fatalf("primary after the failover %q, %v; want another than %s", now, err, old)
	}
	if g, err := revs.Generation(ctx); err != nil || g != gen {
		t.Errorf("generation after the failover %q, %v; want %q: every session would be refused", g, err, gen)
	}
	if b, err := store.Get(ctx, "windlass:manifests:v2:before"); err != nil || string(b) != "[]" {
		t.Errorf("cache entry after the failover %q, %v", b, err)
	}
	if _, err := store.Get(ctx, "windlass:manifests:v2:after"); !errors.Is(err, render.ErrCacheMiss) {
		t.Errorf("missing entry: %v, want a miss", err)
	}
	if err := store.Set(ctx, "windlass:manifests:v2:after", []byte("[1]"), time.Hour); err != nil {
		t.Errorf("write to the new primary: %v", err)
	}
}
