package source

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/memory"
)

var (
	fullSHA  = regexp.MustCompile(`^[0-9a-f]{40}$`)
	shortSHA = regexp.MustCompile(`^[0-9a-f]{7,39}$`)
)

// lsRemote lists the references of repoURL.
func (a *Activities) lsRemote(ctx context.Context, repoURL string) ([]*plumbing.Reference, error) {
	auth, err := a.creds.Auth(ctx, repoURL)
	if err != nil {
		return nil, err
	}
	rem := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{repoURL}})
	refs, err := rem.ListContext(ctx, &git.ListOptions{Auth: auth, PeelingOption: git.AppendPeeled})
	if err != nil {
		return nil, classify(repoURL, err)
	}
	return refs, nil
}

// pickRevision finds revision among refs: HEAD, a branch, a tag (peeled to
// its commit) or a full commit SHA.
func pickRevision(refs []*plumbing.Reference, revision string) (sha, ref string, err error) {
	byName := make(map[plumbing.ReferenceName]*plumbing.Reference, len(refs))
	for _, r := range refs {
		byName[r.Name()] = r
	}
	target := func(r *plumbing.Reference) string {
		for r.Type() == plumbing.SymbolicReference {
			t, ok := byName[r.Target()]
			if !ok {
				return ""
			}
			r = t
		}
		return r.Hash().String()
	}
	rev := strings.TrimSpace(revision)
	if rev == "" || rev == "HEAD" {
		if h, ok := byName[plumbing.HEAD]; ok {
			if s := target(h); s != "" {
				return s, "HEAD", nil
			}
		}
		return "", "", fmt.Errorf("%w: the repository has no HEAD", ErrRevisionNotFound)
	}
	candidates := []plumbing.ReferenceName{
		plumbing.ReferenceName(rev),
		plumbing.NewBranchReferenceName(rev),
		plumbing.ReferenceName(plumbing.NewTagReferenceName(rev).String() + "^{}"),
		plumbing.NewTagReferenceName(rev),
	}
	for _, n := range candidates {
		if r, ok := byName[n]; ok {
			if s := target(r); s != "" {
				return s, strings.TrimSuffix(n.String(), "^{}"), nil
			}
		}
	}
	if fullSHA.MatchString(rev) {
		return rev, "", nil
	}
	if shortSHA.MatchString(rev) {
		return "", "", fmt.Errorf("%w: %q: short commit SHAs are not implemented yet, use the full SHA", ErrRevisionNotFound, rev)
	}
	return "", "", fmt.Errorf("%w: %q is not a branch, tag or commit of the repository", ErrRevisionNotFound, rev)
}
