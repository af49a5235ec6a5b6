package auth

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/windlass-cd/windlass/internal/secretstore"
)

// Secret names and data keys in the secret store.
const (
	// keysSecret holds the JWT signing keys as JSON under keysDataKey.
	keysSecret  = "windlass-jwt"
	keysDataKey = "keys.json"
)

const (
	// keyBytes is the size of an HS256 key.
	keyBytes = 32
	// keyCacheTTL is how long the keys read from the store are used
	// before they are read again (another replica may have rotated).
	keyCacheTTL = time.Minute
	// keyMissReload is the least time between two reads of the store
	// caused by tokens naming an unknown key.
	keyMissReload = 5 * time.Second
)

// signingKey is an HS256 key. The current key is the one not retired.
type signingKey struct {
	ID        string    `json:"kid"`
	Secret    []byte    `json:"secret"`
	CreatedAt time.Time `json:"createdAt"`
	RetiredAt time.Time `json:"retiredAt,omitzero"`
}

// keyring caches the signing keys read from the secret store.
type keyring struct {
	store secretstore.Store

	reload sync.Mutex // serialises reads of the store

	mu       sync.RWMutex
	keys     []signingKey // newest first; keys[0] is current
	loadedAt time.Time
	missedAt time.Time
}

func newKeyID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func newSigningKey(now time.Time) signingKey {
	secret := make([]byte, keyBytes)
	_, _ = rand.Read(secret)
	return signingKey{ID: newKeyID(), Secret: secret, CreatedAt: now.UTC()}
}

// read returns the stored keys; none when the secret does not exist.
func (k *keyring) read(ctx context.Context) ([]signingKey, error) {
	data, err := k.store.Get(ctx, keysSecret)
	if errors.Is(err, secretstore.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read signing keys: %w", err)
	}
	var keys []signingKey
	if err := json.Unmarshal(data[keysDataKey], &keys); err != nil {
		return nil, fmt.Errorf("decode signing keys in secret %s: %w", keysSecret, err)
	}
	return keys, nil
}

// write stores keys, then reads them back and caches what is stored: when
// two replicas write at once, both end up using the one that won.
func (k *keyring) write(ctx context.Context, keys []signingKey, now time.Time) ([]signingKey, error) {
	b, err := json.Marshal(keys)
	if err != nil {
		return nil, fmt.Errorf("encode signing keys: %w", err)
	}
	if err := k.store.Put(ctx, keysSecret, map[string][]byte{keysDataKey: b}); err != nil {
		return nil, fmt.Errorf("store signing keys: %w", err)
	}
	return k.load(ctx, now)
}

// load reads the keys from the store and caches them.
func (k *keyring) load(ctx context.Context, now time.Time) ([]signingKey, error) {
	keys, err := k.read(ctx)
	if err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, errors.New("no signing key in the secret store: Bootstrap has not run")
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.keys, k.loadedAt = keys, now
	return keys, nil
}

// ensure creates the first key when there is none.
func (k *keyring) ensure(ctx context.Context, now time.Time) (created bool, err error) {
	k.reload.Lock()
	defer k.reload.Unlock()
	keys, err := k.read(ctx)
	if err != nil {
		return false, err
	}
	if len(keys) > 0 {
		_, err := k.load(ctx, now)
		return false, err
	}
	_, err = k.write(ctx, []signingKey{newSigningKey(now)}, now)
	return err == nil, err
}

// rotate adds a new current key, retires the old one and drops the keys
// retired longer than keep ago (keep < 0: never).
func (k *keyring) rotate(ctx context.Context, now time.Time, keep time.Duration) (signingKey, error) {
	k.reload.Lock()
	defer k.reload.Unlock()
	keys, err := k.read(ctx)
	if err != nil {
		return signingKey{}, err
	}
	next := []signingKey{newSigningKey(now)}
	for _, key := range keys {
		if key.RetiredAt.IsZero() {
			key.RetiredAt = now.UTC()
		}
		if keep < 0 || now.Sub(key.RetiredAt) <= keep {
			next = append(next, key)
		}
	}
	stored, err := k.write(ctx, next, now)
	if err != nil {
		return signingKey{}, err
	}
	return stored[0], nil
}

// cached returns the cached keys, reading the store when they are older
// than keyCacheTTL. When the store cannot be read, the cached keys are used.
func (k *keyring) cached(ctx context.Context, now time.Time) ([]signingKey, error) {
	k.mu.RLock()
	keys, fresh := k.keys, now.Sub(k.loadedAt) < keyCacheTTL
	k.mu.RUnlock()
	if fresh {
		return keys, nil
	}
	k.reload.Lock()
	defer k.reload.Unlock()
	k.mu.RLock()
	keys, fresh = k.keys, now.Sub(k.loadedAt) < keyCacheTTL // loaded while we waited?
	k.mu.RUnlock()
	if fresh {
		return keys, nil
	}
	loaded, err := k.load(ctx, now)
	if err != nil && len(keys) > 0 {
		// Keep using the cached keys, and try again in keyCacheTTL.
		k.mu.Lock()
		k.loadedAt = now
		k.mu.Unlock()
		return keys, nil
	}
	return loaded, err
}

// current is the key that signs new tokens.
func (k *keyring) current(ctx context.Context, now time.Time) (signingKey, error) {
	keys, err := k.cached(ctx, now)
	if err != nil {
		return signingKey{}, err
	}
	return keys[0], nil
}

// errUnknownKey: a token names a key that is not (or no longer) stored.
var errUnknownKey = errors.New("unknown signing key id")

// byID returns the key kid. A kid not cached makes the store be read
// again, at most once per keyMissReload.
func (k *keyring) byID(ctx context.Context, kid string, now time.Time) (signingKey, error) {
	find := func(keys []signingKey) (signingKey, error) {
		i := slices.IndexFunc(keys, func(key signingKey) bool { return key.ID == kid })
		if i < 0 {
			return signingKey{}, errUnknownKey
		}
		return keys[i], nil
	}
	keys, err := k.cached(ctx, now)
	if err != nil {
		return signingKey{}, err
	}
	if key, err := find(keys); err == nil {
		return key, nil
	}
	k.mu.Lock()
	again := now.Sub(k.missedAt) >= keyMissReload
	if again {
		k.missedAt = now
	}
	k.mu.Unlock()
	if !again {
		return signingKey{}, errUnknownKey
	}
	k.reload.Lock()
	defer k.reload.Unlock()
	if keys, err = k.load(ctx, now); err != nil {
		return signingKey{}, errUnknownKey
	}
	return find(keys)
}
