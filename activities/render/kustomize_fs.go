package render

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

var errReadOnly = errors.New("the repository is read-only during a render")

// repoFS is the file system kustomize builds from: the disk, confined to
// the checkout root (every path is resolved through its symlinks first and
// must land inside the root), read-only, with the app's edited
// kustomization file laid over the original. When remote bases are
// allowed, kustomize's own git clones (os.TempDir()/kustomize-*) are
// readable too.
type repoFS struct {
	disk    filesys.FileSystem
	root    string // real path of the checkout
	clones  string // real path prefix of kustomize's clones, or ""
	overlay map[string][]byte

	mu     sync.Mutex
	denied error // the first path refused, reported instead of kustomize's wrapping
}

var _ filesys.FileSystem = (*repoFS)(nil)

func newRepoFS(root string, allowClones bool) (*repoFS, error) {
	// Kustomize asks for absolute paths: a relative root (a relative
	// cache dir) must be made absolute before they are compared.
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("checkout root: %w", err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("checkout root: %w", err)
	}
	f := &repoFS{disk: filesys.MakeFsOnDisk(), root: real, overlay: map[string][]byte{}}
	if allowClones {
		tmp, err := filepath.EvalSymlinks(os.TempDir())
		if err != nil {
			return nil, fmt.Errorf("temp dir: %w", err)
		}
		f.clones = filepath.Join(tmp, "kustomize-")
	}
	return f, nil
}

// resolve returns the real path of p (the longest existing prefix with
// its symlinks evaluated, plus the rest), refusing anything outside the
// root or kustomize's clones.
func (f *repoFS) resolve(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	real := realPath(abs)
	if within(real, f.root) || (f.clones != "" && strings.HasPrefix(real, f.clones)) {
		return real, nil
	}
	shown := abs
	if rel, err := filepath.Rel(f.root, abs); err == nil && !strings.HasPrefix(rel, "..") {
		shown = filepath.ToSlash(rel) // inside lexically, out through a symlink
	}
	err = fmt.Errorf("%w: kustomize may not read %q: it is outside the repository", ErrBadPath, shown)
	f.mu.Lock()
	if f.denied == nil {
		f.denied = err
	}
	f.mu.Unlock()
	return "", err
}

// violation is the first path refused, if any.
func (f *repoFS) violation() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.denied
}

// realPath evaluates the symlinks of the longest existing prefix of the
// clean absolute path p. A dangling link is followed by its text, so that
// a link out of the root is refused as such, not read as a missing file.
func realPath(p string) string { return realPathN(p, 0) }

// maxLinks bounds the dangling links realPath follows (a loop).
const maxLinks = 40

func realPathN(p string, links int) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	parent := filepath.Dir(p)
	if parent == p {
		return p
	}
	dir := realPathN(parent, links)
	if links < maxLinks {
		if target, err := os.Readlink(filepath.Join(dir, filepath.Base(p))); err == nil {
			if !filepath.IsAbs(target) {
				target = filepath.Join(dir, target)
			}
			return realPathN(filepath.Clean(target), links+1)
		}
	}
	return filepath.Join(dir, filepath.Base(p))
}

// within reports whether p is root or below it.
func within(p, root string) bool {
	return p == root || strings.HasPrefix(p, root+string(os.PathSeparator))
}

func (f *repoFS) Create(string) (filesys.File, error) { return nil, errReadOnly }
func (f *repoFS) Mkdir(string) error                  { return errReadOnly }
func (f *repoFS) MkdirAll(string) error               { return errReadOnly }
func (f *repoFS) WriteFile(string, []byte) error      { return errReadOnly }

// RemoveAll only cleans up kustomize's own clones.
func (f *repoFS) RemoveAll(p string) error {
	if f.clones == "" || !strings.HasPrefix(realPath(filepath.Clean(p)), f.clones) {
		return errReadOnly
	}
	return f.disk.RemoveAll(p)
}

func (f *repoFS) Open(p string) (filesys.File, error) {
	real, err := f.resolve(p)
	if err != nil {
		return nil, err
	}
	if b, ok := f.overlay[real]; ok {
		mem := filesys.MakeFsInMemory()
		if err := mem.WriteFile(real, b); err != nil {
			return nil, err
		}
		return mem.Open(real)
	}
	return f.disk.Open(real)
}

func (f *repoFS) IsDir(p string) bool {
	real, err := f.resolve(p)
	return err == nil && f.disk.IsDir(real)
}

func (f *repoFS) ReadDir(p string) ([]string, error) {
	real, err := f.resolve(p)
	if err != nil {
		return nil, err
	}
	return f.disk.ReadDir(real)
}

func (f *repoFS) CleanedAbs(p string) (filesys.ConfirmedDir, string, error) {
	real, err := f.resolve(p)
	if err != nil {
		return "", "", err
	}
	return f.disk.CleanedAbs(real)
}

func (f *repoFS) Exists(p string) bool {
	real, err := f.resolve(p)
	return err == nil && f.disk.Exists(real)
}

// Glob drops (and records) matches that lead outside the repository.
func (f *repoFS) Glob(pattern string) ([]string, error) {
	matches, err := f.disk.Glob(pattern)
	if err != nil {
		return nil, err
	}
	out := matches[:0]
	for _, m := range matches {
		if _, err := f.resolve(m); err == nil {
			out = append(out, m)
		}
	}
	return out, nil
}

func (f *repoFS) ReadFile(p string) ([]byte, error) {
	real, err := f.resolve(p)
	if err != nil {
		return nil, err
	}
	if b, ok := f.overlay[real]; ok {
		return append([]byte(nil), b...), nil
	}
	return f.disk.ReadFile(real)
}

func (f *repoFS) Walk(p string, fn filepath.WalkFunc) error {
	real, err := f.resolve(p)
	if err != nil {
		return err
	}
	return f.disk.Walk(real, fn)
}
