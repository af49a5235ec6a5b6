package source

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-cmp/cmp"
)

func TestEvict(t *testing.T) {
	srv := gitServer(t)
	url, w := fixtureRepo(t, srv, "evict.git", nil)
	shas := make([]string, 3)
	for i := range shas {
		shas[i] = commit(t, w, "c", map[string]string{"app/cm.yaml": strings.Repeat("x", 1000*(i+1)) + "\n"})
	}
	a := newActivities(t, nil, WithTreeGrace(10*time.Minute))
	trees := make([]string, 3)
	checkout := func(i int) {
		t.Helper()
		dir, err := a.Checkout(t.Context(), url, shas[i])
		if err != nil {
			t.Fatal(err)
		}
		trees[i] = dir
	}
	for i := range shas {
		checkout(i)
	}
	age := func(i int, d time.Duration) {
		t.Helper()
		when := time.Now().Add(-d)
		if err := os.Chtimes(trees[i], when, when); err != nil {
			t.Fatal(err)
		}
	}
	exists := func() (got []bool) {
		for _, dir := range trees {
			_, err := os.Stat(dir)
			got = append(got, err == nil)
		}
		return got
	}
	size := func(i int) int64 {
		n, err := a.sizes.of(trees[i])
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	evict := func(maxBytes int64, maxAge time.Duration, wantRemoved int, want []bool) EvictResult {
		t.Helper()
		res, err := a.Evict(t.Context(), maxBytes, maxAge)
		if err != nil {
			t.Fatal(err)
		}
		if res.Removed != wantRemoved {
			t.Errorf("Evict(%d, %v) removed %d, want %d", maxBytes, maxAge, res.Removed, wantRemoved)
		}
		if d := cmp.Diff(want, exists()); d != "" {
			t.Errorf("trees left (-want +got):\n%s", d)
		}
		return res
	}

	// By age: only the tree unused for longer than maxAge goes.
	age(0, 48*time.Hour)
	age(1, 2*time.Hour)
	evict(-1, 24*time.Hour, 1, []bool{false, true, true})

	// By size, with nothing allowed: all but the tree within the grace go.
	res := evict(0, 0, 1, []bool{false, false, true})
	if res.KeptBytes != size(2) || res.FreedBytes <= 0 {
		t.Errorf("result %+v, want %d bytes kept", res, size(2))
	}

	// The mirror stays: evicted trees come back without the server.
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	checkout(0)
	checkout(1)

	// By size: least recently used first, until the rest fits.
	age(0, 3*time.Hour)
	age(1, 2*time.Hour)
	age(2, time.Hour)
	evict(size(1)+size(2), 0, 1, []bool{false, true, true})

	// A Checkout hit marks the tree used, which protects it.
	age(1, 5*time.Hour)
	age(2, 5*time.Hour)
	checkout(2)
	evict(0, time.Hour, 1, []bool{false, false, true})

	// Leftovers of an interrupted checkout go once older than the grace.
	stale := filepath.Join(a.cacheDir, "trees", tmpPrefix+"stale")
	fresh := filepath.Join(a.cacheDir, "trees", tmpPrefix+"fresh")
	for _, d := range []string{stale, fresh} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	evict(-1, 0, 0, []bool{false, false, true})
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale leftover kept: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("fresh leftover removed: %v", err)
	}
}

// TestEvictWhileCheckingOut runs Evict with no grace against concurrent
// checkouts of the same trees: every Checkout must succeed.
func TestEvictWhileCheckingOut(t *testing.T) {
	srv := gitServer(t)
	url, w := fixtureRepo(t, srv, "race.git", nil)
	sha := commit(t, w, "c", map[string]string{"a/b/c.yaml": "x: 1\n", "d.yaml": "y: 2\n"})
	a := newActivities(t, nil, WithTreeGrace(0))
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for range 3 {
		wg.Go(func() {
			for range 15 {
				if _, err := a.Checkout(t.Context(), url, sha); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Go(func() {
		for range 30 {
			if _, err := a.Evict(t.Context(), 0, 0); err != nil {
				errs <- err
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestCommitWithPrefix finds two commits sharing a 7-digit prefix and
// checks that the prefix is ambiguous and a longer one is not.
func TestCommitWithPrefix(t *testing.T) {
	repo, err := git.PlainInit(t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	emptyTree := &plumbing.MemoryObject{}
	if err := (&object.Tree{}).Encode(emptyTree); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Storer.SetEncodedObject(emptyTree); err != nil {
		t.Fatal(err)
	}
	sig := object.Signature{Name: "t", Email: "t@windlass.invalid", When: time.Unix(1e9, 0)}
	encode := func(i int) *plumbing.MemoryObject {
		c := &object.Commit{Author: sig, Committer: sig, TreeHash: emptyTree.Hash(), Message: strings.Repeat("m", i%7) + string(rune('0'+i%10)) + time.Duration(i).String()}
		o := &plumbing.MemoryObject{}
		if err := c.Encode(o); err != nil {
			t.Fatal(err)
		}
		return o
	}
	seen := map[string]int{}
	var pair [2]*plumbing.MemoryObject
	for i := 0; pair[0] == nil; i++ {
		if i > 1<<20 {
			t.Fatal("no prefix collision found")
		}
		o := encode(i)
		p := o.Hash().String()[:7]
		if j, ok := seen[p]; ok {
			pair = [2]*plumbing.MemoryObject{encode(j), o}
			break
		}
		seen[p] = i
	}
	for _, o := range pair {
		if _, err := repo.Storer.SetEncodedObject(o); err != nil {
			t.Fatal(err)
		}
	}
	a, b := pair[0].Hash().String(), pair[1].Hash().String()
	if _, err := commitWithPrefix(repo, a[:7]); !errors.Is(err, ErrAmbiguousRevision) {
		t.Errorf("shared prefix %s: %v, want ambiguous", a[:7], err)
	}
	n := 8
	for a[:n] == b[:n] {
		n++
	}
	for _, h := range []string{a, b} {
		if got, err := commitWithPrefix(repo, h[:n]); err != nil || got != h {
			t.Errorf("prefix %s: %s, %v; want %s", h[:n], got, err, h)
		}
	}
	// The empty tree is no commit.
	if _, err := commitWithPrefix(repo, emptyTree.Hash().String()[:9]); !errors.Is(err, ErrRevisionNotFound) {
		t.Errorf("tree prefix: %v, want not found", err)
	}
}
