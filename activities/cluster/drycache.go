package cluster

import (
	"crypto/sha256"
	"encoding/json"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// maxDryRuns bounds the dry-run cache (one entry per live object).
const maxDryRuns = 20000

// dryRunCache remembers the result of server-side applying a desired
// object onto one exact live state (UID and resourceVersion): the same
// apply on the same state gives the same result, so Compare needs no dry
// run for an object that has not changed since it was last applied or
// compared. A real apply stores its answer too: applying the same object
// again is a no-op that returns it. Entries are replaced when the object
// changes; the cache is emptied when it grows past maxDryRuns.
//
// An entry keeps a copy of the result only when it differs from the live
// state: for an object in sync (almost every entry, and every real
// apply's) the result is that live state, which the caller holds, so an
// idle fleet's cache costs a few bytes an object, not a copy of each.
type dryRunCache struct {
	mu sync.Mutex
	m  map[types.UID]dryRun
}

type dryRun struct {
	rv     string
	digest [sha256.Size]byte
	// result is the answer when it differs from the live state at rv; nil
	// when the answer is that state.
	result *unstructured.Unstructured
}

func digestOf(u *unstructured.Unstructured) ([sha256.Size]byte, bool) {
	js, err := json.Marshal(u.Object)
	if err != nil {
		return [sha256.Size]byte{}, false
	}
	return sha256.Sum256(js), true
}

// get returns the cached result of applying desired onto live.
func (c *dryRunCache) get(desired, live *unstructured.Unstructured) *unstructured.Unstructured {
	d, ok := digestOf(desired)
	if !ok {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, found := c.m[live.GetUID()]
	if !found || e.rv != live.GetResourceVersion() || e.digest != d {
		return nil
	}
	if e.result == nil {
		return live
	}
	return e.result
}

// put records that applying desired onto live gave result, whose
// resourceVersion is the state it applies to. live is nil for a real
// apply's result, which is the live state at that version. Callers must
// not modify result afterwards.
func (c *dryRunCache) put(desired, live, result *unstructured.Unstructured) {
	d, ok := digestOf(desired)
	if !ok || result == nil || result.GetUID() == "" {
		return
	}
	e := dryRun{rv: result.GetResourceVersion(), digest: d, result: result}
	if live == nil || equality.Semantic.DeepEqual(result.Object, live.Object) {
		e.result = nil // the answer is the live state itself
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxDryRuns {
		c.m = map[types.UID]dryRun{}
	}
	c.m[result.GetUID()] = e
}
