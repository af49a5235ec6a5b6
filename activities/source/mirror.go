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
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/windlass-cd/windlass/internal/appspec"
)

// repoLock guards one repository's mirror and checkouts. fetch serialises
// the mirror's fetches and the checkouts written from it; use is held
// shared while a checkout is looked up and marked used, and exclusively by
// Evict while it removes one.
type repoLock struct {
	fetch sync.Mutex
	use   sync.RWMutex
}

// repoLocks hands out one repoLock per repository.
type repoLocks struct {
	mu    sync.Mutex
	locks map[string]*repoLock
}

func (l *repoLocks) get(key string) *repoLock {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.locks == nil {
		l.locks = map[string]*repoLock{}
	}
	m, ok := l.locks[key]
	if !ok {
		m = &repoLock{}
		l.locks[key] = m
	}
	return m
}

// urlKey names a repository's mirror and checkouts: a hash, so that no
// path holds a credential of the URL.
func urlKey(repoURL string) string {
	sum := sha256.Sum256([]byte(repoURL))
	return hex.EncodeToString(sum[:12])
}

// Checkout returns a directory holding the tree of commit sha of repoURL.
// The directory is shared and must be treated as read-only. It fetches into
// the repository's bare mirror only when the commit is not there yet. Each
// call marks the checkout used (its modification time), which protects it
// from Evict for the tree grace.
func (a *Activities) Checkout(ctx context.Context, repoURL, sha string) (string, error) {
	return a.CheckoutIn(ctx, repoURL, sha, nil)
}

// CheckoutIn is Checkout for an app of project proj: each Git submodule
// of the checkout, at any depth, must also be one of the project's
// sourceRepos, or the checkout fails with ErrSubmoduleNotAllowed naming
// the submodule and the project. A new checkout checks before it fetches
// a submodule; an existing one is checked against the submodules it
// recorded. A nil proj checks nothing beyond WithSubmodules.
func (a *Activities) CheckoutIn(ctx context.Context, repoURL, sha string, proj *appspec.Project) (string, error) {
	if IsOCI(repoURL) {
		var dir string
		err := a.retryRefused(ctx, repoURL, func() (err error) {
			dir, err = a.checkoutOCI(ctx, repoURL, sha)
			return err
		})
		return dir, err
	}
	if !fullSHA.MatchString(sha) {
		return "", fmt.Errorf("%w: %q is not a full commit SHA", ErrRevisionNotFound, sha)
	}
	key := urlKey(repoURL)
	dir, err := a.checkoutDir(key, sha, func(mkdir func() (string, error)) error {
		commit, release, err := a.commitOf(ctx, repoURL, key, sha)
		if err != nil {
			return err
		}
		defer release()
		a.commits.put(key+sha, commit)
		tree, err := commit.Tree()
		if err != nil {
			return fmt.Errorf("read tree of %s: %w", sha, err)
		}
		tmp, err := mkdir()
		if err != nil {
			return err
		}
		if err := writeTree(tree, tmp); err != nil {
			return fmt.Errorf("checkout %s@%s: %w", redactURL(repoURL), sha, err)
		}
		var mods []submodule
		if err := a.checkoutSubmodules(ctx, subWalk{repoURL: repoURL, tree: tree, dir: tmp, proj: proj, found: &mods}); err != nil {
			return err
		}
		return writeSubmoduleList(a.submoduleList(key, sha), mods)
	})
	if err != nil {
		return "", err
	}
	if proj != nil {
		if err := a.checkRecordedSubmodules(repoURL, key, sha, proj); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// commitOf reads commit sha from repoURL's mirror, fetching it when it is
// not there; release frees what the fetch used. The caller holds the
// repository's fetch lock.
func (a *Activities) commitOf(ctx context.Context, repoURL, key, sha string) (*object.Commit, func(), error) {
	repo, err := a.openMirror(repoURL, key)
	if err != nil {
		return nil, nil, err
	}
	if c, err := repo.CommitObject(plumbing.NewHash(sha)); err == nil {
		return c, func() {}, nil
	}
	return a.fetchCommit(ctx, repo, repoURL, sha)
}

// checkoutDir returns the checkout trees/<key>-<name>, filling it with
// fill the first time, under the repository's fetch lock: fill makes a
// fresh folder with mkdir once it has what to write (so that Evict does
// not take it for an abandoned one during a long fetch) and writes into
// it; the folder becomes the checkout only when fill succeeds.
func (a *Activities) checkoutDir(key, name string, fill func(mkdir func() (string, error)) error) (string, error) {
	dir := filepath.Join(a.cacheDir, "trees", key+"-"+name)
	lock := a.locks.get(key)
	if markUsed(lock, dir) {
		return dir, nil
	}
	lock.fetch.Lock()
	defer lock.fetch.Unlock()
	if markUsed(lock, dir) {
		return dir, nil
	}
	tmp := ""
	mkdir := func() (string, error) {
		var err error
		tmp, err = os.MkdirTemp(filepath.Join(a.cacheDir, "trees"), tmpPrefix)
		if err != nil {
			return "", fmt.Errorf("checkout %s: %w", name, err)
		}
		return tmp, nil
	}
	err := fill(mkdir)
	if err == nil && tmp == "" {
		err = fmt.Errorf("checkout %s: nothing written", name)
	}
	if err == nil {
		err = os.Rename(tmp, dir)
	}
	if err != nil {
		if tmp != "" {
			_ = os.RemoveAll(tmp)
		}
		return "", err
	}
	markUsed(lock, dir)
	return dir, nil
}

// tmpPrefix starts the names of checkouts being written or removed.
const tmpPrefix = ".tmp-"

// markUsed sets dir's modification time to now and reports whether dir
// exists. It holds the repository's use lock, so that Evict, which checks
// the time under the same lock, never removes a checkout being handed out.
func markUsed(lock *repoLock, dir string) bool {
	lock.use.RLock()
	defer lock.use.RUnlock()
	now := time.Now()
	return os.Chtimes(dir, now, now) == nil
}

// openMirror opens (or creates) the bare mirror of repoURL. The caller holds
// the repository's fetch lock.
func (a *Activities) openMirror(repoURL, key string) (*git.Repository, error) {
	path := filepath.Join(a.cacheDir, "mirrors", key)
	repo, err := git.PlainOpen(path)
	if errors.Is(err, git.ErrRepositoryNotExists) {
		repo, err = git.PlainInit(path, true)
		if err == nil {
			_, err = repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{repoURL}})
		}
	}
	if err != nil {
		return nil, fmt.Errorf("open mirror of %s: %w", redactURL(repoURL), err)
	}
	return repo, nil
}

// lockedMirror opens repoURL's mirror under its fetch lock, which unlock
// releases.
func (a *Activities) lockedMirror(repoURL string) (_ *git.Repository, unlock func(), _ error) {
	key := urlKey(repoURL)
	lock := a.locks.get(key)
	lock.fetch.Lock()
	repo, err := a.openMirror(repoURL, key)
	if err != nil {
		lock.fetch.Unlock()
		return nil, nil, err
	}
	return repo, lock.fetch.Unlock, nil
}

// fetch brings the mirror's branches and tags up to date. The caller holds
// the repository's fetch lock.
func (a *Activities) fetch(ctx context.Context, repo *git.Repository, repoURL string) error {
	if err := CheckTransport(repoURL); err != nil {
		return err
	}
	return a.retryRefused(ctx, repoURL, func() error { return a.fetchOnce(ctx, repo, repoURL) })
}

func (a *Activities) fetchOnce(ctx context.Context, repo *git.Repository, repoURL string) error {
	auth, err := a.creds.Auth(ctx, repoURL)
	if err != nil {
		return err
	}
	o, err := a.transportOptions(ctx, repoURL)
	if err != nil {
		return err
	}
	err = repo.FetchContext(netContext(ctx, a.netTimeout), &git.FetchOptions{
		RemoteName: "origin",
		RefSpecs:   []config.RefSpec{"+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"},
		Auth:       auth,
		Tags:       git.NoTags,
		Force:      true,
		// Progress keeps a server that prepares a large pack talking, so
		// that the read deadline measures silence, not work.
		Progress:     io.Discard,
		ProxyOptions: netOptions(repoURL, a.netTimeout, o.Proxy),
		CABundle:     o.CABundle, ClientCert: o.ClientCert, ClientKey: o.ClientKey, InsecureSkipTLS: o.InsecureSkipTLS,
	})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return classify(repoURL, fmt.Errorf("fetch: %w", err))
	}
	return nil
}

// resolveShortSHA expands an abbreviated commit SHA against the mirror,
// fetching first when the mirror has no commit with that prefix.
func (a *Activities) resolveShortSHA(ctx context.Context, repoURL, rev string) (string, error) {
	prefix := strings.ToLower(strings.TrimSpace(rev))
	repo, unlock, err := a.lockedMirror(repoURL)
	if err != nil {
		return "", err
	}
	defer unlock()
	sha, err := commitWithPrefix(repo, prefix)
	if errors.Is(err, ErrRevisionNotFound) {
		if err := a.fetch(ctx, repo, repoURL); err != nil {
			return "", err
		}
		sha, err = commitWithPrefix(repo, prefix)
	}
	return sha, err
}

// commitWithPrefix finds the one commit of repo whose SHA starts with the
// lower-case hex prefix.
func commitWithPrefix(repo *git.Repository, prefix string) (string, error) {
	lookup, ok := repo.Storer.(interface {
		HashesWithPrefix(prefix []byte) ([]plumbing.Hash, error)
	})
	if !ok {
		return "", errors.New("the mirror's storage cannot look up abbreviated SHAs")
	}
	b, err := hex.DecodeString(prefix[:len(prefix)&^1])
	if err != nil {
		return "", fmt.Errorf("%w: %q is not hexadecimal", ErrRevisionNotFound, prefix)
	}
	hashes, err := lookup.HashesWithPrefix(b)
	if err != nil {
		return "", fmt.Errorf("look up %s in the mirror: %w", prefix, err)
	}
	found := map[string]bool{}
	for _, h := range hashes {
		s := h.String()
		if !strings.HasPrefix(s, prefix) || found[s] {
			continue
		}
		if _, err := repo.CommitObject(h); err == nil { // trees, blobs and tags do not count
			found[s] = true
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("%w: no commit starts with %s", ErrRevisionNotFound, prefix)
	case 1:
		for s := range found {
			return s, nil
		}
	}
	return "", fmt.Errorf("%w: %d commits start with %s, give more digits", ErrAmbiguousRevision, len(found), prefix)
}

// writeTree writes the files of tree below dir, symlinks as they are:
// the renderers refuse, naming it, a read that a link leads out of dir
// (dropping the link would make an app render without its file). Writes
// go through an os.Root, so that no link can redirect them out of dir.
// Submodules are skipped.
func writeTree(tree *object.Tree, dir string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	return tree.Files().ForEach(func(f *object.File) error {
		target := filepath.Join(dir, filepath.FromSlash(f.Name))
		if !strings.HasPrefix(target, dir+string(os.PathSeparator)) {
			return fmt.Errorf("tree entry %q leaves the checkout", f.Name)
		}
		name := filepath.FromSlash(f.Name)
		if err := root.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			return err
		}
		switch f.Mode {
		case filemode.Symlink:
			link, err := f.Contents()
			if err != nil {
				return err
			}
			return root.Symlink(link, name)
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
		w, err := root.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
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
