package render

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/testbed"
)

// memStore is an in-memory Store that records its calls.
type memStore struct {
	mu    sync.Mutex
	m     map[string][]byte
	gets  int
	ttls  []time.Duration
	fails error // returned by every call when set
}

func (s *memStore) Get(_ context.Context, key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gets++
	if s.fails != nil {
		return nil, s.fails
	}
	b, ok := s.m[key]
	if !ok {
		return nil, ErrCacheMiss
	}
	return b, nil
}

func (s *memStore) Set(_ context.Context, key string, value []byte, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fails != nil {
		return s.fails
	}
	if s.m == nil {
		s.m = map[string][]byte{}
	}
	s.m[key] = bytes.Clone(value)
	s.ttls = append(s.ttls, ttl)
	return nil
}

// dirCheckouter serves every commit from one directory.
type dirCheckouter struct{ root string }

func (d dirCheckouter) Checkout(context.Context, string, string) (string, error) { return d.root, nil }

// fixtureRequest writes a directory app and returns a request for it.
func fixtureRequest(t *testing.T, names ...string) (Checkouter, Request) {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{}
	for _, n := range names {
		files["app/"+n+".yaml"] = cm(n)
	}
	writeFiles(t, root, files)
	src := appspec.Source{RepoURL: "https://git.example/repo.git", Path: "app"}
	return dirCheckouter{root}, SingleSource("demo", "default", src, strings.Repeat("a", 40))
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestEntryEncoding(t *testing.T) {
	raw := []byte(`[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}]`)
	enc, err := encodeEntry(raw, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(enc, entryMagic2) {
		t.Fatalf("encoded entry lacks the format marker: %q", enc[:8])
	}
	count, sum, _, ok := entryInfo(enc)
	if !ok || count != 1 || sum != sha256.Sum256(raw) {
		t.Fatalf("entryInfo = %d, %x, %v; want 1 and the JSON's SHA-256", count, sum, ok)
	}
	big := bytes.Repeat(raw[:len(raw)-1], 200)
	encBig, _ := encodeEntry(big, 200)
	if len(encBig) >= len(big)/4 {
		t.Errorf("compressed %d bytes to %d, want at least 4x smaller", len(big), len(encBig))
	}
	// An entry written before the header: entryMagic and the stream.
	headerless := append(bytes.Clone(entryMagic), enc[len(entryMagic2)+1+sha256.Size:]...) // a count of 1 is one byte
	tests := []struct {
		name    string
		in      []byte
		want    []byte
		wantErr bool
	}{
		{"compressed", enc, raw, false},
		{"compressed, without a header", headerless, raw, false},
		{"plain JSON of format v1", raw, raw, false},
		{"unknown format", []byte("garbage"), nil, true},
		{"empty", nil, nil, true},
		{"truncated stream", enc[:len(enc)-6], nil, true},
		{"truncated header", enc[:len(entryMagic2)+8], nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeEntry(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("decodeEntry error = %v, want error %v", err, tt.wantErr)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("decoded (-want +got):\n%s", d)
			}
		})
	}
	if _, _, _, ok := entryInfo(headerless); ok {
		t.Errorf("entryInfo read a header from an entry without one")
	}
}

// TestEntryEncodingReuse: the pooled gzip writers and readers carry
// nothing from one entry to the next, a failed decode included.
func TestEntryEncodingReuse(t *testing.T) {
	var entries [][]byte
	for i := range 8 {
		raw := []byte(fmt.Sprintf(`[{"kind":"ConfigMap","metadata":{"name":"cm-%d"},"data":{"k":%q}}]`, i, strings.Repeat("x", i*1000)))
		enc, err := encodeEntry(raw, 1)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, raw, enc)
	}
	for i := 0; i < len(entries); i += 2 {
		raw, enc := entries[i], entries[i+1]
		if _, err := decodeEntry(enc[:len(enc)-6]); err == nil {
			t.Fatalf("entry %d: a truncated stream decoded", i/2)
		}
		got, err := decodeEntry(enc)
		if err != nil {
			t.Fatalf("entry %d: %v", i/2, err)
		}
		if !bytes.Equal(got, raw) {
			t.Errorf("entry %d decoded to %.60q…, want %.60q…", i/2, got, raw)
		}
	}
}

func TestRenderCacheRoundTrip(t *testing.T) {
	git, req := fixtureRequest(t, "a", "b")
	store := &memStore{}
	r, err := NewRenderer(Config{Store: store, Git: git, Logger: quietLogger(), CacheTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	first, err := r.Render(t.Context(), req, false)
	if err != nil {
		t.Fatal(err)
	}
	if v := store.m[first.Key]; !bytes.HasPrefix(v, entryMagic2) {
		t.Fatalf("stored value is not a compressed entry: %q", v)
	}
	if d := cmp.Diff([]time.Duration{time.Hour}, store.ttls); d != "" {
		t.Errorf("TTLs (-want +got):\n%s", d)
	}
	second, err := r.Render(t.Context(), req, false)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(first, second); d != "" {
		t.Errorf("cached ref differs from the rendered one (-first +second):\n%s", d)
	}
	objs, err := r.Load(t.Context(), second)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range objs {
		names = append(names, o.GetName())
	}
	if d := cmp.Diff([]string{"a", "b"}, names); d != "" {
		t.Errorf("loaded objects (-want +got):\n%s", d)
	}
	if d := cmp.Diff(CacheStats{Hits: 2, Misses: 1}, r.CacheStats()); d != "" {
		t.Errorf("stats (-want +got):\n%s", d)
	}
}

// TestCached: the cache alone answers, with the ref Render returns, and
// never renders: a miss and a failing cache are false.
func TestCached(t *testing.T) {
	git, req := fixtureRequest(t, "a", "b")
	tests := []struct {
		name   string
		store  Store
		render bool // Render first, which fills the cache
		hit    bool
		want   CacheStats
	}{
		{name: "miss", store: &memStore{}, want: CacheStats{Misses: 1}},
		{name: "hit after a render", store: &memStore{}, render: true, hit: true, want: CacheStats{Hits: 1, Misses: 1}},
		{name: "store errors", store: &memStore{fails: errors.New("boom")}, want: CacheStats{Misses: 1, Errors: 1}},
		{name: "corrupt entries", store: corruptStore{value: append(bytes.Clone(entryMagic), "not gzip"...)}, want: CacheStats{Misses: 1, Errors: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			co := &countingCheckouter{Checkouter: git}
			r, err := NewRenderer(Config{Store: tt.store, Git: co, Logger: quietLogger()})
			if err != nil {
				t.Fatal(err)
			}
			var rendered ManifestRef
			if tt.render {
				if rendered, err = r.Render(t.Context(), req, false); err != nil {
					t.Fatal(err)
				}
			}
			checkouts := co.n
			got, ok := r.Cached(t.Context(), req)
			if ok != tt.hit {
				t.Fatalf("Cached = %v, want %v", ok, tt.hit)
			}
			if d := cmp.Diff(rendered, got); d != "" {
				t.Errorf("Cached's ref differs from Render's (-render +cached):\n%s", d)
			}
			if co.n != checkouts {
				t.Errorf("Cached checked out %d commits, want none", co.n-checkouts)
			}
			if d := cmp.Diff(tt.want, r.CacheStats()); d != "" {
				t.Errorf("stats (-want +got):\n%s", d)
			}
		})
	}
}

// TestSharedKey: apps whose sources render as directories share the
// manifests of one path at one SHA, whatever their names and namespaces;
// a tool that reads the app's name or namespace (Kustomize, Helm,
// Jsonnet, plugins) does not share.
func TestSharedKey(t *testing.T) {
	sha := strings.Repeat("b", 40)
	tests := []struct {
		name   string
		root   string
		source appspec.Source
		shared bool
	}{
		{name: "directory (detected)", root: "testdata/bench", source: appspec.Source{RepoURL: "https://git.example/r.git", Path: "guestbook"}, shared: true},
		{name: "kustomize (detected)", root: "testdata/bench", source: appspec.Source{RepoURL: "https://git.example/r.git", Path: "kustomize-guestbook"}},
		{name: "helm (detected)", root: "testdata/bench", source: appspec.Source{RepoURL: "https://git.example/r.git", Path: "helm-guestbook"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, err := filepath.Abs(tt.root)
			if err != nil {
				t.Fatal(err)
			}
			co := &countingCheckouter{Checkouter: fixedRoot(root)}
			r, err := NewRenderer(Config{Store: NewMemoryStore(), Git: co, CacheDir: t.TempDir(), Logger: quietLogger()})
			if err != nil {
				t.Fatal(err)
			}
			first, err := r.Render(t.Context(), SingleSource("web-1", "ns-1", tt.source, sha), false)
			if err != nil {
				t.Fatal(err)
			}
			other := SingleSource("web-2", "ns-2", tt.source, sha)
			ref, ok := r.Cached(t.Context(), other)
			if ok != tt.shared {
				t.Fatalf("another app's request cached = %v, want %v", ok, tt.shared)
			}
			if !ok {
				return
			}
			if ref.Key != first.Key || ref.Digest != first.Digest || ref.Count != first.Count {
				t.Errorf("shared ref %+v, want the first app's key, digest and count (%+v)", ref, first)
			}
			if d := cmp.Diff(other, ref.Request); d != "" {
				t.Errorf("the shared ref's request is not the asking app's (-want +got):\n%s", d)
			}
			again, err := r.Render(t.Context(), other, false)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(ref, again); d != "" {
				t.Errorf("Render differs from Cached (-cached +render):\n%s", d)
			}
			if co.n != 1 {
				t.Errorf("%d checkouts, want the first app's render only", co.n)
			}
			objs, err := r.Load(t.Context(), ref)
			if err != nil || len(objs) != first.Count {
				t.Fatalf("Load of the shared ref: %d objects, %v; want %d", len(objs), err, first.Count)
			}
		})
	}
}

// countingCheckouter counts checkouts: a render does one.
type countingCheckouter struct {
	Checkouter
	n int
}

func (c *countingCheckouter) Checkout(ctx context.Context, repoURL, sha string) (string, error) {
	c.n++
	return c.Checkouter.Checkout(ctx, repoURL, sha)
}

func TestRenderCacheFailures(t *testing.T) {
	tests := []struct {
		name  string
		store func(t *testing.T) Store
		want  CacheStats
	}{
		{
			name: "redis unreachable",
			store: func(t *testing.T) Store {
				c := redis.NewClient(&redis.Options{Addr: testbed.ClosedAddr(t)})
				t.Cleanup(func() { _ = c.Close() })
				return RedisStore{Client: c}
			},
			// Render: the get fails (miss + error) and the cache is skipped
			// from then on: the set (error), Load's get (miss + error) and set (error).
			want: CacheStats{Misses: 2, Errors: 4},
		},
		{
			name:  "store errors",
			store: func(*testing.T) Store { return &memStore{fails: errors.New("boom")} },
			want:  CacheStats{Misses: 2, Errors: 4},
		},
		{
			// Render's lookup reads the request's own key and the key
			// directories share (two errors), Load the ref's key.
			name:  "corrupt entry",
			store: func(*testing.T) Store { return corruptStore{value: append(bytes.Clone(entryMagic), "not gzip"...)} },
			want:  CacheStats{Misses: 2, Errors: 3},
		},
		{
			// Render trusts the header (a hit); Load finds the manifests
			// unreadable and renders them again.
			name: "corrupt entry behind a good header",
			store: func(*testing.T) Store {
				v := append(bytes.Clone(entryMagic2), 1)
				v = append(v, make([]byte, sha256.Size)...)
				return corruptStore{value: append(v, "not gzip"...)}
			},
			want: CacheStats{Hits: 1, Misses: 1, Errors: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			git, req := fixtureRequest(t, "a")
			r, err := NewRenderer(Config{Store: tt.store(t), Git: git, Logger: quietLogger()})
			if err != nil {
				t.Fatal(err)
			}
			ref, err := r.Render(t.Context(), req, false)
			if err != nil {
				t.Fatalf("Render with a failing cache: %v", err)
			}
			if ref.Count != 1 || ref.Digest == "" {
				t.Errorf("ref = %+v, want one object and a digest", ref)
			}
			objs, err := r.Load(t.Context(), ref)
			if err != nil {
				t.Fatalf("Load with a failing cache: %v", err)
			}
			if len(objs) != 1 || objs[0].GetName() != "a" {
				t.Errorf("Load returned %d objects", len(objs))
			}
			if d := cmp.Diff(tt.want, r.CacheStats()); d != "" {
				t.Errorf("stats (-want +got):\n%s", d)
			}
		})
	}
}

// corruptStore holds an unreadable value under every key.
type corruptStore struct{ value []byte }

func (c corruptStore) Get(context.Context, string) ([]byte, error) {
	return bytes.Clone(c.value), nil
}
func (corruptStore) Set(context.Context, string, []byte, time.Duration) error { return nil }

func TestRenderHardBypassesCache(t *testing.T) {
	git, req := fixtureRequest(t, "a")
	store := &memStore{}
	r, err := NewRenderer(Config{Store: store, Git: git, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := r.Render(t.Context(), req, true); err != nil {
			t.Fatal(err)
		}
	}
	if store.gets != 0 {
		t.Errorf("hard render read the cache %d times", store.gets)
	}
	if d := cmp.Diff([]time.Duration{CacheTTL, CacheTTL}, store.ttls); d != "" {
		t.Errorf("hard render must still write the cache (-want +got):\n%s", d)
	}
	if d := cmp.Diff(CacheStats{Bypassed: 2}, r.CacheStats()); d != "" {
		t.Errorf("stats (-want +got):\n%s", d)
	}
}

// TestRedisStore runs the cache against the test bed's Redis.
func TestRedisStore(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: redisForTest(t)})
	t.Cleanup(func() { _ = c.Close() })
	git, req := fixtureRequest(t, "a", "b", "c")
	r, err := NewRenderer(Config{Store: RedisStore{Client: c}, Git: git, Logger: quietLogger(), CacheTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := r.Render(t.Context(), req, true)
	if err != nil {
		t.Fatal(err)
	}
	ttl, err := c.TTL(t.Context(), ref.Key).Result()
	if err != nil || ttl <= 0 || ttl > time.Minute {
		t.Fatalf("TTL of %s = %v, %v; want at most a minute", ref.Key, ttl, err)
	}
	hit, err := r.Render(t.Context(), req, false)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(ref, hit); d != "" {
		t.Errorf("cache hit differs (-rendered +hit):\n%s", d)
	}
	if got := r.CacheStats().Hits; got != 1 {
		t.Errorf("hits = %d, want 1", got)
	}
}

// redisForTest returns the test bed's Redis ($WINDLASS_TEST_REDIS_ADDR, as
// hack/test.sh and hack/bench.sh set it), or starts a private one for tb.
func redisForTest(tb testing.TB) string {
	tb.Helper()
	if addr := os.Getenv(testbed.EnvRedisAddr); addr != "" {
		return addr
	}
	dir := filepath.Join(tb.TempDir(), "redis")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rd, err := testbed.StartRedis(ctx, dir)
	if err != nil {
		tb.Fatalf("start redis: %v", err)
	}
	tb.Cleanup(func() { _ = rd.Stop() })
	return rd.Addr()
}
