package source

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// EvictResult says what Evict did.
type EvictResult struct {
	// Removed and FreedBytes count the checkouts removed and their size.
	Removed    int   `json:"removed"`
	FreedBytes int64 `json:"freedBytes"`
	// KeptBytes is the size of the checkouts left.
	KeptBytes int64 `json:"keptBytes"`
}

const msgEvicted = "git checkouts evicted"

// Evict removes checkouts, least recently used first: those unused for
// longer than maxAge (no age limit when maxAge <= 0), then as many more as
// needed to bring the total size within maxBytes (no size limit when
// maxBytes < 0). A checkout used within the tree grace (WithTreeGrace) is
// never removed, whatever the budget: a renderer may still be reading it.
// Mirrors are kept. Leftovers of interrupted checkouts are removed once
// older than the grace.
func (a *Activities) Evict(ctx context.Context, maxBytes int64, maxAge time.Duration) (EvictResult, error) {
	var res EvictResult
	treesDir := filepath.Join(a.cacheDir, "trees")
	entries, err := os.ReadDir(treesDir)
	if err != nil {
		return res, fmt.Errorf("evict: %w", err)
	}
	type tree struct {
		name, key string
		used      time.Time
		size      int64
	}
	var (
		trees []tree
		total int64
		now   = time.Now()
	)
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		info, err := e.Info()
		if err != nil || !e.IsDir() {
			continue
		}
		name := e.Name()
		if strings.HasPrefix(name, tmpPrefix) {
			if now.Sub(info.ModTime()) > a.treeGrace {
				_ = os.RemoveAll(filepath.Join(treesDir, name))
			}
			continue
		}
		key, _, ok := strings.Cut(name, "-")
		if !ok {
			continue
		}
		size, err := a.sizes.of(filepath.Join(treesDir, name))
		if err != nil {
			continue
		}
		trees = append(trees, tree{name: name, key: key, used: info.ModTime(), size: size})
		total += size
	}
	sort.Slice(trees, func(i, j int) bool { return trees[i].used.Before(trees[j].used) })
	var errs []error
	for _, t := range trees {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		expired := maxAge > 0 && now.Sub(t.used) > maxAge
		over := maxBytes >= 0 && total > maxBytes
		if !expired && !over {
			break // the rest were used more recently
		}
		removed, err := a.removeTree(treesDir, t.name, t.key)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !removed {
			continue // used since it was listed
		}
		res.Removed++
		res.FreedBytes += t.size
		total -= t.size
	}
	res.KeptBytes = total
	if res.Removed > 0 {
		a.log.Info(msgEvicted, "removed", res.Removed, "freed_bytes", res.FreedBytes, "kept_bytes", res.KeptBytes)
	}
	return res, errors.Join(errs...)
}

// removeTree removes one checkout unless it was used within the grace. It
// holds the repository's use lock while it checks and moves the checkout
// away, so that Checkout never hands out a checkout being removed.
func (a *Activities) removeTree(treesDir, name, key string) (bool, error) {
	lock := a.locks.get(key)
	dir := filepath.Join(treesDir, name)
	lock.use.Lock()
	info, err := os.Stat(dir)
	if err != nil || time.Since(info.ModTime()) < a.treeGrace {
		lock.use.Unlock()
		return errors.Is(err, fs.ErrNotExist), nil // gone already, or in use
	}
	trash, err := os.MkdirTemp(treesDir, tmpPrefix+"evict-")
	if err == nil {
		err = os.Rename(dir, filepath.Join(trash, name))
	}
	if err == nil {
		// Under the lock: a checkout written again after it keeps its list.
		_ = os.Remove(dir + submoduleListExt)
	}
	lock.use.Unlock()
	a.sizes.forget(dir)
	if trash != "" {
		if rerr := os.RemoveAll(trash); err == nil {
			err = rerr
		}
	}
	if err != nil {
		return false, fmt.Errorf("evict %s: %w", name, err)
	}
	return true, nil
}

// treeSizes remembers the size of each checkout: checkouts never change.
type treeSizes struct {
	mu sync.Mutex
	m  map[string]int64
}

func (s *treeSizes) of(dir string) (int64, error) {
	s.mu.Lock()
	n, ok := s.m[dir]
	s.mu.Unlock()
	if ok {
		return n, nil
	}
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		n += info.Size()
		return nil
	})
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]int64{}
	}
	s.m[dir] = n
	return n, nil
}

func (s *treeSizes) forget(dir string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, dir)
}
