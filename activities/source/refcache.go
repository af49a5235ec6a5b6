package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/redis/go-redis/v9"
)

// RefCache holds ls-remote results shared by workers. Get reports a missing
// key as (nil, nil).
type RefCache interface {
	Get(ctx context.Context, key string) ([]byte, error)
	Set(ctx context.Context, key string, value []byte, ttl time.Duration) error
}

// RedisRefCache is a RefCache in Redis.
type RedisRefCache struct{ Client redis.UniversalClient }

// Get returns the value of key, or nil when there is none.
func (c RedisRefCache) Get(ctx context.Context, key string) ([]byte, error) {
	b, err := c.Client.Get(ctx, key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("redis get: %w", err)
	}
	return b, nil
}

// Set stores value under key for ttl.
func (c RedisRefCache) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if err := c.Client.Set(ctx, key, value, ttl).Err(); err != nil {
		return fmt.Errorf("redis set: %w", err)
	}
	return nil
}

// refCacheKeyPrefix names the ls-remote cache's keys; the rest of a key is
// a hash of the repository URL, so that no key holds a credential.
const refCacheKeyPrefix = "windlass:lsremote:v1:"

// refCacheOpTimeout bounds one cache read or write; after a failure the
// cache is skipped for refCacheRetryAfter, so that a Redis outage costs one
// timeout, not one a resolve.
const (
	refCacheOpTimeout  = 2 * time.Second
	refCacheRetryAfter = 10 * time.Second
)

// breaker remembers until when a failing cache is skipped.
type breaker struct{ until atomic.Int64 }

func (b *breaker) open() bool { return time.Now().UnixNano() < b.until.Load() }
func (b *breaker) trip()      { b.until.Store(time.Now().Add(refCacheRetryAfter).UnixNano()) }

func refCacheKey(repoURL string) string {
	sum := sha256.Sum256([]byte(repoURL))
	return refCacheKeyPrefix + hex.EncodeToString(sum[:])
}

const (
	msgRefCacheUnavailable = "ls-remote cache unavailable, listing the repository"
	msgRefCacheBadEntry    = "ls-remote cache entry unreadable, listing the repository"
)

// lsRemote lists the references of repoURL, from the ref cache when it has
// them and hard is false. A failing cache is logged and passed over.
func (a *Activities) lsRemote(ctx context.Context, repoURL string, hard bool) ([]*plumbing.Reference, error) {
	key := refCacheKey(repoURL)
	if a.refCache != nil && !hard && !a.refCacheDown.open() {
		if refs, ok := a.cachedRefs(ctx, key); ok {
			return refs, nil
		}
	}
	refs, err := a.listRemote(ctx, repoURL)
	if err != nil {
		return nil, err
	}
	if a.refCache != nil && !a.refCacheDown.open() {
		a.storeRefs(ctx, key, refs)
	}
	return refs, nil
}

func (a *Activities) cachedRefs(ctx context.Context, key string) ([]*plumbing.Reference, bool) {
	cctx, cancel := context.WithTimeout(ctx, refCacheOpTimeout)
	defer cancel()
	b, err := a.refCache.Get(cctx, key)
	if err != nil {
		a.refCacheDown.trip()
		a.log.Warn(msgRefCacheUnavailable, "op", "get", "err", err)
		return nil, false
	}
	if b == nil {
		return nil, false
	}
	refs, err := decodeRefs(b)
	if err != nil {
		a.log.Warn(msgRefCacheBadEntry, "key", key, "err", err)
		return nil, false
	}
	return refs, true
}

func (a *Activities) storeRefs(ctx context.Context, key string, refs []*plumbing.Reference) {
	cctx, cancel := context.WithTimeout(ctx, refCacheOpTimeout)
	defer cancel()
	if err := a.refCache.Set(cctx, key, encodeRefs(refs), a.refTTL); err != nil {
		a.refCacheDown.trip()
		a.log.Warn(msgRefCacheUnavailable, "op", "set", "err", err)
	}
}

// listRemote runs ls-remote against repoURL.
func (a *Activities) listRemote(ctx context.Context, repoURL string) ([]*plumbing.Reference, error) {
	if err := CheckTransport(repoURL); err != nil {
		return nil, err
	}
	var refs []*plumbing.Reference
	err := a.retryRefused(ctx, repoURL, func() error {
		auth, err := a.creds.Auth(ctx, repoURL)
		if err != nil {
			return err
		}
		o, err := a.transportOptions(ctx, repoURL)
		if err != nil {
			return err
		}
		refs, err = ListRefsWith(ctx, repoURL, auth, o, a.netTimeout)
		return err
	})
	return refs, err
}

// encodeRefs writes refs as a JSON list of [name, target] pairs, the
// target being a hash or "ref: <name>" for a symbolic reference.
func encodeRefs(refs []*plumbing.Reference) []byte {
	pairs := make([][2]string, len(refs))
	for i, r := range refs {
		s := r.Strings()
		pairs[i] = [2]string{s[0], s[1]}
	}
	b, _ := json.Marshal(pairs)
	return b
}

func decodeRefs(b []byte) ([]*plumbing.Reference, error) {
	var pairs [][2]string
	if err := json.Unmarshal(b, &pairs); err != nil {
		return nil, err
	}
	refs := make([]*plumbing.Reference, len(pairs))
	for i, p := range pairs {
		refs[i] = plumbing.NewReferenceFromStrings(p[0], p[1])
	}
	return refs, nil
}
