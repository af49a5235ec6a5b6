package lastknown

import (
	"container/list"
	"context"
	"fmt"
	"sync"
	"time"
)

// Stale says that an answer is the last good one, not a fresh one.
type Stale struct {
	// UnavailableSince is when the dependency first failed in this outage.
	UnavailableSince time.Time `json:"unavailableSince"`
	// AsOf is when the dependency gave the answer.
	AsOf time.Time `json:"asOf"`
}

// Older is the staler of a and b (the earlier AsOf); nil when both are.
func Older(a, b *Stale) *Stale {
	if a == nil || (b != nil && b.AsOf.Before(a.AsOf)) {
		return b
	}
	return a
}

// Outage tracks whether a dependency answers. Its zero value is not
// usable: make it with NewOutage.
type Outage struct {
	unavailable func(error) bool
	timeout     time.Duration
	now         func() time.Time

	mu    sync.Mutex
	since time.Time
}

// NewOutage tracks a dependency whose errors unavailable tells apart: true
// for "it does not answer", false for an answer that is an error. While an
// outage lasts, a read that has a last good answer waits at most timeout
// (0: no bound) before that answer is served.
func NewOutage(unavailable func(error) bool, timeout time.Duration) *Outage {
	return &Outage{unavailable: unavailable, timeout: timeout, now: time.Now}
}

// Since is when the current outage began; zero when there is none.
func (o *Outage) Since() time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.since
}

// observe records the outcome of a read and returns the outage's start
// (zero when err is not an outage).
func (o *Outage) observe(err error) time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case err == nil:
		o.since = time.Time{}
	case o.unavailable(err) && o.since.IsZero():
		o.since = o.now()
	case !o.unavailable(err):
		return time.Time{}
	}
	return o.since
}

// Cache keeps the last good answer of each key, up to a bound.
type Cache[V any] struct {
	outage *Outage
	max    int

	mu      sync.Mutex
	order   *list.List // of *entry[V], the most recently stored first
	entries map[string]*list.Element
}

type entry[V any] struct {
	key string
	v   V
	at  time.Time
}

// New makes a cache of up to size answers (at least 1) whose reads report
// to outage.
func New[V any](outage *Outage, size int) *Cache[V] {
	return &Cache[V]{outage: outage, max: max(size, 1), order: list.New(), entries: map[string]*list.Element{}}
}

// Get reads key with read. A good answer is kept and returned fresh (nil
// Stale). When the dependency does not answer and an answer of key is
// kept, that answer is returned with its Stale; otherwise the error is.
// Any other error forgets key.
func (c *Cache[V]) Get(ctx context.Context, key string, read func(context.Context) (V, error)) (V, *Stale, error) {
	rctx := ctx
	if _, kept := c.kept(key); kept && c.outage.timeout > 0 && !c.outage.Since().IsZero() {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(ctx, c.outage.timeout)
		defer cancel()
	}
	v, err := read(rctx)
	var zero V
	if err != nil && ctx.Err() != nil {
		return zero, nil, err // the caller gave up: that says nothing of the dependency
	}
	if err != nil && rctx.Err() != nil {
		// Our own bound ran out: the dependency did not answer in time.
		err = fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
	}
	since := c.outage.observe(err)
	switch {
	case err == nil:
		c.store(key, v)
		return v, nil, nil
	case since.IsZero():
		c.forget(key)
		return zero, nil, err
	}
	e, ok := c.kept(key)
	if !ok {
		return zero, nil, err
	}
	return e.v, &Stale{UnavailableSince: since, AsOf: e.at}, nil
}

func (c *Cache[V]) kept(key string) (entry[V], bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		return *el.Value.(*entry[V]), true
	}
	return entry[V]{}, false
}

func (c *Cache[V]) store(key string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := &entry[V]{key: key, v: v, at: c.outage.now()}
	if el, ok := c.entries[key]; ok {
		el.Value = e
		c.order.MoveToFront(el)
		return
	}
	c.entries[key] = c.order.PushFront(e)
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.entries, last.Value.(*entry[V]).key)
	}
}

func (c *Cache[V]) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		c.order.Remove(el)
		delete(c.entries, key)
	}
}

// Len is the number of answers kept.
func (c *Cache[V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
