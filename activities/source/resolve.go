package source

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/go-git/go-git/v5/plumbing"
)

var (
	fullSHA  = regexp.MustCompile(`^[0-9a-f]{40}$`)
	shortSHA = regexp.MustCompile(`^[0-9a-f]{7,39}$`)
)

// errShortSHA says that a revision is an abbreviated SHA, which only the
// mirror can expand.
var errShortSHA = errors.New("abbreviated commit SHA")

const peeledSuffix = "^{}"

// pickRevision finds revision among refs: HEAD, a branch, a tag (peeled to
// its commit), a full commit SHA, or the highest tag in a semver range. It
// returns errShortSHA for an abbreviated SHA that names no reference.
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
		plumbing.ReferenceName(plumbing.NewTagReferenceName(rev).String() + peeledSuffix),
		plumbing.NewTagReferenceName(rev),
	}
	for _, n := range candidates {
		if r, ok := byName[n]; ok {
			if s := target(r); s != "" {
				return s, strings.TrimSuffix(n.String(), peeledSuffix), nil
			}
		}
	}
	if lower := strings.ToLower(rev); fullSHA.MatchString(lower) {
		return lower, "", nil
	} else if shortSHA.MatchString(lower) {
		return "", "", errShortSHA
	}
	if c, ok := semverRange(rev); ok {
		return highestTag(refs, byName, target, c, rev)
	}
	return "", "", fmt.Errorf("%w: %q is not a branch, tag or commit of the repository", ErrRevisionNotFound, rev)
}

// semverRange parses rev as a semver constraint. An exact version (v1.2.3)
// is not a range: it can only name a tag.
func semverRange(rev string) (*semver.Constraints, bool) {
	if _, err := semver.NewVersion(rev); err == nil {
		return nil, false
	}
	c, err := semver.NewConstraint(rev)
	return c, err == nil
}

// highestTag picks the highest tag whose name is a version satisfying c.
// Tags that are not versions are passed over.
func highestTag(refs []*plumbing.Reference, byName map[plumbing.ReferenceName]*plumbing.Reference,
	target func(*plumbing.Reference) string, c *semver.Constraints, rev string) (sha, ref string, err error) {
	var (
		best    *semver.Version
		bestRef *plumbing.Reference
	)
	for _, r := range refs {
		n := r.Name()
		if !n.IsTag() || strings.HasSuffix(n.String(), peeledSuffix) {
			continue
		}
		v, err := semver.NewVersion(n.Short())
		if err != nil || !c.Check(v) {
			continue
		}
		if best == nil || v.GreaterThan(best) {
			best, bestRef = v, r
		}
	}
	if bestRef == nil {
		return "", "", fmt.Errorf("%w: no tag satisfies %q", ErrRevisionNotFound, rev)
	}
	if peeled, ok := byName[plumbing.ReferenceName(bestRef.Name().String()+peeledSuffix)]; ok {
		return peeled.Hash().String(), bestRef.Name().String(), nil
	}
	return target(bestRef), bestRef.Name().String(), nil
}
