package auth

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Revocations records the IDs (jti) of tokens revoked before they expire.
type Revocations interface {
	// Revoke marks jti revoked until the given time, after which the
	// token has expired anyway and the mark may go. A zero until keeps
	// the mark for ever.
	Revoke(ctx context.Context, jti string, until time.Time) error
	// Revoked reports whether jti is revoked.
	Revoked(ctx context.Context, jti string) (bool, error)
}

// revokedKeyPrefix names the revocation marks in Redis:
// windlass:auth:revoked:v1:<jti>.
const revokedKeyPrefix = "windlass:auth:revoked:v1:"

// RedisRevocations keeps revocation marks in Redis, one key per token ID
// with a TTL of the token's remaining lifetime, so that every replica of the
// API sees a logout at once. Give the client short dial and read timeouts:
// every authenticated request asks it.
type RedisRevocations struct{ Client redis.UniversalClient }

var _ Revocations = RedisRevocations{}

// Revoke implements Revocations.
func (r RedisRevocations) Revoke(ctx context.Context, jti string, until time.Time) error {
	var ttl time.Duration // 0: no expiry
	if !until.IsZero() {
		if ttl = time.Until(until); ttl <= 0 {
			return nil
		}
	}
	if err := r.Client.Set(ctx, revokedKeyPrefix+jti, "1", ttl).Err(); err != nil {
		return fmt.Errorf("redis set revocation: %w", err)
	}
	return nil
}

// Revoked implements Revocations.
func (r RedisRevocations) Revoked(ctx context.Context, jti string) (bool, error) {
	n, err := r.Client.Exists(ctx, revokedKeyPrefix+jti).Result()
	if err != nil {
		return false, fmt.Errorf("redis exists revocation: %w", err)
	}
	return n > 0, nil
}
