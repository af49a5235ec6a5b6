package testbed

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestRedis(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	r, err := StartRedis(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = r.Stop()
		}
	})
	if !strings.HasPrefix(r.Addr(), "127.0.0.1:") {
		t.Errorf("Addr() = %q, want a 127.0.0.1 address", r.Addr())
	}
	if data, err := os.ReadFile(filepath.Join(dir, redisAddrFile)); err != nil || strings.TrimSpace(string(data)) != r.Addr() {
		t.Errorf("redis.addr = %q (%v), want %q", data, err, r.Addr())
	}

	client := redis.NewClient(&redis.Options{Addr: r.Addr(), MaxRetries: -1, DialerRetries: 1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = client.Close() })
	if got, err := client.Ping(ctx).Result(); err != nil || got != "PONG" {
		t.Fatalf("PING = %q, %v", got, err)
	}
	if err := client.Set(ctx, "windlass:test", "value-1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := client.Get(ctx, "windlass:test").Result(); err != nil || got != "value-1" {
		t.Errorf("GET = %q, %v; want value-1", got, err)
	}
	if _, err := client.Get(ctx, "windlass:missing").Result(); !errors.Is(err, redis.Nil) {
		t.Errorf("GET of a missing key: %v, want redis.Nil", err)
	}
	if _, err := StartRedis(ctx, dir); err == nil {
		t.Error("a second StartRedis in the same dir succeeded")
	}

	stopped = true
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := client.Ping(ctx).Err(); err == nil {
		t.Error("PING answered after Stop")
	}
	if _, err := os.Stat(filepath.Join(dir, pidsFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pids file after Stop: %v", err)
	}

	// Start again: the same address, empty.
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	stopped = false
	if got, err := client.Ping(ctx).Result(); err != nil || got != "PONG" {
		t.Fatalf("PING after Start = %q, %v", got, err)
	}
	if _, err := client.Get(ctx, "windlass:test").Result(); !errors.Is(err, redis.Nil) {
		t.Errorf("GET after Start: %v, want redis.Nil", err)
	}
}
