package render

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// CacheTTL is how long rendered manifests stay in the cache.
const CacheTTL = 24 * time.Hour

const keyPrefix = "windlass:manifests:v1:"

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
	b, _ := json.Marshal(struct {
		Version string
		Req     Request
	}{CodeVersion, r})
	sum := sha256.Sum256(b)
	return keyPrefix + hex.EncodeToString(sum[:])
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
