package source

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// extractLimits bound an unpacked archive.
type extractLimits struct {
	bytes int64 // total bytes of the regular files
	files int   // entries
	// stripTop drops the first folder of every path (a Helm chart's
	// tarball holds <chart>/...).
	stripTop bool
}

// extractTar unpacks a tarball, gzipped or not, into dir. Writes go
// through an os.Root, so that nothing lands outside dir. It refuses
// entries that climb out of dir, symlinks that lead out of it, hard links
// and special files, and archives over the limits, rather than dropping
// what it cannot place: a source must never render without a file.
func extractTar(r io.Reader, dir string, lim extractLimits) error {
	br := bufio.NewReader(r)
	var src io.Reader = br
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrBadArtifact, err)
		}
		defer zr.Close()
		src = zr
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	tr := tar.NewReader(src)
	var total int64
	for n := 0; ; n++ {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: read archive: %w", ErrBadArtifact, err)
		}
		if n >= lim.files {
			return fmt.Errorf("%w: more than %d entries", ErrArtifactTooLarge, lim.files)
		}
		if hdr.Typeflag == tar.TypeXGlobalHeader {
			continue
		}
		name, err := entryName(hdr.Name, lim.stripTop)
		if err != nil {
			return err
		}
		if name == "." {
			continue
		}
		if err := throughSymlink(root, name); err != nil {
			return fmt.Errorf("%w: %q: %w", ErrBadArtifact, hdr.Name, err)
		}
		if err := root.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			return fmt.Errorf("%w: %q: %w", ErrBadArtifact, hdr.Name, err)
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			err = root.MkdirAll(name, 0o755)
		case tar.TypeReg:
			total += hdr.Size
			if total > lim.bytes {
				return fmt.Errorf("%w: more than %d bytes unpacked", ErrArtifactTooLarge, lim.bytes)
			}
			err = writeEntry(root, name, hdr, tr)
		case tar.TypeSymlink:
			to := path.Join(path.Dir(filepath.ToSlash(name)), hdr.Linkname)
			if path.IsAbs(hdr.Linkname) || !filepath.IsLocal(filepath.FromSlash(to)) {
				return fmt.Errorf("%w: symlink %q leads out of the artifact", ErrBadArtifact, hdr.Name)
			}
			err = root.Symlink(hdr.Linkname, name)
		default:
			return fmt.Errorf("%w: %q is a %s; only files, folders and symlinks are unpacked",
				ErrBadArtifact, hdr.Name, entryKind(hdr.Typeflag))
		}
		if err != nil {
			return fmt.Errorf("%w: %q: %w", ErrBadArtifact, hdr.Name, err)
		}
	}
}

// entryName cleans an archive path, refusing one that leaves the archive.
func entryName(raw string, stripTop bool) (string, error) {
	p := path.Clean(strings.TrimPrefix(raw, "./"))
	if path.IsAbs(raw) || !filepath.IsLocal(filepath.FromSlash(p)) && p != "." {
		return "", fmt.Errorf("%w: entry %q leaves the artifact", ErrBadArtifact, raw)
	}
	if stripTop {
		_, rest, ok := strings.Cut(p, "/")
		if !ok {
			return ".", nil
		}
		p = rest
	}
	return filepath.FromSlash(p), nil
}

// throughSymlink refuses an entry whose folder is a symlink: the
// lexical check of a link's target holds only when no folder above the
// link is itself one.
func throughSymlink(root *os.Root, name string) error {
	for d := filepath.Dir(name); d != "."; d = filepath.Dir(d) {
		if fi, err := root.Lstat(d); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("its folder %q is a symlink", filepath.ToSlash(d))
		}
	}
	return nil
}

// writeEntry writes one regular file, replacing an earlier entry of the
// same name (as tar does).
func writeEntry(root *os.Root, name string, hdr *tar.Header, r io.Reader) error {
	perm := os.FileMode(0o644)
	if hdr.Mode&0o111 != 0 {
		perm = 0o755
	}
	if fi, err := root.Lstat(name); err == nil && !fi.Mode().IsRegular() {
		if err := root.RemoveAll(name); err != nil {
			return err
		}
	}
	w, err := root.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.CopyN(w, r, hdr.Size); err != nil {
		_ = w.Close()
		return err
	}
	return w.Close()
}

func entryKind(t byte) string {
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
