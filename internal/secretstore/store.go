package secretstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// ErrNotFound is returned by Get and Delete for a name that is not stored.
var ErrNotFound = errors.New("secret not found")

// Store is a store of named secrets. Names are DNS-1123 subdomain-like
// ("windlass-jwt", "repo-0a1b2c"); values are opaque bytes.
type Store interface {
	// Get returns the secret's data, or an error wrapping ErrNotFound.
	Get(ctx context.Context, name string) (map[string][]byte, error)
	// Put creates or replaces the secret.
	Put(ctx context.Context, name string, data map[string][]byte) error
	// Delete removes the secret, or returns an error wrapping ErrNotFound.
	Delete(ctx context.Context, name string) error
	// List returns the names that start with prefix, sorted.
	List(ctx context.Context, prefix string) ([]string, error)
}

// Memory is a Store in process memory. The zero value is ready to use.
type Memory struct {
	mu sync.Mutex
	m  map[string]map[string][]byte
}

var _ Store = (*Memory)(nil)

// Get implements Store.
func (s *Memory) Get(_ context.Context, name string) (map[string][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.m[name]
	if !ok {
		return nil, fmt.Errorf("secret %s: %w", name, ErrNotFound)
	}
	return clone(d), nil
}

// Put implements Store.
func (s *Memory) Put(_ context.Context, name string, data map[string][]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]map[string][]byte{}
	}
	s.m[name] = clone(data)
	return nil
}

// Delete implements Store.
func (s *Memory) Delete(_ context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[name]; !ok {
		return fmt.Errorf("secret %s: %w", name, ErrNotFound)
	}
	delete(s.m, name)
	return nil
}

// List implements Store.
func (s *Memory) List(_ context.Context, prefix string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k := range s.m {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out, nil
}

func clone(d map[string][]byte) map[string][]byte {
	out := make(map[string][]byte, len(d))
	for k, v := range maps.All(d) {
		out[k] = slices.Clone(v)
	}
	return out
}
