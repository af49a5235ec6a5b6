package render

import (
	"errors"
	"testing"
)

func TestCacheReader(t *testing.T) {
	git, req := fixtureRequest(t, "a", "b")
	store := &memStore{}
	r, err := NewRenderer(Config{Store: store, Git: git, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := r.Render(t.Context(), req, false)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		store   Store
		ref     ManifestRef
		want    int
		wantErr error
	}{
		{name: "cached", store: store, ref: ref, want: 2},
		{name: "evicted", store: &memStore{}, ref: ref, wantErr: ErrCacheMiss},
		{name: "unreadable entry", store: &memStore{m: map[string][]byte{ref.Key: []byte("junk")}}, ref: ref, wantErr: errBadEntry},
		{name: "store down", store: &memStore{fails: errBoom}, ref: ref, wantErr: errBoom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := CacheReader{Store: tt.store}.Load(t.Context(), tt.ref)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if len(objs) != tt.want {
				t.Fatalf("loaded %d objects, want %d", len(objs), tt.want)
			}
		})
	}
}

var errBoom = errors.New("boom")
