package render

import (
	"context"
	"sync"
	"time"
)

// MemoryStore is a Store in process memory, for one-shot renders (the
// render CLI) and tests. Entries expire after their TTL; nothing else
// evicts them. The zero value is ready to use.
type MemoryStore struct {
	mu      sync.Mutex
	entries map[string]memoryEntry
}

type memoryEntry struct {
	value   []byte
	expires time.Time
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty store.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{entries: map[string]memoryEntry{}}
}

// Get returns a copy of the value of key, or ErrCacheMiss.
func (s *MemoryStore) Get(_ context.Context, key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[key]
	if !ok || (!e.expires.IsZero() && time.Now().After(e.expires)) {
		delete(s.entries, key)
		return nil, ErrCacheMiss
	}
	return append([]byte(nil), e.value...), nil
}

// Set stores a copy of value under key for ttl (0: no expiry).
func (s *MemoryStore) Set(_ context.Context, key string, value []byte, ttl time.Duration) error {
	e := memoryEntry{value: append([]byte(nil), value...)}
	if ttl > 0 {
		e.expires = time.Now().Add(ttl)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.entries == nil {
		s.entries = map[string]memoryEntry{}
	}
	s.entries[key] = e
	return nil
}
