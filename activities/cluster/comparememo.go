package cluster

import (
	"crypto/sha256"
	"encoding/json"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxCompareMemos bounds the compare memo (one entry per app).
const maxCompareMemos = 20000

// compareMemo remembers, per app, the answer of its last compare in the
// reconcile loop (dry runs, no diffs) and what that answer was computed
// from: the input, the kinds of its manifests, and the UID and
// resourceVersion of every live object the compare's lists found. A
// compare of the same input whose lists find the same objects at the same
// versions gets the same answer: the manifests behind a ManifestRef's key
// do not change, health is assessed from the live object alone, and an
// apply of the same desired object onto the same live version gives the
// same dry-run result (the dry-run cache assumes this per object). So it
// is answered without loading the manifests, dry runs or health checks:
// an idle app's pass costs its lists. An answer is kept only when every
// rendered resource had a mapping and was found by the lists (one found
// by a GET, unlabelled, could change without the lists seeing it). A
// Fresh compare (a hard refresh) is computed whatever the memo holds. A
// Drift compare of a small app reads the objects the last lists found by
// GET instead of listing (compareMemoEntry.known).
type compareMemo struct {
	mu sync.Mutex
	m  map[string]compareMemoEntry
}

type compareMemoEntry struct {
	input [sha256.Size]byte
	kinds []kindRef // the manifests' kinds
	live  [sha256.Size]byte
	out   CompareOutput
	// known are the live objects the lists found, when they are at most
	// maxKnown: a Drift compare reads them by GET (compare.getKnown).
	known []knownObject
}

// knownObject names a live object the app's lists found.
type knownObject struct {
	kind            kindRef
	namespace, name string
}

// maxKnown bounds the objects a Drift compare reads one by one: a GET is
// a read from etcd that no watch cache holds up (a list waits until the
// API server's cache of each kind has caught up, up to its next progress
// notification, while other kinds are being written), but a large app is
// listed in fewer requests.
const maxKnown = 32

// knownOf names the tracked objects, or nil when there are more than
// maxKnown.
func knownOf(tracked []liveObject) []knownObject {
	if len(tracked) > maxKnown {
		return nil
	}
	out := make([]knownObject, len(tracked))
	for i, l := range tracked {
		out[i] = knownObject{kind: l.kind, namespace: l.obj.GetNamespace(), name: l.obj.GetName()}
	}
	return out
}

// inputDigest is the digest of a compare's input, Fresh and Drift left out
// (false when it cannot be encoded: no memo then).
func inputDigest(in CompareInput) ([sha256.Size]byte, bool) {
	in.Fresh, in.Drift = false, false
	js, err := json.Marshal(in)
	if err != nil {
		return [sha256.Size]byte{}, false
	}
	return sha256.Sum256(js), true
}

// liveDigest is the digest of the live objects' kinds, names, UIDs and
// resourceVersions, in any order; metaDigest the same of their metadata.
func liveDigest(tracked []liveObject) [sha256.Size]byte {
	ids := make([]string, len(tracked))
	for i, l := range tracked {
		ids[i] = liveID(l.kind, l.obj)
	}
	return digestIDs(ids)
}

func metaDigest(tracked []metaObject) [sha256.Size]byte {
	ids := make([]string, len(tracked))
	for i, m := range tracked {
		ids[i] = liveID(m.kind, m.meta)
	}
	return digestIDs(ids)
}

func liveID(k kindRef, o metav1.Object) string {
	return strings.Join([]string{k.gvr.String(), o.GetNamespace(), o.GetName(), string(o.GetUID()), o.GetResourceVersion()}, "\x00")
}

func digestIDs(ids []string) [sha256.Size]byte {
	slices.Sort(ids)
	return sha256.Sum256([]byte(strings.Join(ids, "\x01")))
}

// get returns the entry of app for input (none for the zero input).
func (c *compareMemo) get(app string, input [sha256.Size]byte) (compareMemoEntry, bool) {
	if input == [sha256.Size]byte{} {
		return compareMemoEntry{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[app]
	return e, ok && e.input == input
}

// put replaces app's entry.
func (c *compareMemo) put(app string, e compareMemoEntry) {
	e.out.Resources = slices.Clone(e.out.Resources)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCompareMemos {
		c.m = map[string]compareMemoEntry{}
	}
	c.m[app] = e
}

// forget drops app's entry.
func (c *compareMemo) forget(app string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, app)
}

// answer is a copy of the remembered answer.
func (e compareMemoEntry) answer() CompareOutput {
	out := e.out
	out.Resources = slices.Clone(e.out.Resources)
	return out
}
