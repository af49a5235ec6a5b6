package roles

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

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
	eventually(t, time.Minute, "the sentinels to name another primary", func() bool { now, err := rs.Primary(ctx); return err == nil && now != old })
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

// TestRedisClusterFailover: a client made from the Cluster flags spreads
// keys over three primaries; when one is killed, its replica takes its
// slots over, the keys of the other primaries stay served throughout, and
// the replicated entries and revocations of the killed one are back.
func TestRedisClusterFailover(t *testing.T) {
	rc, err := testbed.StartRedisCluster(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rc.Stop() })
	addr := strings.Join(rc.Addrs(), ",")
	conn := redisConn{Cluster: true, addr: &addr}
	if err := conn.validate(); err != nil {
		t.Fatal(err)
	}
	rdb, err := conn.client(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	cc := rdb.(*redis.ClusterClient)
	ctx := t.Context()
	store := render.RedisStore{Client: rdb}
	revs := auth.RedisRevocations{Client: rdb}
	gen, err := revs.Generation(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := revs.Revoke(ctx, "logged-out", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	// A manifest entry on each primary.
	byNode := map[string]string{}
	for i := 0; len(byNode) < 3 && i < 1000; i++ {
		key := "windlass:manifests:v2:" + strconv.Itoa(i)
		m, err := cc.MasterForKey(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := byNode[m.Options().Addr]; !ok {
			byNode[m.Options().Addr] = key
			if err := store.Set(ctx, key, []byte("[]"), time.Hour); err != nil {
				t.Fatal(err)
			}
			if n, err := m.Do(ctx, "WAIT", 1, 5000).Int(); err != nil || n != 1 {
				t.Fatalf("WAIT for the replica of %s: %d, %v", m.Options().Addr, n, err)
			}
		}
	}
	if len(byNode) != 3 {
		t.Fatalf("keys on %d primaries, want 3", len(byNode))
	}
	victim, err := cc.MasterForKey(ctx, revokedKeyOf("logged-out"))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := victim.Do(ctx, "WAIT", 1, 5000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT for the replica: %d, %v", n, err)
	}
	dead := victim.Options().Addr
	killed := time.Now()
	if err := rc.Kill(dead); err != nil {
		t.Fatal(err)
	}
	for node, key := range byNode {
		if node == dead {
			continue
		}
		if b, err := store.Get(ctx, key); err != nil || string(b) != "[]" {
			t.Errorf("entry of %s, still up, during the failover: %q, %v", node, b, err)
		}
	}
	for {
		begin := time.Now()
		b, err := store.Get(ctx, byNode[dead])
		if took := time.Since(begin); took > 15*time.Second {
			t.Fatalf("a call during the failover took %s", took)
		}
		if err == nil {
			if string(b) != "[]" {
				t.Fatalf("entry of the killed primary %q", b)
			}
			break
		}
		// The replica takes over in about 3 s; the client sees it at its
		// next slot map reload (clusterStateReload), not go-redis's 60 s.
		if time.Since(killed) > 30*time.Second {
			t.Fatalf("the killed primary's slots not served 30 s later: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the killed primary's slots served again %s after the kill", time.Since(killed).Round(100*time.Millisecond))
	for node, key := range byNode {
		if b, err := store.Get(ctx, key); err != nil || string(b) != "[]" {
			t.Errorf("entry of %s after the failover: %q, %v", node, b, err)
		}
	}
	if revoked, err := revs.Revoked(ctx, "logged-out", gen); err != nil || !revoked {
		t.Errorf("revoked after the failover: %v, %v; want true", revoked, err)
	}
	if g, err := revs.Generation(ctx); err != nil || g != gen {
		t.Errorf("generation after the failover %q, %v; want %q", g, err, gen)
	}
	if err := store.Set(ctx, byNode[dead]+":after", []byte("[1]"), time.Hour); err != nil {
		t.Errorf("write after the failover: %v", err)
	}
}

// revokedKeyOf is the Redis key of a revoked token ID.
func revokedKeyOf(jti string) string { return "windlass:auth:revoked:v1:" + jti }
