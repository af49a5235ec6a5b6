package auth

import (
	"context"
	"crypto/rand"
	"errors"
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
	// Revoked reports whether jti is revoked. With a generation (see
	// Generation), a token of another generation counts as revoked: the
	// store may have lost its mark. An empty generation skips that check.
	Revoked(ctx context.Context, jti, generation string) (bool, error)
	// Generation names the store's record of marks, starting a new one
	// when the store has lost it (a restarted Redis that persists
	// nothing, a flush, an eviction). Sessions carry it, so that a
	// session issued before a loss is refused: the store fails closed.
	Generation(ctx context.Context) (string, error)
}

// Redis keys: windlass:auth:revoked:v1:<jti> marks a revoked token, and
// revokedGenKey, which has no TTL, holds the generation.
const (
	revokedKeyPrefix = "windlass:auth:revoked:v1:"
	revokedGenKey    = "windlass:auth:revoked-generation:v1"
)

// ErrRedisUnreachable is wrapped by RedisRevocations' errors when Redis did
// not answer (as opposed to answering with an error of its own).
var ErrRedisUnreachable = errors.New("Redis is unreachable") //lint:ignore ST1005 a name, shown to users as it is

// redisErr wraps err of the Redis operation op, marking a network failure
// with ErrRedisUnreachable.
func redisErr(op string, err error) error {
	var reply redis.Error
	if errors.As(err, &reply) {
		return fmt.Errorf("redis %s: %w", op, err)
	}
	return fmt.Errorf("redis %s: %w: %w", op, ErrRedisUnreachable, err)
}

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
		return redisErr("set revocation", err)
	}
	return nil
}

// Revoked implements Revocations in one round trip: a pipeline of two GETs,
// not an MGET, whose keys Redis Cluster would refuse as CROSSSLOT.
func (r RedisRevocations) Revoked(ctx context.Context, jti, generation string) (bool, error) {
	pipe := r.Client.Pipeline()
	gen := pipe.Get(ctx, revokedGenKey)
	mark := pipe.Exists(ctx, revokedKeyPrefix+jti)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return false, redisErr("get revocation", err)
	}
	if mark.Val() > 0 {
		return true, nil
	}
	if generation == "" {
		return false, nil
	}
	return gen.Val() != generation, nil
}

// Generation implements Revocations.
func (r RedisRevocations) Generation(ctx context.Context) (string, error) {
	gen, err := r.Client.Get(ctx, revokedGenKey).Result()
	if errors.Is(err, redis.Nil) {
		if err := r.Client.SetNX(ctx, revokedGenKey, rand.Text(), 0).Err(); err != nil {
			return "", redisErr("set revocation generation", err)
		}
		gen, err = r.Client.Get(ctx, revokedGenKey).Result() // another replica may have won
	}
	if err != nil {
		return "", redisErr("get revocation generation", err)
	}
	return gen, nil
}
