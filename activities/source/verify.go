package source

import (
	"context"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// VerifyCommit reads commit sha of repoURL (from the mirror, fetching it
// when missing) and returns what check says of it: the signature policy
// (gpgkey.Verify) reads the commit's signature, which a checkout drops.
func (a *Activities) VerifyCommit(ctx context.Context, repoURL, sha string, check func(*object.Commit) error) error {
	if !fullSHA.MatchString(sha) {
		return fmt.Errorf("%w: %q is not a full commit SHA", ErrRevisionNotFound, sha)
	}
	repo, unlock, err := a.lockedMirror(repoURL)
	if err != nil {
		return err
	}
	defer unlock()
	c, err := repo.CommitObject(plumbing.NewHash(sha))
	if err != nil {
		var release func()
		if c, release, err = a.fetchCommit(ctx, repo, repoURL, sha); err != nil {
			return err
		}
		defer release()
	}
	return check(c)
}
