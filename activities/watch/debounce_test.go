package watch

import (
	"slices"
	"sync"
	"testing"
	"time"
)

func sortedCopy(s []string) []string { c := slices.Clone(s); slices.Sort(c); return c }

// TestDebouncer checks the leading and trailing edges: the first event of
// a quiet app is signalled at once, a burst adds exactly one more signal
// with its last reason, and nothing more is sent after stop. A signal
// lists when an event it gathers asked to.
func TestDebouncer(t *testing.T) {
	type touch struct {
		app, reason string
		list        bool
	}
	tests := []struct {
		name    string
		touches []touch
		stop    bool
		first   []string // signals sent when the touches have returned
		final   []string // signals sent once every window has closed
	}{
		{name: "one event", touches: []touch{{"p/a", "r1", false}},
			first: []string{"p/a r1"}, final: []string{"p/a r1"}},
		{name: "a burst", touches: []touch{{"p/a", "r1", false}, {"p/a", "r2", false}, {"p/a", "r3", false}},
			first: []string{"p/a r1"}, final: []string{"p/a r1", "p/a r3"}},
		{name: "a creation", touches: []touch{{"p/a", "r1", true}},
			first: []string{"p/a r1 list"}, final: []string{"p/a r1 list"}},
		{name: "a creation in a burst", touches: []touch{{"p/a", "r1", false}, {"p/a", "r2", true}, {"p/a", "r3", false}},
			first: []string{"p/a r1"}, final: []string{"p/a r1", "p/a r3 list"}},
		{name: "a creation first, then a burst", touches: []touch{{"p/a", "r1", true}, {"p/a", "r2", false}},
			first: []string{"p/a r1 list"}, final: []string{"p/a r1 list", "p/a r2"}},
		{name: "two apps", touches: []touch{{"p/a", "r1", false}, {"p/b", "r2", false}, {"p/b", "r3", false}},
			first: []string{"p/a r1", "p/b r2"}, final: []string{"p/a r1", "p/b r2", "p/b r3"}},
		{name: "stopped", touches: []touch{{"p/a", "r1", false}, {"p/a", "r2", false}}, stop: true,
			first: []string{"p/a r1"}, final: []string{"p/a r1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var (
				mu   sync.Mutex
				sent []string
			)
			d := newDebouncer(500*time.Millisecond, func(app, reason string, list bool) {
				mu.Lock()
				defer mu.Unlock()
				s := app + " " + reason
				if list {
					s += " list"
				}
				sent = append(sent, s)
			})
			for _, to := range tc.touches {
				d.touch(to.app, to.reason, to.list)
			}
			snapshot := func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(sent) }
			// The leading signals go out at once, each on a goroutine of
			// its own: wait for them (no time bound asserted).
			for deadline := time.Now().Add(30 * time.Second); len(snapshot()) < len(tc.first) && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			if got := snapshot(); !slices.Equal(sortedCopy(got), sortedCopy(tc.first)) {
				t.Fatalf("signals at once = %q, want %q", got, tc.first)
			}
			if tc.stop {
				d.stop()
				time.Sleep(1200 * time.Millisecond) // two windows' worth: a timer left running would fire
			} else {
				// Wait (no time bound asserted) until every window closed.
				for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
					d.mu.Lock()
					open := len(d.windows)
					d.mu.Unlock()
					if open == 0 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("windows still open: %d", open)
					}
				}
			}
			if got := snapshot(); !slices.Equal(sortedCopy(got), sortedCopy(tc.final)) {
				t.Fatalf("signals = %q, want %q", got, tc.final)
			}
			if d.events() != int64(len(tc.touches)) || d.signals() != int64(len(tc.final)) {
				t.Fatalf("counters events=%d signals=%d", d.events(), d.signals())
			}
		})
	}
}
