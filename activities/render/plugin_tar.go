package render

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/windlass-cd/windlass/internal/untar"
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
// with untar's checks: an entry it cannot place safely is ErrBadPath, a
// tar over the limits ErrCheckoutTooLarge.
func extractCheckoutTar(r io.Reader, dst string, l tarLimits) error {
	real, err := filepath.EvalSymlinks(dst)
	if err != nil {
		return err
	}
	err = untar.Extract(r, real, untar.Options{MaxBytes: l.Bytes, MaxEntries: l.Entries})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, untar.ErrTooLarge):
		return fmt.Errorf("%w: %w", ErrCheckoutTooLarge, err)
	}
	return fmt.Errorf("%w: checkout tar: %w", ErrBadPath, err)
}
