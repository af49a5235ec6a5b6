package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// repoLocks hands out one mutex per repository mirror.
type repoLocks struct {
	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

func (l *repoLocks) get(key string) *sync.Mutex {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.locks == nil {
		l.locks = map[string]*sync.Mutex{}
	}
	m, ok := l.locks[key]
	if !ok {
		m = &sync.Mutex{}
		l.locks[key] = m
	}
	return m
}

func urlKey(repoURL string) string {
	sum := sha256.Sum256([]byte(repoURL))
	return hex.EncodeToString(sum[:12])
}

// Checkout returns a directory holding the tree of commit sha of repoURL.
// The directory is shared and must be treated as read-only. It fetches into
// the repository's bare mirror only when the commit is not there yet.
func (a *Activities) Checkout(ctx context.Context, repoURL, sha string) (string, error) {
	if !fullSHA.MatchString(sha) {
		return "", fmt.Errorf("%w: %q is not a full commit SHA", ErrRevisionNotFound, sha)
	}
	key := urlKey(repoURL)
	dir := filepath.Join(a.cacheDir, "trees", key+"-"+sha)
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}
	lock := a.locks.get(key)
	lock.Lock()
	defer lock.Unlock()
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}
	repo, err := a.mirror(ctx, repoURL, key, sha)
	if err != nil {
		return "", err
	}
	commit, err := repo.CommitObject(plumbing.NewHash(sha))
	if err != nil {
		return "", fmt.Errorf("%w: commit %s in %s: %w", ErrRevisionNotFound, sha, repoURL, err)
	}
	tree, err := commit.Tree()
	if err != nil {
		return "", fmt.Errorf("read tree of %s: %w", sha, err)
	}
	tmp, err := os.MkdirTemp(filepath.Join(a.cacheDir, "trees"), ".tmp-")
	if err != nil {
		return "", fmt.Errorf("checkout %s: %w", sha, err)
	}
	if err := writeTree(tree, tmp); err != nil {
		_ = os.RemoveAll(tmp)
		return "", fmt.Errorf("checkout %s@%s: %w", repoURL, sha, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		_ = os.RemoveAll(tmp)
		return "", fmt.Errorf("checkout %s: %w", sha, err)
	}
	return dir, nil
}

// mirror opens (or creates) the bare mirror of repoURL and makes sure it has
// commit sha, fetching when it does not.
func (a *Activities) mirror(ctx context.Context, repoURL, key, sha string) (*git.Repository, error) {
	path := filepath.Join(a.cacheDir, "mirrors", key)
	repo, err := git.PlainOpen(path)
	if errors.Is(err, git.ErrRepositoryNotExists) {
		repo, err = git.PlainInit(path, true)
		if err == nil {
			_, err = repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{repoURL}})
		}
	}
	if err != nil {
		return nil, fmt.Errorf("open mirror of %s: %w", repoURL, err)
	}
	if _, err := repo.CommitObject(plumbing.NewHash(sha)); err == nil {
		return repo, nil
	}
	auth, err := a.creds.Auth(ctx, repoURL)
	if err != nil {
		return nil, err
	}
	err = repo.FetchContext(ctx, &git.FetchOptions{
		RemoteName: "origin",
		RefSpecs:   []config.RefSpec{"+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"},
		Auth:       auth,
		Tags:       git.NoTags,
		Force:      true,
	})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return nil, classify(repoURL, fmt.Errorf("fetch: %w", err))
	}
	return repo, nil
}

// writeTree writes the files of tree below dir. Symlinks are written as
// links only when they stay inside dir; submodules are skipped.
func writeTree(tree *object.Tree, dir string) error {
	return tree.Files().ForEach(func(f *object.File) error {
		target := filepath.Join(dir, filepath.FromSlash(f.Name))
		if !strings.HasPrefix(target, dir+string(os.PathSeparator)) {
			return fmt.Errorf("tree entry %q leaves the checkout", f.Name)
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		switch f.Mode {
		case filemode.Symlink:
			link, err := f.Contents()
			if err != nil {
				return err
			}
			resolved := filepath.Join(filepath.Dir(target), link)
			if filepath.IsAbs(link) || !strings.HasPrefix(resolved, dir+string(os.PathSeparator)) {
				return nil // a link out of the repository is dropped
			}
			return os.Symlink(link, target)
		case filemode.Submodule:
			return nil
		}
		r, err := f.Reader()
		if err != nil {
			return err
		}
		defer r.Close()
		perm := os.FileMode(0o644)
		if f.Mode == filemode.Executable {
			perm = 0o755
		}
		w, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
		if err != nil {
			return err
		}
		if _, err := io.Copy(w, r); err != nil {
			_ = w.Close()
			return err
		}
		return w.Close()
	})
}
