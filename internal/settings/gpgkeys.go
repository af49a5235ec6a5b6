package settings

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/windlass-cd/windlass/internal/gpgkey"
	"github.com/windlass-cd/windlass/internal/secretstore"
)

// GPG public keys (Argo CD's gpgkeys) are stored one per key ID; projects
// name them in signatureKeys.

const prefixGPGKey = "windlass-gpgkey-"

// AddGPGKeys parses armored (one or more public keys) and stores each
// key, replacing a key of the same ID. It returns the keys stored.
func (s *Store) AddGPGKeys(ctx context.Context, armored string) ([]gpgkey.Key, error) {
	keys, err := gpgkey.Parse(armored)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	for _, k := range keys {
		if err := s.s.Put(ctx, prefixGPGKey+strings.ToLower(k.KeyID), map[string][]byte{"keyData": []byte(k.KeyData)}); err != nil {
			return nil, fmt.Errorf("store GPG key %s: %w", k.KeyID, err)
		}
	}
	return keys, nil
}

// GPGKey returns the stored key of id.
func (s *Store) GPGKey(ctx context.Context, id string) (gpgkey.Key, error) {
	id, err := gpgkey.NormalizeID(id)
	if err != nil {
		return gpgkey.Key{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return s.loadGPGKey(ctx, prefixGPGKey+strings.ToLower(id))
}

func (s *Store) loadGPGKey(ctx context.Context, name string) (gpgkey.Key, error) {
	id := strings.ToUpper(strings.TrimPrefix(name, prefixGPGKey))
	d, err := s.s.Get(ctx, name)
	if errors.Is(err, secretstore.ErrNotFound) {
		return gpgkey.Key{}, fmt.Errorf("GPG key %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return gpgkey.Key{}, fmt.Errorf("load GPG key %s: %w", id, err)
	}
	keys, err := gpgkey.Parse(string(d["keyData"]))
	if err != nil || len(keys) != 1 {
		return gpgkey.Key{}, fmt.Errorf("stored GPG key %s does not parse: %w", id, err)
	}
	return keys[0], nil
}

// GPGKeys lists the stored keys, sorted by key ID.
func (s *Store) GPGKeys(ctx context.Context) ([]gpgkey.Key, error) {
	names, err := s.s.List(ctx, prefixGPGKey)
	if err != nil {
		return nil, fmt.Errorf("list GPG keys: %w", err)
	}
	slices.Sort(names)
	out := make([]gpgkey.Key, 0, len(names))
	for _, n := range names {
		k, err := s.loadGPGKey(ctx, n)
		if errors.Is(err, ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, nil
}

// DeleteGPGKey forgets the key of id.
func (s *Store) DeleteGPGKey(ctx context.Context, id string) error {
	id, err := gpgkey.NormalizeID(id)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	err = s.s.Delete(ctx, prefixGPGKey+strings.ToLower(id))
	if errors.Is(err, secretstore.ErrNotFound) {
		return fmt.Errorf("GPG key %s: %w", id, ErrNotFound)
	}
	return err
}
