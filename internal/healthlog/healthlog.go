package healthlog

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/windlass-cd/windlass/internal/appspec"
)

// Defaults of a Store.
const (
	// DefaultLimit is how many transitions an app keeps.
	DefaultLimit = 500
	// DefaultTTL is how long an app's record outlives its last write:
	// a deleted app's history goes with it.
	DefaultTTL = 30 * 24 * time.Hour
	// maxMessage bounds a stored health message, in bytes.
	maxMessage = 512
	// unchangedFor is how long a Store skips a record equal to the one
	// it last wrote for the app (the compare of an unchanged app gives
	// the same answer pass after pass).
	unchangedFor = 10 * time.Minute
	// maxMarks bounds the apps a Store remembers writing.
	maxMarks = 4096
	// opTimeout bounds one Redis call, so that a hung Redis costs a
	// compare its record, not its answer.
	opTimeout = 5 * time.Second
)

// AppField is the state field of the app's own health.
const AppField = "@app"

// keyPrefix names the keys; the app's name in braces is their hash tag.
const keyPrefix = "windlass:health:v1:"

// Transition is one change of health, of the app (Resource nil) or of
// one of its resources. From is empty the first time a health is seen.
type Transition struct {
	Time     time.Time            `json:"time"`
	Resource *appspec.ResourceKey `json:"resource,omitempty"`
	From     appspec.HealthStatus `json:"from,omitempty"`
	To       appspec.HealthStatus `json:"to"`
	Message  string               `json:"message,omitempty"`
}

// State is a current health and when it last changed.
type State struct {
	Health             appspec.HealthStatus `json:"health"`
	Message            string               `json:"message,omitempty"`
	LastTransitionTime time.Time            `json:"lastTransitionTime"`
}

// Store records and reads health transitions in Redis.
type Store struct {
	client redis.UniversalClient
	limit  int
	ttl    time.Duration

	mu    sync.Mutex
	marks map[string]mark // app → the last record written
}

type mark struct {
	digest [sha256.Size]byte
	at     time.Time
}

// Option configures a Store.
type Option func(*Store)

// WithLimit keeps n transitions per app (default DefaultLimit).
func WithLimit(n int) Option {
	return func(s *Store) {
		if n > 0 {
			s.limit = n
		}
	}
}

// WithTTL keeps an app's record for ttl after its last write (default
// DefaultTTL).
func WithTTL(ttl time.Duration) Option {
	return func(s *Store) {
		if ttl > 0 {
			s.ttl = ttl
		}
	}
}

// New returns a Store on c.
func New(c redis.UniversalClient, opts ...Option) (*Store, error) {
	if c == nil {
		return nil, errors.New("healthlog: a Redis client is required")
	}
	s := &Store{client: c, limit: DefaultLimit, ttl: DefaultTTL, marks: map[string]mark{}}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

func stateKey(app string) string { return keyPrefix + "{" + app + "}:state" }
func logKey(app string) string   { return keyPrefix + "{" + app + "}:log" }

//go:embed record.lua
var recordSource string

var recordScript = redis.NewScript(recordSource)

// entry is one assessed health, as the script reads it: field, health,
// message and the resource key's JSON (empty for the app).
type entry [4]string

// Record compares the app's health and its resources' with those last
// recorded, and records each change at now. Resources no longer listed
// are forgotten. It returns how many transitions it recorded.
func (s *Store) Record(ctx context.Context, app string, health appspec.HealthStatus, resources []appspec.ResourceStatus, now time.Time) (int, error) {
	entries := make([]entry, 0, len(resources)+1)
	entries = append(entries, entry{AppField, string(health), "", ""})
	for _, r := range resources {
		if r.Health == "" {
			continue // a resource without health (a ConfigMap, say)
		}
		k, err := json.Marshal(r.ResourceKey)
		if err != nil {
			return 0, err
		}
		entries = append(entries, entry{r.ResourceKey.String(), string(r.Health), bound(r.HealthMessage), string(k)})
	}
	raw, err := json.Marshal(entries)
	if err != nil {
		return 0, err
	}
	digest := sha256.Sum256(raw)
	if s.unchanged(app, digest) {
		return 0, nil
	}
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	n, err := recordScript.Run(cctx, s.client, []string{stateKey(app), logKey(app)},
		now.UTC().Format(time.RFC3339Nano), s.limit, int(s.ttl/time.Second), raw).Int()
	if err != nil {
		return 0, fmt.Errorf("record health of %s: %w", app, err)
	}
	s.remember(app, digest)
	return n, nil
}

// History returns the app's transitions, newest first, at most limit of
// them (0: all that are kept).
func (s *Store) History(ctx context.Context, app string, limit int) ([]Transition, error) {
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	raw, err := s.client.LRange(cctx, logKey(app), 0, int64(limit)-1).Result()
	if err != nil {
		return nil, fmt.Errorf("health history of %s: %w", app, err)
	}
	out := make([]Transition, 0, len(raw))
	for _, r := range raw {
		var t Transition
		if err := json.Unmarshal([]byte(r), &t); err != nil {
			return nil, fmt.Errorf("health history of %s: %w", app, err)
		}
		out = append(out, t)
	}
	return out, nil
}

// Current returns the app's recorded healths by field: AppField for the
// app, ResourceKey.String() for a resource.
func (s *Store) Current(ctx context.Context, app string) (map[string]State, error) {
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	raw, err := s.client.HGetAll(cctx, stateKey(app)).Result()
	if err != nil {
		return nil, fmt.Errorf("health state of %s: %w", app, err)
	}
	out := make(map[string]State, len(raw))
	for f, v := range raw {
		var st State
		if err := json.Unmarshal([]byte(v), &st); err != nil {
			return nil, fmt.Errorf("health state of %s: %w", app, err)
		}
		out[f] = st
	}
	return out, nil
}

func (s *Store) unchanged(app string, digest [sha256.Size]byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.marks[app]
	return ok && m.digest == digest && time.Since(m.at) < unchangedFor
}

func (s *Store) remember(app string, digest [sha256.Size]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.marks) >= maxMarks {
		clear(s.marks)
	}
	s.marks[app] = mark{digest: digest, at: time.Now()}
}

func bound(msg string) string {
	if len(msg) <= maxMessage {
		return msg
	}
	return msg[:maxMessage]
}
