package cluster

import (
	"sync"
	"testing"
)

// applyCounter counts the apply requests the activities report.
type applyCounter struct {
	mu       sync.Mutex
	wet, dry int
}

func (c *applyCounter) ApplyRequest(dryRun bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if dryRun {
		c.dry++
	} else {
		c.wet++
	}
}

func TestApplyRequestsCounted(t *testing.T) {
	c := &applyCounter{}
	h := newHarness(t, WithMetrics(c))
	tg := h.target("guestbook")
	objs := h.fixture("guestbook.yaml")
	h.sync(tg, h.put(objs...), SyncOperation{})
	if c.wet != 3 {
		t.Fatalf("applies after syncing 3 objects = %d, want 3", c.wet)
	}
	// A changed object is compared with a server-side dry run.
	changed := objs[0].DeepCopy()
	changed.Object["data"] = map[string]any{"greeting": "bonjour"}
	before := c.dry
	h.compare(tg, h.put(changed, objs[1], objs[2]), false)
	if c.dry <= before {
		t.Fatalf("dry-run applies = %d after a compare, want more than %d", c.dry, before)
	}
	if c.wet != 3 {
		t.Fatalf("a compare made %d wet applies", c.wet-3)
	}
}
