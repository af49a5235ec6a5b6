package settings

import (
	"errors"
	"testing"

	"github.com/windlass-cd/windlass/internal/testbed"
)

// GPG keys are stored by key ID, listed sorted, found in any case and
// deleted; bad key data and bad IDs are refused.
func TestGPGKeys(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	var ids []string
	for _, name := range []string{"alice", "bob"} {
		_, pub, err := testbed.NewGPGKey(name)
		if err != nil {
			t.Fatal(err)
		}
		keys, err := s.AddGPGKeys(ctx, pub)
		if err != nil || len(keys) != 1 {
			t.Fatalf("AddGPGKeys(%s) = %v, %v", name, keys, err)
		}
		ids = append(ids, keys[0].KeyID)
	}
	list, err := s.GPGKeys(ctx)
	if err != nil || len(list) != 2 || list[0].KeyID > list[1].KeyID {
		t.Fatalf("GPGKeys = %+v, %v", list, err)
	}
	if k, err := s.GPGKey(ctx, ids[1]); err != nil || k.KeyID != ids[1] {
		t.Fatalf("GPGKey(%s) = %+v, %v", ids[1], k, err)
	}
	if _, err := s.AddGPGKeys(ctx, "not a key"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("AddGPGKeys(garbage) = %v, want ErrInvalid", err)
	}
	if err := s.DeleteGPGKey(ctx, "xyz"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("DeleteGPGKey(xyz) = %v, want ErrInvalid", err)
	}
	if err := s.DeleteGPGKey(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteGPGKey(ctx, ids[0]); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete = %v, want ErrNotFound", err)
	}
	if list, err := s.GPGKeys(ctx); err != nil || len(list) != 1 || list[0].KeyID != ids[1] {
		t.Fatalf("GPGKeys after delete = %+v, %v", list, err)
	}
}
