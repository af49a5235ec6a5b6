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

// repoFS is the file system kustomize builds from: the checkout, read
// through its repoRoot (no symlink may lead out of it, only bounded
// regular files are read), read-only, with the app's edited kustomization
// file laid over the original. When remote bases are allowed, kustomize's
// own git clones (os.TempDir()/kustomize-*) are readable too.
type repoFS struct {
	disk    filesys.FileSystem
	repo    *repoRoot
	root    string // real path of the checkout
	clones  string // real path prefix of kustomize's clones, or ""
	overlay map[string][]byte

	mu     sync.Mutex
	denied error // the first path refused, reported instead of kustomize's wrapping
}

var _ filesys.FileSystem = (*repoFS)(nil)

// newRepoFS opens the checkout root; limit bounds each file read (0: the
// default).
func newRepoFS(root string, limit int64, allowClones bool) (*repoFS, error) {
	// Kustomize asks for absolute paths: openRepoRoot makes a relative
	// root (a relative cache dir) absolute before they are compared.
	repo, err := openRepoRoot(root, limit)
	if err != nil {
		return nil, err
	}
	f := &repoFS{disk: filesys.MakeFsOnDisk(), repo: repo, root: repo.dir, overlay: map[string][]byte{}}
	if allowClones {
		tmp, err := filepath.EvalSymlinks(os.TempDir())
		if err != nil {
			repo.Close()
			return nil, fmt.Errorf("temp dir: %w", err)
		}
		f.clones = filepath.Join(tmp, "kustomize-")
	}
	return f, nil
}

func (f *repoFS) Close() error { return f.repo.Close() }

// resolve returns the real path of p (the longest existing prefix with
// its symlinks evaluated, plus the rest), refusing anything outside the
// root or kustomize's clones. A path inside the root lexically is checked
// by the repoRoot, at every link of every component.
func (f *repoFS) resolve(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	real := realPath(abs)
	if rel, ok := f.inRoot(abs); ok {
		if _, err := f.repo.stat(rel); errors.Is(err, errLeaves) {
			return "", f.deny(fmt.Errorf("%w: kustomize may not read %q: it is outside the repository", ErrBadPath, rel))
		}
		return real, nil
	}
	if f.clones != "" && strings.HasPrefix(real, f.clones) {
		return real, nil
	}
	return "", f.deny(fmt.Errorf("%w: kustomize may not read %q: it is outside the repository", ErrBadPath, abs))
}

// inRoot returns abs relative to the root when it lies inside lexically.
func (f *repoFS) inRoot(abs string) (string, bool) {
	if !within(abs, f.root) {
		return "", false
	}
	rel, err := f.repo.rel(abs)
	return rel, err == nil
}

// deny records err as the violation if it is the first.
func (f *repoFS) deny(err error) error {
	f.mu.Lock()
	if f.denied == nil {
		f.denied = err
	}
	f.mu.Unlock()
	return err
}

// read reads p: the overlay, a file of the checkout through the
// repoRoot, or a file of kustomize's clones.
func (f *repoFS) read(p string) ([]byte, error) {
	real, err := f.resolve(p)
	if err != nil {
		return nil, err
	}
	if b, ok := f.overlay[real]; ok {
		return append([]byte(nil), b...), nil
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return nil, err
	}
	if rel, ok := f.inRoot(abs); ok {
		b, err := f.repo.readFile(rel)
		if err != nil && !errors.Is(err, ErrPathNotFound) {
			return nil, f.deny(err)
		}
		return b, err
	}
	return f.disk.ReadFile(real)
}

// violation is the first path refused, if any.
func (f *repoFS) violation() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.denied
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
	b, err := f.read(p)
	if err != nil {
		return nil, err
	}
	name, err := filepath.Abs(p)
	if err != nil {
		return nil, err
	}
	mem := filesys.MakeFsInMemory()
	if err := mem.WriteFile(name, b); err != nil {
		return nil, err
	}
	return mem.Open(name)
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
	if _, laid := f.overlay[real]; laid && !f.disk.Exists(real) {
		// A file only the overlay holds (inflated charts).
		return filesys.ConfirmedDir(filepath.Dir(real)), filepath.Base(real), nil
	}
	return f.disk.CleanedAbs(real)
}

func (f *repoFS) Exists(p string) bool {
	real, err := f.resolve(p)
	if err != nil {
		return false
	}
	_, laid := f.overlay[real]
	return laid || f.disk.Exists(real)
}

// where is p relative to the root, for messages.
func (f *repoFS) where(p string) string {
	if rel, err := filepath.Rel(f.root, p); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return p
}

// readUnder reads p, which must lie under dir when rootOnly, as
// kustomize's root-only load restrictor wants.
func (f *repoFS) readUnder(dir, p string, rootOnly bool) ([]byte, error) {
	if rootOnly {
		real, err := f.resolve(p)
		if err != nil {
			return nil, err
		}
		if !within(real, realPath(dir)) {
			return nil, f.deny(fmt.Errorf("%w: %s is outside the kustomization's folder %s (the worker's --kustomize-build-options may set --load-restrictor LoadRestrictionsNone)",
				ErrBadPath, f.where(real), f.where(dir)))
		}
	}
	return f.read(p)
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

func (f *repoFS) ReadFile(p string) ([]byte, error) { return f.read(p) }

func (f *repoFS) Walk(p string, fn filepath.WalkFunc) error {
	real, err := f.resolve(p)
	if err != nil {
		return err
	}
	return f.disk.Walk(real, fn)
}
