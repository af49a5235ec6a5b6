package source

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"

	"github.com/windlass-cd/windlass/internal/untar"
)

// extractLayer unpacks an artifact's layer, a tarball gzipped or not, into
// dir with untar's checks: an entry it cannot place safely is
// ErrBadArtifact, an archive over the limits ErrArtifactTooLarge.
func extractLayer(r io.Reader, dir string, o untar.Options) error {
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
	err := untar.Extract(src, dir, o)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, untar.ErrTooLarge):
		return fmt.Errorf("%w: %w", ErrArtifactTooLarge, err)
	}
	return fmt.Errorf("%w: %w", ErrBadArtifact, err)
}
