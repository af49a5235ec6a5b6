package auth

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/windlass-cd/windlass/internal/testbed"
)

// TestRevocationSurvivesRedisRestart: a Redis that persists nothing is
// restarted (a new, empty one takes over); a session revoked before stays
// refused, other sessions of before must log in again, and new ones work.
func TestRevocationSurvivesRedisRestart(t *testing.T) {
	start := func() *testbed.Redis {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		r, err := testbed.StartRedis(ctx, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Stop() })
		return r
	}
	var addr atomic.Value
	first := start()
	addr.Store(first.Addr())
	rdb := redis.NewClient(&redis.Options{Dialer: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr.Load().(string))
	}})
	t.Cleanup(func() { _ = rdb.Close() })
	en := newEnv(t, withRevocations(RedisRevocations{Client: rdb}))

	revoked := en.login("alice", alicePassword)
	kept := en.login("alice", alicePassword)
	if rec := en.do(request{method: http.MethodDelete, path: "/api/v1/session", bearer: revoked.token}); rec.Code != http.StatusNoContent {
		t.Fatalf("logout: %d %s", rec.Code, rec.Body)
	}
	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}
	addr.Store(start().Addr())
	rdb.Conn().Close() // drop pooled connections to the old server

	for name, tok := range map[string]string{"revoked": revoked.token, "issued before the restart": kept.token} {
		rec := en.do(request{method: http.MethodGet, path: "/api/v1/session/userinfo", bearer: tok})
		if rec.Code != http.StatusUnauthorized {
			t.Errorf("%s session after the restart: %d %s, want 401", name, rec.Code, rec.Body)
		}
	}
	fresh := en.login("alice", alicePassword)
	if rec := en.do(request{method: http.MethodGet, path: "/api/v1/session/userinfo", bearer: fresh.token}); rec.Code != http.StatusOK {
		t.Errorf("new session: %d %s, want 200", rec.Code, rec.Body)
	}
}
