package sso

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

// Flow is a browser login in progress, between GET /sso/login and the
// callback. Verifier is the PKCE code verifier: it stays on the server.
type Flow struct {
	Nonce    string `json:"nonce"`
	Verifier string `json:"verifier"`
	// Return is the validated relative path to go to after the login.
	Return string `json:"return"`
}

// Flows keeps the logins in progress and the ID tokens already exchanged,
// shared by the API replicas.
type Flows interface {
	// Put keeps f under state for ttl.
	Put(ctx context.Context, state string, f Flow, ttl time.Duration) error
	// Take returns the flow of state and forgets it, so that a state is
	// used once; ok is false for an unknown or expired state.
	Take(ctx context.Context, state string) (f Flow, ok bool, err error)
	// Once reports whether key is new, and remembers it for ttl.
	Once(ctx context.Context, key string, ttl time.Duration) (bool, error)
}

// Redis keys: the flows by the SHA-256 of their state, and the exchanged
// ID tokens by their SHA-256.
const (
	flowKeyPrefix = "windlass:sso:flow:v1:"
	usedKeyPrefix = "windlass:sso:used:v1:"
)

// RedisFlows keeps Flows in Redis with a TTL: windlass:sso:flow:v1:<sha256
// of the state> (JSON), taken with GETDEL, and windlass:sso:used:v1:<key>.
type RedisFlows struct{ Client redis.UniversalClient }

var _ Flows = RedisFlows{}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// Put implements Flows.
func (r RedisFlows) Put(ctx context.Context, state string, f Flow, ttl time.Duration) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	if err := r.Client.Set(ctx, flowKeyPrefix+digest(state), b, ttl).Err(); err != nil {
		return fmt.Errorf("redis set sso flow: %w", err)
	}
	return nil
}

// Take implements Flows.
func (r RedisFlows) Take(ctx context.Context, state string) (Flow, bool, error) {
	b, err := r.Client.GetDel(ctx, flowKeyPrefix+digest(state)).Bytes()
	if errors.Is(err, redis.Nil) {
		return Flow{}, false, nil
	}
	if err != nil {
		return Flow{}, false, fmt.Errorf("redis getdel sso flow: %w", err)
	}
	var f Flow
	if err := json.Unmarshal(b, &f); err != nil {
		return Flow{}, false, fmt.Errorf("decode sso flow: %w", err)
	}
	return f, true, nil
}

// Once implements Flows.
func (r RedisFlows) Once(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	ok, err := r.Client.SetNX(ctx, usedKeyPrefix+key, "1", ttl).Result()
	if err != nil {
		return false, fmt.Errorf("redis setnx sso token: %w", err)
	}
	return ok, nil
}
