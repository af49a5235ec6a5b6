package render

import (
	"errors"
	"testing"
	"time"
)

func TestMemoryStore(t *testing.T) {
	var s MemoryStore // the zero value is usable
	if _, err := s.Get(t.Context(), "k"); !errors.Is(err, ErrCacheMiss) {
		t.Fatalf("Get(missing) = %v, want ErrCacheMiss", err)
	}
	v := []byte("value")
	if err := s.Set(t.Context(), "k", v, 0); err != nil {
		t.Fatal(err)
	}
	v[0] = 'X' // the store keeps its own copy
	got, err := s.Get(t.Context(), "k")
	if err != nil || string(got) != "value" {
		t.Fatalf("Get = %q, %v", got, err)
	}
	if err := s.Set(t.Context(), "short", v, time.Nanosecond); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Second)
	for {
		if _, err := s.Get(t.Context(), "short"); errors.Is(err, ErrCacheMiss) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("entry did not expire")
		}
	}
}
