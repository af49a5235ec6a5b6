package source

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// Tree is a folder of a repository at a revision, read through the
// Activities' mirrors and checkouts with their credentials. The worker
// loads its resource customizations from one (customizations.Source).
type Tree struct {
	Git      *Activities
	RepoURL  string
	Revision string
	// Path is the folder, relative to the repository's root ("" or ".":
	// the root).
	Path string
}

// String names the tree in logs and statuses, without credentials.
func (t Tree) String() string {
	s := redactURL(t.RepoURL) + "@" + t.Revision
	if p := filepath.Clean(t.Path); p != "." {
		s += "/" + filepath.ToSlash(p)
	}
	return s
}

// Fetch resolves the revision and returns the folder in its checkout and
// the commit SHA. The folder is shared and read-only.
func (t Tree) Fetch(ctx context.Context) (string, string, error) {
	rel := filepath.Clean(filepath.FromSlash(t.Path))
	if t.Path != "" && !filepath.IsLocal(rel) {
		return "", "", fmt.Errorf("path %q: want a folder inside the repository", t.Path)
	}
	out, err := t.Git.ResolveRevision(ctx, ResolveInput{RepoURL: t.RepoURL, Revision: t.Revision})
	if err != nil {
		return "", "", err
	}
	root, err := t.Git.Checkout(ctx, t.RepoURL, out.SHA)
	if err != nil {
		return "", "", err
	}
	dir, err := resolveInside(root, rel)
	if err != nil {
		return "", "", fmt.Errorf("%s at %s: %w", t, out.SHA, err)
	}
	info, err := os.Stat(dir)
	if err != nil {
		return "", "", fmt.Errorf("%s at %s: %w", t, out.SHA, err)
	}
	if !info.IsDir() {
		return "", "", fmt.Errorf("%s at %s: not a folder", t, out.SHA)
	}
	return dir, out.SHA, nil
}

// resolveInside follows the symlinks of root/rel and fails when they lead
// out of root.
func resolveInside(root, rel string) (string, error) {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", err
	}
	dir, err := filepath.EvalSymlinks(filepath.Join(realRoot, rel))
	if err != nil {
		return "", err
	}
	if r, err := filepath.Rel(realRoot, dir); err != nil || !filepath.IsLocal(r) && r != "." {
		return "", fmt.Errorf("path %q leads out of the repository", rel)
	}
	return dir, nil
}

// Trees reads whole repositories at a revision through the Activities'
// mirrors and checkouts (the ApplicationSet git generator's reader).
type Trees struct {
	Git *Activities
}

// Tree resolves revision and returns the root of its shared, read-only
// checkout.
func (t Trees) Tree(ctx context.Context, repoURL, revision string) (string, error) {
	dir, _, err := Tree{Git: t.Git, RepoURL: repoURL, Revision: revision}.Fetch(ctx)
	return dir, err
}
