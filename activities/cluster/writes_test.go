package cluster

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// TestMaxWrites checks that writes beyond the instance's bound wait for a
// slot, whichever activity runs them, and that a waiting write gives up
// when its context ends.
func TestMaxWrites(t *testing.T) {
	a := &Activities{}
	WithMaxWrites(2)(a)
	var (
		mu       sync.Mutex
		inFlight int
		peak     int
	)
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = a.bounded(context.Background(), func() error {
				mu.Lock()
				inFlight++
				peak = max(peak, inFlight)
				mu.Unlock()
				<-release
				mu.Lock()
				inFlight--
				mu.Unlock()
				return nil
			})
		}()
	}
	held := func() int { mu.Lock(); defer mu.Unlock(); return inFlight }
	for deadline := time.Now().Add(30 * time.Second); held() < 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the first two writes never started")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := a.bounded(ctx, func() error { t.Error("a write ran beyond the bound"); return nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("write with every slot taken: err = %v, want the context's", err)
	}
	close(release)
	wg.Wait()
	if peak != 2 {
		t.Fatalf("peak writes in flight = %d, want 2", peak)
	}
	// Lists have a pool of their own, and an instance without pools
	// (a zero Activities) does not block.
	WithMaxReads(3)(a)
	if cap(a.reads) != 3 || cap(a.writes) != 2 {
		t.Fatalf("pools: reads %d, writes %d", cap(a.reads), cap(a.writes))
	}
	if err := holding(context.Background(), nil, func() error { return nil }); err != nil {
		t.Fatal(err)
	}
}
