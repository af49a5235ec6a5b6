package render

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// CacheTTL is how long rendered manifests stay in the cache by default
// (Config.CacheTTL overrides it).
const CacheTTL = 24 * time.Hour

// keyPrefix names the manifest cache's keys. v2: values are gzip-compressed
// behind an entry header (entryMagic2, or entryMagic before it); v1 values
// were plain JSON (still readable).
const keyPrefix = "windlass:manifests:v2:"

// ErrCacheMiss is returned by a Store that has no value for a key.
var ErrCacheMiss = errors.New("manifest cache miss")

// Store is the manifest cache.
type Store interface {
	Get(ctx context.Context, key string) ([]byte, error)
	Set(ctx context.Context, key string, value []byte, ttl time.Duration) error
}

// RedisStore keeps manifests in Redis.
type RedisStore struct{ Client redis.UniversalClient }

// Get returns the value of key or ErrCacheMiss.
func (s RedisStore) Get(ctx context.Context, key string) ([]byte, error) {
	b, err := s.Client.Get(ctx, key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, ErrCacheMiss
	}
	if err != nil {
		return nil, fmt.Errorf("redis get: %w", err)
	}
	return b, nil
}

// Set stores value under key for ttl.
func (s RedisStore) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if err := s.Client.Set(ctx, key, value, ttl).Err(); err != nil {
		return fmt.Errorf("redis set: %w", err)
	}
	return nil
}

// CodeVersion names the version of the rendering code; it takes part in the
// cache key, so bump it whenever a change alters what a render produces.
const CodeVersion = "2"

// Key is the cache key of a request: a hash of the render code's version
// and the whole request (repos, SHAs, paths, explicit tools and their
// parameters). A detected tool is a function of the SHA and path.
func (r Request) Key() string {
	return hashKey(keyPrefix, struct {
		Version string
		Req     Request
	}{CodeVersion, r})
}

// sharedKey is the cache key of a request whose every source renders
// with the directory tool: plain YAML and JSON do not depend on the app's
// name or namespace, so the apps of one path at one SHA (an ApplicationSet's,
// a fleet's) share one entry and one render. A detected tool is a function
// of the SHA and path, so a request that once rendered as directories
// always does.
func (r Request) sharedKey() string {
	return hashKey(keyPrefix, struct {
		Version string
		Shared  bool
		Sources []SourceRequest
		Tool    string
		// Keys keeps a checked entry apart from an unchecked one; empty,
		// it leaves the key as it was before signatures were checked.
		Keys []string `json:",omitempty"`
		// Repos keeps apart projects whose sourceRepos differ: they may
		// not read the same submodules.
		Repos []string `json:",omitempty"`
	}{CodeVersion, true, r.Sources, r.Tool, r.SignatureKeys, r.scopeRepos()})
}

// hashKey is prefix and the hex SHA-256 of v's JSON.
func hashKey(prefix string, v any) string {
	b, _ := json.Marshal(v) // plain structs of strings, numbers and slices: no error
	sum := sha256.Sum256(b)
	return prefix + hex.EncodeToString(sum[:])
}

// digest is the content digest of the manifests' JSON (uncompressed), so it
// does not depend on how the cache stores them.
func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Cache entry formats:
//   - entryMagic2, the number of manifests (uvarint), the SHA-256 of their
//     JSON array, then a gzip stream of that array: a Render that finds
//     the entry reads its count and digest without decompressing it;
//   - entryMagic, then the gzip stream (written before entryMagic2);
//   - a plain JSON array, starting with '[' (format v1).
var (
	entryMagic  = []byte("\x00WG1")
	entryMagic2 = []byte("\x00WG2")
)

// maxEntryBytes bounds a decompressed cache entry.
const maxEntryBytes = 512 << 20

var errBadEntry = errors.New("unknown manifest cache entry format")

// gzip's state is large (a BestSpeed writer allocates about 1.2 MB, a
// reader tens of KB), and every render writes and every load reads:
// writers and readers are reused. A pooled reader keeps its last
// compressed entry until it is reused or the pool drops it.
var (
	gzipWriters = sync.Pool{New: func() any {
		zw, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed) // a valid level: no error
		return zw
	}}
	gzipReaders sync.Pool // of *gzip.Reader
)

// encodeEntry encodes the JSON array raw of count manifests.
func encodeEntry(raw []byte, count int) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(len(raw)/4 + len(entryMagic2) + binary.MaxVarintLen64 + sha256.Size + 32)
	buf.Write(entryMagic2)
	buf.Write(binary.AppendUvarint(nil, uint64(count)))
	sum := sha256.Sum256(raw)
	buf.Write(sum[:])
	zw := gzipWriters.Get().(*gzip.Writer)
	zw.Reset(&buf)
	_, err := zw.Write(raw)
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	zw.Reset(io.Discard) // the pool must not keep buf
	gzipWriters.Put(zw)
	if err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// entryInfo reads the count and digest of an entryMagic2 entry without
// decompressing it; ok is false for the other formats.
func entryInfo(b []byte) (count int, sum [sha256.Size]byte, body []byte, ok bool) {
	if !bytes.HasPrefix(b, entryMagic2) {
		return 0, sum, nil, false
	}
	b = b[len(entryMagic2):]
	n, size := binary.Uvarint(b)
	if size <= 0 || n > maxEntryBytes || len(b) < size+sha256.Size {
		return 0, sum, nil, false
	}
	copy(sum[:], b[size:])
	return int(n), sum, b[size+sha256.Size:], true
}

func decodeEntry(b []byte) ([]byte, error) {
	z := b
	switch {
	case bytes.HasPrefix(b, entryMagic2):
		_, _, body, ok := entryInfo(b)
		if !ok {
			return nil, fmt.Errorf("%w: bad header", errBadEntry)
		}
		z = body
	case bytes.HasPrefix(b, entryMagic):
		z = b[len(entryMagic):]
	case len(b) > 0 && b[0] == '[':
		return b, nil
	default:
		return nil, errBadEntry
	}
	raw, err := gunzip(z)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errBadEntry, err)
	}
	if len(raw) > maxEntryBytes {
		return nil, fmt.Errorf("%w: larger than %d bytes", errBadEntry, maxEntryBytes)
	}
	return raw, nil
}

// gunzip decompresses z, reading at most maxEntryBytes+1 bytes.
func gunzip(z []byte) ([]byte, error) {
	zr, _ := gzipReaders.Get().(*gzip.Reader)
	if zr == nil {
		zr = new(gzip.Reader)
	}
	defer gzipReaders.Put(zr)
	if err := zr.Reset(bytes.NewReader(z)); err != nil {
		return nil, err
	}
	// The stream ends with its length modulo 4 GiB: a first guess at the
	// buffer, within bounds (a wrong one only costs a regrowth).
	var out bytes.Buffer
	if n := len(z); n >= 4 {
		size := int(binary.LittleEndian.Uint32(z[n-4:]))
		out.Grow(min(size, 64*n, maxEntryBytes) + bytes.MinRead)
	}
	if _, err := out.ReadFrom(io.LimitReader(zr, maxEntryBytes+1)); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// CacheStats counts manifest cache lookups since the Renderer was made.
type CacheStats struct {
	Hits   uint64 `json:"hits"`
	Misses uint64 `json:"misses"`
	// Errors counts failed cache reads and writes (Redis down, a corrupt
	// entry), remembered limit breaks' too; a failed manifest read also
	// counts as a miss.
	Errors uint64 `json:"errors"`
	// Bypassed counts hard refreshes, which do not read the cache.
	Bypassed uint64 `json:"bypassed"`
}

type cacheCounters struct {
	hits, misses, errors, bypassed atomic.Uint64
	// downUntil (Unix nanoseconds) is set when the store fails: until then
	// the cache is skipped, so that a Redis outage costs one timeout, not
	// one a render.
	downUntil atomic.Int64
}

// cacheRetryAfter is how long the cache is skipped after a store failure.
const cacheRetryAfter = 10 * time.Second

// cacheDown reports whether the store failed less than cacheRetryAfter ago.
func (c *cacheCounters) cacheDown() bool { return time.Now().UnixNano() < c.downUntil.Load() }

func (c *cacheCounters) markDown() { c.downUntil.Store(time.Now().Add(cacheRetryAfter).UnixNano()) }

// CacheStats returns the manifest cache counters.
func (r *Renderer) CacheStats() CacheStats {
	return CacheStats{
		Hits: r.stats.hits.Load(), Misses: r.stats.misses.Load(),
		Errors: r.stats.errors.Load(), Bypassed: r.stats.bypassed.Load(),
	}
}

// cacheOpTimeout bounds one cache read or write, so that a hung Redis slows
// rendering down but does not stop it.
const cacheOpTimeout = 5 * time.Second

const (
	msgCacheUnavailable = "manifest cache unavailable, rendering without it"
	msgCacheBadEntry    = "manifest cache entry unreadable, rendering again"
)

// cacheEntry is a cache value: the number of manifests and the digest of
// their JSON array and, when decoded, the array and its elements.
type cacheEntry struct {
	count  int
	digest string
	raw    []byte
	objs   []json.RawMessage
}

// getCache reads the first of keys the cache holds; with decode, or when
// the entry has no header (entryInfo), it decodes the manifests too. It
// counts one hit or miss. Every failure (Redis down, a corrupt entry) is
// logged, counted and taken as a miss of that key: the cache never makes
// a render fail. While the store is down the read is skipped (and counted
// as a miss and an error).
func (r *Renderer) getCache(ctx context.Context, decode bool, keys ...string) (_ cacheEntry, key string, hit bool) {
	defer func() {
		if hit {
			r.stats.hits.Add(1)
		} else {
			r.stats.misses.Add(1)
		}
		r.cacheRequest(hit)
	}()
	for i, k := range keys {
		if r.stats.cacheDown() {
			if i == 0 { // else the read before failed, and counted
				r.stats.errors.Add(1)
			}
			return cacheEntry{}, "", false
		}
		if e, ok := r.readCache(ctx, k, decode); ok {
			return e, k, true
		}
	}
	return cacheEntry{}, "", false
}

// readCache reads one key: false on a miss and on a failure, which it
// logs and counts (a failing store is skipped for a while).
func (r *Renderer) readCache(ctx context.Context, key string, decode bool) (cacheEntry, bool) {
	b, ok := r.storeGet(ctx, "get", key)
	if !ok {
		return cacheEntry{}, false
	}
	if n, sum, _, ok := entryInfo(b); ok && !decode {
		return cacheEntry{count: n, digest: "sha256:" + hex.EncodeToString(sum[:])}, true
	}
	var e cacheEntry
	var err error
	if e.raw, err = decodeEntry(b); err == nil {
		err = json.Unmarshal(e.raw, &e.objs)
	}
	if err != nil {
		r.stats.errors.Add(1)
		r.log.Warn(msgCacheBadEntry, "key", key, "err", err)
		return cacheEntry{}, false
	}
	e.count, e.digest = len(e.objs), digest(e.raw)
	return e, true
}

// putCache stores the JSON array raw of count manifests under key; a
// failure is logged and counted, not returned. While the store is down the
// write is skipped (and counted as an error).
func (r *Renderer) putCache(ctx context.Context, key string, raw []byte, count int) {
	if r.stats.cacheDown() {
		r.stats.errors.Add(1)
		return
	}
	b, err := encodeEntry(raw, count)
	if err != nil {
		r.stats.errors.Add(1)
		r.log.Warn(msgCacheUnavailable, "op", "encode", "key", key, "err", err)
		return
	}
	r.storeSet(ctx, "set", key, b, r.ttl)
}

// storeGet reads key within cacheOpTimeout: false on a miss and on a
// failure, which it logs (as op) and counts, and after which the store is
// skipped for a while (cacheDown).
func (r *Renderer) storeGet(ctx context.Context, op, key string) ([]byte, bool) {
	cctx, cancel := context.WithTimeout(ctx, cacheOpTimeout)
	defer cancel()
	b, err := r.store.Get(cctx, key)
	if errors.Is(err, ErrCacheMiss) {
		return nil, false
	}
	if err != nil {
		r.stats.markDown()
		r.stats.errors.Add(1)
		r.log.Warn(msgCacheUnavailable, "op", op, "key", key, "err", err)
		return nil, false
	}
	return b, true
}

// storeSet writes value under key for ttl within cacheOpTimeout: false on
// a failure, which it logs (as op) and counts, and after which the store
// is skipped for a while (cacheDown).
func (r *Renderer) storeSet(ctx context.Context, op, key string, value []byte, ttl time.Duration) bool {
	cctx, cancel := context.WithTimeout(ctx, cacheOpTimeout)
	defer cancel()
	if err := r.store.Set(cctx, key, value, ttl); err != nil {
		r.stats.markDown()
		r.stats.errors.Add(1)
		r.log.Warn(msgCacheUnavailable, "op", op, "key", key, "err", err)
		return false
	}
	return true
}

// scopeRepos are the sourceRepos of r's scope, or nil.
func (r Request) scopeRepos() []string {
	if r.Scope == nil {
		return nil
	}
	return r.Scope.SourceRepos
}
