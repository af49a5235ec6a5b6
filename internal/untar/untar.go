package untar

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Errors of Extract; callers map them onto their own typed errors.
var (
	// ErrUnsafe is an entry that would land, or point, outside the
	// directory, or that is not a file, a folder or a symlink.
	ErrUnsafe = errors.New("unsafe archive entry")
	// ErrTooLarge is an archive over Options' limits.
	ErrTooLarge = errors.New("archive over the limits")
	// ErrUnreadable is a stream that is not a tar archive.
	ErrUnreadable = errors.New("unreadable archive")
)

// MaxLinks bounds the symlinks followed while resolving one name (a loop
// or a long chain counts as leaving the directory).
const MaxLinks = 40

// Options bound an extraction. Both limits are required.
type Options struct {
	// MaxBytes bounds the total size of the regular files.
	MaxBytes int64
	// MaxEntries bounds the entries of every kind.
	MaxEntries int
	// StripTop drops the first folder of every name (a Helm chart's
	// tarball holds <chart>/...).
	StripTop bool
}

// Extract unpacks the tar read from r into dir, which should be empty.
// On an error, dir may hold part of the archive: the caller removes it.
func Extract(r io.Reader, dir string, o Options) error {
	if o.MaxBytes <= 0 || o.MaxEntries <= 0 {
		return errors.New("untar: the limits are required")
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	tr := tar.NewReader(r)
	var (
		total int64
		seen  = map[string]bool{}
		links []string
	)
	for n := 1; ; n++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return checkChains(root, links)
		}
		if err != nil {
			return fmt.Errorf("%w: %w", ErrUnreadable, err)
		}
		if n > o.MaxEntries {
			return fmt.Errorf("%w: more than %d entries", ErrTooLarge, o.MaxEntries)
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			continue
		}
		name, err := entryName(h.Name, o.StripTop)
		if err != nil || name == "." {
			if err != nil {
				return err
			}
			continue
		}
		if err := underLink(root, name); err != nil {
			return err
		}
		if h.Typeflag != tar.TypeDir {
			if seen[name] {
				return fmt.Errorf("%w: %q appears twice", ErrUnsafe, name)
			}
			seen[name] = true
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = root.MkdirAll(name, 0o755)
		case tar.TypeReg:
			if total += h.Size; total > o.MaxBytes {
				return fmt.Errorf("%w: more than %d bytes unpacked", ErrTooLarge, o.MaxBytes)
			}
			err = writeFile(root, name, h, tr)
		case tar.TypeSymlink:
			target := path.Join(path.Dir(name), h.Linkname)
			if h.Linkname == "" || path.IsAbs(h.Linkname) || strings.Contains(h.Linkname, `\`) || !filepath.IsLocal(filepath.FromSlash(target)) {
				return fmt.Errorf("%w: symlink %q leads out of the archive (to %q)", ErrUnsafe, name, h.Linkname)
			}
			links = append(links, name)
			err = mkParent(root, name)
			if err == nil {
				err = root.Symlink(h.Linkname, filepath.FromSlash(name))
			}
		default:
			return fmt.Errorf("%w: %q is a %s; only files, folders and symlinks are unpacked", ErrUnsafe, name, kind(h.Typeflag))
		}
		if err != nil {
			return fmt.Errorf("%w: %q: %w", ErrUnsafe, name, err)
		}
	}
}

// entryName is the clean slash name of an archive entry, or an error
// when it leaves the archive.
func entryName(raw string, stripTop bool) (string, error) {
	p := strings.TrimSuffix(strings.TrimPrefix(raw, "./"), "/")
	if p == "" {
		return ".", nil
	}
	if path.IsAbs(raw) || strings.Contains(raw, `\`) || !filepath.IsLocal(filepath.FromSlash(p)) {
		return "", fmt.Errorf("%w: %q leads out of the archive", ErrUnsafe, raw)
	}
	p = path.Clean(p)
	if stripTop {
		_, rest, ok := strings.Cut(p, "/")
		if !ok {
			return ".", nil
		}
		p = rest
	}
	return p, nil
}

// underLink refuses a name below a symlink: the lexical check of a
// link's target holds only when no folder above the link is one.
func underLink(root *os.Root, name string) error {
	for d := path.Dir(name); d != "."; d = path.Dir(d) {
		if fi, err := root.Lstat(filepath.FromSlash(d)); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%w: %q lies below the symlink %q", ErrUnsafe, name, d)
		}
	}
	return nil
}

func mkParent(root *os.Root, name string) error {
	if d := path.Dir(name); d != "." {
		return root.MkdirAll(filepath.FromSlash(d), 0o755)
	}
	return nil
}

// writeFile writes one regular file, executable when any x bit is set.
func writeFile(root *os.Root, name string, h *tar.Header, r io.Reader) error {
	if err := mkParent(root, name); err != nil {
		return err
	}
	perm := fs.FileMode(0o644)
	if h.Mode&0o111 != 0 {
		perm = 0o755
	}
	f, err := root.OpenFile(filepath.FromSlash(name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.CopyN(f, r, h.Size); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// checkChains refuses a symlink that leads out of root through others.
func checkChains(root *os.Root, links []string) error {
	for _, name := range links {
		if leaves(root, name) {
			return fmt.Errorf("%w: symlink %q leads out of the archive through other symlinks", ErrUnsafe, name)
		}
	}
	return nil
}

// leaves reports whether resolving the slash name under root, one
// component at a time and through its symlinks (dangling ones too), ever
// steps out of root. A ".." is taken after the symlinks before it, as the
// kernel takes it.
func leaves(root *os.Root, name string) bool {
	var cur []string
	rest := strings.Split(name, "/")
	for hops := 0; len(rest) > 0; {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(cur) == 0 {
				return true
			}
			cur = cur[:len(cur)-1]
			continue
		}
		p := filepath.Join(append(cur, c)...)
		if fi, err := root.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			target, err := root.Readlink(p)
			if hops++; err != nil || hops > MaxLinks || path.IsAbs(target) {
				return true
			}
			rest = append(strings.Split(filepath.ToSlash(target), "/"), rest...)
			continue
		}
		cur = append(cur, c)
	}
	return false
}

func kind(t byte) string {
	switch t {
	case tar.TypeLink:
		return "hard link"
	case tar.TypeChar, tar.TypeBlock:
		return "device"
	case tar.TypeFifo:
		return "named pipe"
	}
	return fmt.Sprintf("entry of type %q", t)
}
