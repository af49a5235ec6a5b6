package render

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

// writeCheckoutTar streams the checkout root as a tar: directories,
// regular files and symlinks that stay inside root (made relative). A
// symlink out of root fails the stream with ErrBadPath, as copyTree does.
func writeCheckoutTar(w io.Writer, root string) error {
	repo, err := openRepoRoot(root, 0)
	if err != nil {
		return err
	}
	defer repo.Close()
	tw := tar.NewWriter(w)
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." {
			return err
		}
		name := filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o755})
		case d.Type()&fs.ModeSymlink != 0:
			if _, err := repo.stat(name); errors.Is(err, errLeaves) {
				return fmt.Errorf("%w: symlink %s leads out of the repository", ErrBadPath, name)
			}
			link, err := filepath.Rel(filepath.Dir(p), realPath(p))
			if err != nil {
				return err
			}
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: filepath.ToSlash(link)})
		case d.Type().IsRegular():
			return writeTarFile(tw, p, name)
		}
		return nil // sockets, devices, pipes
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

func writeTarFile(tw *tar.Writer, p, name string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: int64(st.Mode().Perm()), Size: st.Size()}); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}

// tarLimits bound what extractCheckoutTar writes.
type tarLimits struct {
	Bytes   int64
	Entries int
}

// extractCheckoutTar unpacks a checkout tar into dst, an empty directory,
// through an os.Root. It refuses an entry whose name is absolute or
// climbs with "..", an entry under a symlink, a symlink whose target is
// absolute or leads out of dst (at any depth of a chain), a hard link or
// a device, and a tar over limits.
func extractCheckoutTar(r io.Reader, dst string, l tarLimits) error {
	real, err := filepath.EvalSymlinks(dst)
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(real)
	if err != nil {
		return err
	}
	defer root.Close()
	tr := tar.NewReader(r)
	var total int64
	links := map[string]bool{}
	for n := 1; ; n++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return checkLinks(real, links)
		}
		if err != nil {
			return fmt.Errorf("checkout tar: %w", err)
		}
		if n > l.Entries {
			return fmt.Errorf("%w: more than %d files", ErrCheckoutTooLarge, l.Entries)
		}
		name := strings.TrimSuffix(h.Name, "/")
		if !filepath.IsLocal(filepath.FromSlash(name)) || strings.Contains(h.Name, "\\") {
			return fmt.Errorf("%w: %q leads out of the checkout", ErrBadPath, h.Name)
		}
		name = path.Clean(name)
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			if links[d] {
				return fmt.Errorf("%w: %s lies under the symlink %s", ErrBadPath, name, d)
			}
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = root.MkdirAll(name, 0o755)
		case tar.TypeReg:
			if total += h.Size; total > l.Bytes {
				return fmt.Errorf("%w: more than %s", ErrCheckoutTooLarge, bytesText(l.Bytes))
			}
			err = extractFile(root, name, h, tr)
		case tar.TypeSymlink:
			target := path.Join(path.Dir(name), h.Linkname)
			if path.IsAbs(h.Linkname) || !filepath.IsLocal(filepath.FromSlash(target)) {
				return fmt.Errorf("%w: symlink %s leads out of the checkout (to %s)", ErrBadPath, name, h.Linkname)
			}
			links[name] = true
			err = root.Symlink(h.Linkname, name)
		default:
			return fmt.Errorf("%w: %s is neither a file, a directory nor a symlink", ErrBadPath, name)
		}
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrBadPath, name, err)
		}
	}
}

// checkLinks refuses a symlink that leads out of dir through others.
func checkLinks(dir string, links map[string]bool) error {
	for name := range links {
		if leavesRoot(dir, name) {
			return fmt.Errorf("%w: symlink %s leads out of the checkout", ErrBadPath, name)
		}
	}
	return nil
}

// leavesRoot reports whether resolving the slash path name under root,
// one component at a time and through its symlinks (dangling ones too),
// ever steps out of root. A ".." is taken after the symlinks before it,
// as the kernel takes it.
func leavesRoot(root, name string) bool {
	var cur []string
	rest := strings.Split(name, "/")
	for links := 0; len(rest) > 0; {
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
		p := filepath.Join(append([]string{root}, append(cur, c)...)...)
		if st, err := os.Lstat(p); err == nil && st.Mode()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			if links++; err != nil || links > maxLinks || path.IsAbs(target) {
				return true
			}
			rest = append(strings.Split(filepath.ToSlash(target), "/"), rest...)
			continue
		}
		cur = append(cur, c)
	}
	return false
}

func extractFile(root *os.Root, name string, h *tar.Header, r io.Reader) error {
	if dir := path.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fs.FileMode(h.Mode).Perm()|0o600)
	if err != nil {
		return err
	}
	if _, err := io.CopyN(f, r, h.Size); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
