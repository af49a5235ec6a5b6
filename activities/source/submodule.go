package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
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

// submodule is one submodule written into a checkout: its path from the
// checkout's root and its resolved URL.
type submodule struct {
	Path string `json:"path"`
	URL  string `json:"url"`
}

// subWalk is a tree whose submodules checkoutSubmodules writes.
type subWalk struct {
	repoURL string
	tree    *object.Tree
	// dir is where tree was written; prefix is its path from the
	// checkout's root.
	dir, prefix string
	depth       int
	// proj, when set, must allow every submodule (CheckoutIn).
	proj *appspec.Project
	// found collects the submodules written.
	found *[]submodule
}

// checkoutSubmodules writes the submodules of w.tree, a commit of
// w.repoURL written into w.dir, into their folders, and theirs in turn.
func (a *Activities) checkoutSubmodules(ctx context.Context, w subWalk) error {
	type module struct {
		path string
		hash plumbing.Hash
	}
	var mods []module
	tw := object.NewTreeWalker(w.tree, true, nil)
	defer tw.Close()
	for {
		name, e, err := tw.Next()
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
	repoURL := w.repoURL
	at := redactURL(repoURL)
	if a.submodules == nil {
		a.log.Debug(msgSubmodulesOff, "repo", at, "submodules", len(mods))
		return nil
	}
	if w.depth >= maxSubmoduleDepth {
		return fmt.Errorf("%w: %s: submodules nest deeper than %d", ErrSubmoduleNotAllowed, at, maxSubmoduleDepth)
	}
	urls, err := submoduleURLs(w.tree)
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
		if err := permittedIn(w.proj, path.Join(w.prefix, m.path), subURL); err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
		if urlKey(subURL) == urlKey(repoURL) {
			return fmt.Errorf("%w: %s: submodule %s points at its own repository", ErrSubmoduleNotAllowed, at, m.path)
		}
		target, err := submoduleDir(w.dir, m.path)
		if err != nil {
			return fmt.Errorf("%w: %s: submodule %s: %w", ErrSubmoduleNotAllowed, at, m.path, err)
		}
		// The credential's owner: this repository, or the parent whose
		// credential it borrowed.
		owner := repoURL
		if p := parentRepo(ctx, repoURL); p != "" {
			owner = p
		}
		*w.found = append(*w.found, submodule{Path: path.Join(w.prefix, m.path), URL: subURL})
		sub := subWalk{repoURL: subURL, dir: target, prefix: path.Join(w.prefix, m.path), depth: w.depth + 1, proj: w.proj, found: w.found}
		if err := a.writeSubmodule(withParentRepo(ctx, owner), m.hash.String(), sub); err != nil {
			return fmt.Errorf("submodule %s: %w", m.path, err)
		}
	}
	return nil
}

// permittedIn refuses a submodule at path (from the checkout's root) whose
// URL is not one of proj's sourceRepos.
func permittedIn(proj *appspec.Project, path, subURL string) error {
	if proj == nil || proj.PermitsSource(subURL) {
		return nil
	}
	return fmt.Errorf("%w: submodule %s points at %s, which is not one of the sourceRepos of project %s",
		ErrSubmoduleNotAllowed, path, redactURL(subURL), proj.Name)
}

// writeSubmodule writes commit sha of w.repoURL, with its submodules,
// into w.dir, under the repository's fetch lock.
func (a *Activities) writeSubmodule(ctx context.Context, sha string, w subWalk) error {
	key := urlKey(w.repoURL)
	lock := a.locks.get(key)
	lock.fetch.Lock()
	defer lock.fetch.Unlock()
	commit, release, err := a.commitOf(ctx, w.repoURL, key, sha)
	if err != nil {
		return err
	}
	defer release()
	tree, err := commit.Tree()
	if err != nil {
		return fmt.Errorf("read tree of %s: %w", sha, err)
	}
	if err := writeTree(tree, w.dir); err != nil {
		return fmt.Errorf("checkout %s@%s: %w", redactURL(w.repoURL), sha, err)
	}
	w.tree = tree
	return a.checkoutSubmodules(ctx, w)
}

// submoduleList is the file beside checkout trees/<key>-<sha> that lists
// the submodules written into it.
func (a *Activities) submoduleList(key, sha string) string {
	return filepath.Join(a.cacheDir, "trees", key+"-"+sha+submoduleListExt)
}

const submoduleListExt = ".submodules.json"

// writeSubmoduleList records mods for later checks (none: no file). It
// is written before the checkout is renamed into place, so that a
// checkout with submodules is never seen without its list.
func writeSubmoduleList(file string, mods []submodule) error {
	if len(mods) == 0 {
		_ = os.Remove(file)
		return nil
	}
	b, err := json.Marshal(mods)
	if err != nil {
		return err
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("record the submodules: %w", err)
	}
	return os.Rename(tmp, file)
}

// checkRecordedSubmodules checks the submodules of checkout <key>-<sha>
// against proj's sourceRepos.
func (a *Activities) checkRecordedSubmodules(repoURL, key, sha string, proj *appspec.Project) error {
	b, err := os.ReadFile(a.submoduleList(key, sha))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the submodules of %s@%s: %w", redactURL(repoURL), sha, err)
	}
	var mods []submodule
	if err := json.Unmarshal(b, &mods); err != nil {
		return fmt.Errorf("read the submodules of %s@%s: %w", redactURL(repoURL), sha, err)
	}
	for _, m := range mods {
		if err := permittedIn(proj, m.Path, m.URL); err != nil {
			return fmt.Errorf("%s: %w", redactURL(repoURL), err)
		}
	}
	return nil
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
