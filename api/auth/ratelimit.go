package auth

import (
	"container/list"
	"sync"
	"time"
)

// failureLimiter counts failures per key in a sliding window. It tracks at
// most maxEntries keys; when full it forgets the least recently failed.
type failureLimiter struct {
	window     time.Duration
	maxEntries int

	mu      sync.Mutex
	entries map[string]*list.Element // of *failures
	order   *list.List               // least recently failed first
}

type failures struct {
	key   string
	times []time.Time // oldest first, at most the key's limit
}

func newFailureLimiter(window time.Duration, maxEntries int) *failureLimiter {
	return &failureLimiter{window: window, maxEntries: maxEntries, entries: map[string]*list.Element{}, order: list.New()}
}

// limit is a key and the failures it may have in the window.
type limit struct {
	key string
	max int
}

// wait returns how long until each key is below its limit again; 0 when
// all are.
func (l *failureLimiter) wait(now time.Time, limits ...limit) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var longest time.Duration
	for _, lim := range limits {
		e, ok := l.entries[lim.key]
		if !ok {
			continue
		}
		f := e.Value.(*failures)
		f.times = l.recent(f.times, now)
		if len(f.times) >= lim.max {
			// The failure that must leave the window first.
			w := f.times[len(f.times)-lim.max].Add(l.window).Sub(now)
			longest = max(longest, w)
		}
	}
	return longest
}

// fail records a failure now for each key.
func (l *failureLimiter) fail(now time.Time, limits ...limit) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, lim := range limits {
		e, ok := l.entries[lim.key]
		if !ok {
			for l.order.Len() >= l.maxEntries {
				l.remove(l.order.Front())
			}
			e = l.order.PushBack(&failures{key: lim.key})
			l.entries[lim.key] = e
		}
		l.order.MoveToBack(e)
		f := e.Value.(*failures)
		f.times = append(l.recent(f.times, now), now)
		if n := len(f.times); n > lim.max {
			f.times = append(f.times[:0], f.times[n-lim.max:]...)
		}
	}
	// Drop keys whose last failure has left the window.
	for e := l.order.Front(); e != nil && !l.inWindow(e.Value.(*failures).times, now); e = l.order.Front() {
		l.remove(e)
	}
}

// reset forgets key's failures.
func (l *failureLimiter) reset(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.entries[key]; ok {
		l.remove(e)
	}
}

func (l *failureLimiter) remove(e *list.Element) {
	delete(l.entries, e.Value.(*failures).key)
	l.order.Remove(e)
}

// recent drops the failures that have left the window.
func (l *failureLimiter) recent(times []time.Time, now time.Time) []time.Time {
	i := 0
	for i < len(times) && !now.Before(times[i].Add(l.window)) {
		i++
	}
	return times[i:]
}

func (l *failureLimiter) inWindow(times []time.Time, now time.Time) bool {
	return len(times) > 0 && now.Before(times[len(times)-1].Add(l.window))
}

// size is the number of keys tracked.
func (l *failureLimiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}
