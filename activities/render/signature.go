package render

import (
	"context"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/gpgkey"
)

// ErrNoVerifier is a request with signature keys on a worker that cannot
// check signatures.
var ErrNoVerifier = failure.Permanent("SignatureCheckUnavailable", "commit signatures cannot be checked")

// verifySignatures checks, when req names signature keys, that every Git
// source's commit is signed by one of them. Charts and OCI artifacts carry
// no commit signature and are not checked. It runs before every fresh
// render; a cache entry was checked when it was written, under a key that
// includes the signature keys.
func (r *Renderer) verifySignatures(ctx context.Context, req Request) error {
	if len(req.SignatureKeys) == 0 {
		return nil
	}
	if r.commits == nil || r.gpgKeys == nil {
		return fmt.Errorf("%w: this worker has no GPG key store", ErrNoVerifier)
	}
	keys, err := r.gpgKeys.GPGKeys(ctx)
	if err != nil {
		return fmt.Errorf("read the GPG keys: %w", err)
	}
	done := map[string]bool{}
	for _, s := range req.Sources {
		if s.Chart != "" || appspec.IsOCIRepoURL(s.RepoURL) || done[s.RepoURL+"@"+s.SHA] {
			continue
		}
		done[s.RepoURL+"@"+s.SHA] = true
		err := r.commits.VerifyCommit(ctx, s.RepoURL, s.SHA, func(c *object.Commit) error {
			return gpgkey.Verify(c, keys, req.SignatureKeys)
		})
		if err != nil {
			return fmt.Errorf("source %s: %w", s.RepoURL, err)
		}
	}
	return nil
}
