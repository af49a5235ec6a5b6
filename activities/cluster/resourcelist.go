package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/internal/appspec"
)

// ListStore keeps the full resource lists that a compare leaves out of its
// output: the manifest cache's store (render.Store).
type ListStore interface {
	Get(ctx context.Context, key string) ([]byte, error)
	Set(ctx context.Context, key string, value []byte, ttl time.Duration) error
}

var _ ListStore = render.RedisStore{}

// listKeyPrefix names the stored lists' keys; the rest of a key is the
// SHA-256 of the list's JSON, so a reference always names one content.
const listKeyPrefix = "windlass:resources:v1:"

// listOpTimeout bounds one read or write of a list, so that a hung Redis
// costs a compare its reference, not its answer.
const listOpTimeout = 5 * time.Second

// listRewrite is how often a list still referenced is written again (at
// most half its TTL), which renews its TTL and puts back one the store
// has lost.
const listRewrite = 10 * time.Minute

// maxListMarks bounds the keys a listWriter remembers writing.
const maxListMarks = 4096

const msgListUnstored = "resource list not stored; the compare returns the bounded list only"

// WithResourceLists stores the full resource list of each compare that
// leaves resources out (more than MaxResults) in s for ttl (0:
// render.CacheTTL), content-addressed, and returns its key as
// CompareOutput.ResourcesRef. Without it the bounded list is all there is.
func WithResourceLists(s ListStore, ttl time.Duration) Option {
	return func(a *Activities) {
		if s == nil {
			return
		}
		if ttl <= 0 {
			ttl = render.CacheTTL
		}
		a.lists = &listWriter{store: s, ttl: ttl, written: map[string]time.Time{}}
	}
}

// listWriter writes resource lists, skipping those it wrote lately: an
// unchanged app's compares give the same list pass after pass.
type listWriter struct {
	store ListStore
	ttl   time.Duration

	mu      sync.Mutex
	written map[string]time.Time
}

// put stores rs and returns its key.
func (w *listWriter) put(ctx context.Context, rs []appspec.ResourceStatus) (string, error) {
	raw, err := json.Marshal(rs)
	if err != nil {
		return "", err
	}
	key := listKey(raw)
	if w.fresh(key) {
		return key, nil
	}
	b, err := render.EncodeEntry(raw, len(rs))
	if err != nil {
		return "", fmt.Errorf("encode resource list: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, listOpTimeout)
	defer cancel()
	if err := w.store.Set(cctx, key, b, w.ttl); err != nil {
		return "", fmt.Errorf("store resource list %s: %w", key, err)
	}
	w.mark(key)
	return key, nil
}

func (w *listWriter) rewriteAfter() time.Duration { return min(w.ttl/2, listRewrite) }

func (w *listWriter) fresh(key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	at, ok := w.written[key]
	return ok && time.Since(at) < w.rewriteAfter()
}

func (w *listWriter) mark(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.written) >= maxListMarks {
		for k, at := range w.written {
			if time.Since(at) >= w.rewriteAfter() {
				delete(w.written, k)
			}
		}
		if len(w.written) >= maxListMarks {
			clear(w.written)
		}
	}
	w.written[key] = time.Now()
}

func listKey(raw []byte) string {
	sum := sha256.Sum256(raw)
	return listKeyPrefix + hex.EncodeToString(sum[:])
}

// boundCompare keeps at most MaxResults of out's resources
// (boundStatuses). When it leaves some out and the lists are kept
// (WithResourceLists), it stores the full list and sets ResourcesRef; a
// store that fails is logged, and the bounded list and its count stand.
func (a *Activities) boundCompare(ctx context.Context, t Target, out CompareOutput) CompareOutput {
	full := out.Resources
	out.Resources, out.Omitted = boundStatuses(full)
	if out.Omitted > 0 {
		out.OmittedKinds = kindsLeftOut(full, out.Resources)
	}
	if out.Omitted == 0 || a.lists == nil || ctx.Err() != nil {
		return out
	}
	ref, err := a.lists.put(ctx, full)
	if err != nil {
		a.log.Warn(msgListUnstored, "app", appName(t), "resources", len(full), "err", err)
		return out
	}
	out.ResourcesRef = ref
	return out
}

// ResourceLists reads the lists that compares stored
// (CompareOutput.ResourcesRef) from the store they were stored in.
type ResourceLists struct{ Store ListStore }

// LoadResources returns the resource list ref names. When the store no
// longer holds it the error wraps the store's miss (render.ErrCacheMiss).
func (l ResourceLists) LoadResources(ctx context.Context, ref string) ([]appspec.ResourceStatus, error) {
	if !strings.HasPrefix(ref, listKeyPrefix) {
		return nil, fmt.Errorf("resource list %q: not a resource list reference", ref)
	}
	cctx, cancel := context.WithTimeout(ctx, listOpTimeout)
	defer cancel()
	b, err := l.Store.Get(cctx, ref)
	if err != nil {
		return nil, fmt.Errorf("resource list %s: %w", ref, err)
	}
	raw, err := render.DecodeEntry(b)
	if err != nil {
		return nil, fmt.Errorf("resource list %s: %w", ref, err)
	}
	if listKey(raw) != ref {
		return nil, fmt.Errorf("resource list %s: content does not match its key", ref)
	}
	var rs []appspec.ResourceStatus
	if err := json.Unmarshal(raw, &rs); err != nil {
		return nil, fmt.Errorf("resource list %s: %w", ref, err)
	}
	return rs, nil
}

// kindsLeftOut are the kinds of full that no resource of kept has, in
// order of first appearance.
func kindsLeftOut(full, kept []appspec.ResourceStatus) []appspec.GroupKind {
	seen := map[appspec.GroupKind]bool{}
	for _, r := range kept {
		seen[appspec.GroupKind{Group: r.Group, Kind: r.Kind}] = true
	}
	var out []appspec.GroupKind
	for _, r := range full {
		if k := (appspec.GroupKind{Group: r.Group, Kind: r.Kind}); !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}
