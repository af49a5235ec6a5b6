package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
)

// ErrSubmoduleNotAllowed is a submodule whose URL the allowed
// repositories (WithSubmodules) do not cover, or that Windlass cannot
// check out safely.
var ErrSubmoduleNotAllowed = failure.Permanent("SubmoduleNotAllowed", "submodule not allowed")

// maxSubmoduleDepth bounds submodules within submodules.
const maxSubmoduleDepth = 8

// WithSubmodules checks out Git submodules, recursively, into their
// folders, each with its own credential or else its parent's on the same
// host. Only submodules whose URL one of allowed matches (globs of
// repository URLs, "!" denies, as a project's sourceRepos) are checked
// out; another is refused. Without this option submodules stay empty
// folders.
func WithSubmodules(allowed []string) Option {
	return func(a *Activities) {
		a.submodules = &appspec.Project{SourceRepos: allowed}
	}
}

// parentRepoKey carries, in a context, the URL of the repository whose
// submodule is being fetched: its credential serves the submodule.
type parentRepoKey struct{}

func withParentRepo(ctx context.Context, repoURL string) context.Context {
	return context.WithValue(ctx, parentRepoKey{}, repoURL)
}

// parentRepo is the parent repository's URL for a credential, when
// repoURL is a submodule on the same host.
func parentRepo(ctx context.Context, repoURL string) string {
	p, _ := ctx.Value(parentRepoKey{}).(string)
	if p == "" || hostOf(p) != hostOf(repoURL) {
		return ""
	}
	return p
}

func hostOf(repoURL string) string {
	if isSSH, _, hp := sshEndpoint(repoURL); isSSH {
		return hp
	}
	if u, err := url.Parse(repoURL); err == nil {
		return strings.ToLower(u.Host)
	}
	return ""
}

// checkoutSubmodules writes the submodules of tree, a commit of repoURL
// written into dir, into their folders, and theirs in turn.
func (a *Activities) checkoutSubmodules(ctx context.Context, repoURL string, tree *object.Tree, dir string, depth int) error {
	type module struct {
		path string
		hash plumbing.Hash
	}
	var mods []module
	w := object.NewTreeWalker(tree, true, nil)
	defer w.Close()
	for {
		name, e, err := w.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read tree: %w", err)
		}
		if e.Mode == filemode.Submodule {
			mods = append(mods, module{path: name, hash: e.Hash})
		}
	}
	if len(mods) == 0 {
		return nil
	}
	at := redactURL(repoURL)
	if a.submodules == nil {
		a.log.Debug(msgSubmodulesOff, "repo", at, "submodules", len(mods))
		return nil
	}
	if depth >= maxSubmoduleDepth {
		return fmt.Errorf("%w: %s: submodules nest deeper than %d", ErrSubmoduleNotAllowed, at, maxSubmoduleDepth)
	}
	urls, err := submoduleURLs(tree)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrSubmoduleNotAllowed, at, err)
	}
	for _, m := range mods {
		raw, ok := urls[m.path]
		if !ok {
			return fmt.Errorf("%w: %s: submodule %s has no url in .gitmodules", ErrSubmoduleNotAllowed, at, m.path)
		}
		subURL, err := resolveSubmoduleURL(repoURL, raw)
		if err != nil {
			return fmt.Errorf("%w: %s: submodule %s: %w", ErrSubmoduleNotAllowed, at, m.path, err)
		}
		if err := CheckTransport(subURL); err != nil {
			return fmt.Errorf("%s: submodule %s: %w", at, m.path, err)
		}
		if !a.submodules.PermitsSource(subURL) {
			return fmt.Errorf("%w: %s: submodule %s points at %s, which the allowed repositories (--git-submodule-repos) do not cover",
				ErrSubmoduleNotAllowed, at, m.path, redactURL(subURL))
		}
		if urlKey(subURL) == urlKey(repoURL) {
			return fmt.Errorf("%w: %s: submodule %s points at its own repository", ErrSubmoduleNotAllowed, at, m.path)
		}
		target, err := submoduleDir(dir, m.path)
		if err != nil {
			return fmt.Errorf("%w: %s: submodule %s: %w", ErrSubmoduleNotAllowed, at, m.path, err)
		}
		// The credential's owner: this repository, or the parent whose
		// credential it borrowed.
		owner := repoURL
		if p := parentRepo(ctx, repoURL); p != "" {
			owner = p
		}
		if err := a.writeSubmodule(withParentRepo(ctx, owner), subURL, m.hash.String(), target, depth+1); err != nil {
			return fmt.Errorf("submodule %s: %w", m.path, err)
		}
	}
	return nil
}

// writeSubmodule writes commit sha of subURL, with its submodules, into
// dir, under subURL's fetch lock.
func (a *Activities) writeSubmodule(ctx context.Context, subURL, sha, dir string, depth int) error {
	key := urlKey(subURL)
	lock := a.locks.get(key)
	lock.fetch.Lock()
	defer lock.fetch.Unlock()
	commit, release, err := a.commitOf(ctx, subURL, key, sha)
	if err != nil {
		return err
	}
	defer release()
	tree, err := commit.Tree()
	if err != nil {
		return fmt.Errorf("read tree of %s: %w", sha, err)
	}
	if err := writeTree(tree, dir); err != nil {
		return fmt.Errorf("checkout %s@%s: %w", redactURL(subURL), sha, err)
	}
	return a.checkoutSubmodules(ctx, subURL, tree, dir, depth)
}

// submoduleDir makes the folder of a submodule at rel inside dir, through
// no symlink.
func submoduleDir(dir, rel string) (string, error) {
	name := filepath.FromSlash(rel)
	if !filepath.IsLocal(name) {
		return "", errors.New("its path leaves the checkout")
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	if err := root.MkdirAll(name, 0o755); err != nil {
		return "", err
	}
	target := filepath.Join(dir, name)
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(target); err != nil || real != filepath.Join(realDir, name) {
		return "", errors.New("its path goes through a symlink")
	}
	return target, nil
}

const msgSubmodulesOff = "submodules left empty: the worker does not check them out"

// submoduleURLs reads .gitmodules: each submodule's path and URL.
func submoduleURLs(tree *object.Tree) (map[string]string, error) {
	f, err := tree.File(".gitmodules")
	if err != nil {
		return nil, fmt.Errorf("the tree has submodules and no .gitmodules: %w", err)
	}
	s, err := f.Contents()
	if err != nil {
		return nil, err
	}
	m := config.NewModules()
	if err := m.Unmarshal([]byte(s)); err != nil {
		return nil, fmt.Errorf(".gitmodules: %w", err)
	}
	out := map[string]string{}
	for _, sub := range m.Submodules {
		out[path.Clean(sub.Path)] = sub.URL
	}
	return out, nil
}

// resolveSubmoduleURL resolves a URL of .gitmodules, which may be
// relative to the parent's as to a folder ("../lib.git" beside it), as
// git does.
func resolveSubmoduleURL(parent, raw string) (string, error) {
	if !strings.HasPrefix(raw, "./") && !strings.HasPrefix(raw, "../") {
		return raw, nil
	}
	join := func(p string) (string, error) {
		j := path.Join(strings.Trim(p, "/"), raw)
		if j == "." || j == ".." || strings.HasPrefix(j, "../") {
			return "", fmt.Errorf("%q climbs out of the parent's host", raw)
		}
		return j, nil
	}
	if isSSH, _, _ := sshEndpoint(parent); isSSH && !strings.Contains(parent, "://") {
		// scp-like user@host:path.
		host, p, _ := strings.Cut(parent, ":")
		j, err := join(p)
		return host + ":" + j, err
	}
	u, err := url.Parse(strings.TrimSuffix(parent, "/"))
	if err != nil {
		return "", fmt.Errorf("resolve %q against the parent's URL: %w", raw, err)
	}
	j, err := join(u.Path)
	if err != nil {
		return "", err
	}
	u.Path = "/" + j
	return u.String(), nil
}
