package lastknown

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var (
	errDown    = errors.New("engine does not answer")
	errMissing = errors.New("not found")
	t0         = time.Date(2026, 11, 27, 14, 0, 0, 0, time.UTC)
)

// step is one Get: of key, at t0+at, whose read answers v or err.
type step struct {
	key string
	at  time.Duration
	v   string
	err error

	want      string
	wantStale *Stale
	wantErr   error
}

func at(d time.Duration) time.Time { return t0.Add(d) }

func TestCache(t *testing.T) {
	for _, tt := range []struct {
		name  string
		size  int
		steps []step
	}{
		{name: "fresh answers are not stale", size: 4, steps: []step{
			{key: "a", v: "1", want: "1"},
			{key: "a", at: time.Second, v: "2", want: "2"},
		}},
		{name: "an outage serves the last answer, marked", size: 4, steps: []step{
			{key: "a", v: "1", want: "1"},
			{key: "a", at: time.Minute, v: "2", want: "2"},
			{key: "a", at: 2 * time.Minute, err: errDown, want: "2", wantStale: &Stale{UnavailableSince: at(2 * time.Minute), AsOf: at(time.Minute)}},
			// The outage began at the first failure, whichever key failed.
			{key: "b", at: 3 * time.Minute, err: errDown, wantErr: errDown},
			{key: "a", at: 4 * time.Minute, err: errDown, want: "2", wantStale: &Stale{UnavailableSince: at(2 * time.Minute), AsOf: at(time.Minute)}},
		}},
		{name: "a success ends the outage", size: 4, steps: []step{
			{key: "a", v: "1", want: "1"},
			{key: "b", at: time.Minute, err: errDown, wantErr: errDown},
			{key: "b", at: 2 * time.Minute, v: "x", want: "x"},
			{key: "a", at: 3 * time.Minute, err: errDown, want: "1", wantStale: &Stale{UnavailableSince: at(3 * time.Minute), AsOf: t0}},
			{key: "a", at: 4 * time.Minute, v: "3", want: "3"},
		}},
		{name: "nothing kept: the error", size: 4, steps: []step{
			{key: "a", err: errDown, wantErr: errDown},
		}},
		{name: "another error forgets the key", size: 4, steps: []step{
			{key: "a", v: "1", want: "1"},
			{key: "a", at: time.Second, err: errMissing, wantErr: errMissing},
			{key: "a", at: 2 * time.Second, err: errDown, wantErr: errDown},
		}},
		{name: "the least recently stored goes first", size: 2, steps: []step{
			{key: "a", v: "1", want: "1"},
			{key: "b", v: "2", want: "2"},
			{key: "a", at: time.Second, v: "1'", want: "1'"},
			{key: "c", at: 2 * time.Second, v: "3", want: "3"},
			{key: "b", at: 3 * time.Second, err: errDown, wantErr: errDown},
			{key: "a", at: 3 * time.Second, err: errDown, want: "1'", wantStale: &Stale{UnavailableSince: at(3 * time.Second), AsOf: at(time.Second)}},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			now := t0
			o := NewOutage(func(err error) bool { return errors.Is(err, errDown) }, 0)
			o.now = func() time.Time { return now }
			c := New[string](o, tt.size)
			for i, s := range tt.steps {
				now = at(s.at)
				got, stale, err := c.Get(t.Context(), s.key, func(context.Context) (string, error) { return s.v, s.err })
				if !errors.Is(err, s.wantErr) || (s.wantErr == nil && err != nil) {
					t.Fatalf("step %d: error %v, want %v", i, err, s.wantErr)
				}
				if got != s.want {
					t.Errorf("step %d: %q, want %q", i, got, s.want)
				}
				if d := cmp.Diff(s.wantStale, stale); d != "" {
					t.Errorf("step %d: stale (-want +got):\n%s", i, d)
				}
			}
			if c.Len() > tt.size {
				t.Errorf("%d answers kept, more than %d", c.Len(), tt.size)
			}
		})
	}
}

// TestCacheBoundsReadsInOutage: during an outage a read of a kept key
// waits at most the outage timeout, then the kept answer is served; a
// caller that gives up gets its own error and nothing is forgotten.
func TestCacheBoundsReadsInOutage(t *testing.T) {
	o := NewOutage(func(err error) bool { return errors.Is(err, errDown) || errors.Is(err, context.DeadlineExceeded) }, time.Millisecond)
	c := New[string](o, 4)
	hang := func(ctx context.Context) (string, error) { <-ctx.Done(); return "", ctx.Err() }
	if _, _, err := c.Get(t.Context(), "a", func(context.Context) (string, error) { return "1", nil }); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Get(t.Context(), "a", func(context.Context) (string, error) { return "", errDown }); err != nil {
		t.Fatal(err)
	}
	got, stale, err := c.Get(t.Context(), "a", hang)
	if err != nil || got != "1" || stale == nil {
		t.Fatalf("a read that hangs in an outage = %q, %v, %v; want the kept answer, stale", got, stale, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, _, err := c.Get(ctx, "a", hang); !errors.Is(err, context.Canceled) {
		t.Fatalf("a read whose caller gave up = %v, want context.Canceled", err)
	}
	if c.Len() != 1 || o.Since().IsZero() {
		t.Errorf("after a caller gave up: %d kept, outage since %v; want 1 kept, the outage on", c.Len(), o.Since())
	}
}

func TestOlder(t *testing.T) {
	a, b := &Stale{AsOf: t0}, &Stale{AsOf: at(time.Minute)}
	for _, tt := range []struct {
		name       string
		x, y, want *Stale
	}{
		{"both nil", nil, nil, nil},
		{"one nil", nil, b, b},
		{"other nil", a, nil, a},
		{"the earlier", b, a, a},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Older(tt.x, tt.y); got != tt.want {
				t.Errorf("Older = %v, want %v", got, tt.want)
			}
		})
	}
}
