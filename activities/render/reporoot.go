package render

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/manifest"
)

// ErrFileTooLarge is a repository file over the per-file read limit.
var ErrFileTooLarge = failure.Permanent("FileTooLarge", "repository file too large")

// errLeaves marks a path that a symlink leads out of the checkout.
var errLeaves = errors.New("leads out of the repository through a symlink")

// DefaultMaxFileBytes is the default bound on one file read from a
// repository (Config.MaxFileBytes).
const DefaultMaxFileBytes = manifest.MaxFileBytes

// repoRoot is the one way a render reads a checkout. Paths are resolved
// by os.Root, so no symlink may leave the checkout at any depth of a
// chain; only regular files are read, and at most limit bytes of each.
// Errors name paths relative to the checkout, never a worker path.
type repoRoot struct {
	dir   string // absolute real path of the checkout
	root  *os.Root
	limit int64
}

// openRepoRoot opens the checkout dir; limit 0 means DefaultMaxFileBytes.
func openRepoRoot(dir string, limit int64) (*repoRoot, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("checkout root: %w", err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("checkout root: %w", err)
	}
	root, err := os.OpenRoot(real)
	if err != nil {
		return nil, fmt.Errorf("checkout root: %w", err)
	}
	if limit <= 0 {
		limit = DefaultMaxFileBytes
	}
	return &repoRoot{dir: real, root: root, limit: limit}, nil
}

func (r *repoRoot) Close() error { return r.root.Close() }

// rel returns p (absolute, or relative to the checkout) as a clean slash
// path relative to the checkout, refusing one that climbs out of it.
func (r *repoRoot) rel(p string) (string, error) {
	if filepath.IsAbs(p) {
		rel, err := filepath.Rel(r.dir, filepath.Clean(p))
		if err != nil {
			return "", fmt.Errorf("%w: %q is outside the repository", ErrBadPath, p)
		}
		p = rel
	}
	p = path.Clean(filepath.ToSlash(p))
	if p == ".." || strings.HasPrefix(p, "../") || path.IsAbs(p) {
		return "", fmt.Errorf("%w: %q leaves the repository", ErrBadPath, p)
	}
	return p, nil
}

// stat follows rel's symlinks inside the checkout.
func (r *repoRoot) stat(rel string) (fs.FileInfo, error) {
	rel, err := r.rel(rel)
	if err != nil {
		return nil, err
	}
	st, err := r.root.Stat(rel)
	if err != nil {
		return nil, r.pathError(rel, err)
	}
	return st, nil
}

// readFile reads the regular file rel, up to the limit.
func (r *repoRoot) readFile(rel string) ([]byte, error) {
	rel, err := r.rel(rel)
	if err != nil {
		return nil, err
	}
	// Stat before opening: opening a FIFO would block.
	st, err := r.stat(rel)
	if err != nil {
		return nil, err
	}
	if err := r.checkFile(rel, st); err != nil {
		return nil, err
	}
	f, err := r.root.Open(rel)
	if err != nil {
		return nil, r.pathError(rel, err)
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, r.pathError(rel, err)
	}
	if err := r.checkFile(rel, st); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, r.limit+1))
	if err != nil {
		return nil, r.pathError(rel, err)
	}
	if int64(len(b)) > r.limit {
		return nil, r.tooLarge(rel)
	}
	return b, nil
}

// checkFile refuses anything but a regular file within the limit.
func (r *repoRoot) checkFile(rel string, st fs.FileInfo) error {
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%w: %q is %s, not a regular file", ErrBadPath, rel, fileKind(st.Mode()))
	}
	if st.Size() > r.limit {
		return r.tooLarge(rel)
	}
	return nil
}

func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}

func (r *repoRoot) tooLarge(rel string) error {
	return fmt.Errorf("%w: %q is larger than %d bytes", ErrFileTooLarge, rel, r.limit)
}

// pathError says why os.Root refused rel: missing (ErrPathNotFound), a
// symlink leading out of the checkout, or another failure.
func (r *repoRoot) pathError(rel string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %q", ErrPathNotFound, rel)
	}
	// os.Root gives no exported error for an escape, and reports a long
	// chain as a loop: the real path tells them apart.
	if !within(realPath(filepath.Join(r.dir, filepath.FromSlash(rel))), r.dir) {
		return fmt.Errorf("%w: %q %w", ErrBadPath, rel, errLeaves)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("%w: %q: %w", ErrBadPath, rel, err)
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
