package webhook

import (
	"strings"

	"github.com/Masterminds/semver/v3"
)

const (
	branchPrefix = "refs/heads/"
	tagPrefix    = "refs/tags/"
)

// RevisionMatches reports whether an application source with targetRevision
// should refresh after push p. It follows Argo CD:
//
//   - "" and "HEAD" follow the default branch; when the push does not say
//     which branch that is, any branch push matches.
//   - "main" or "refs/heads/main" matches a push to branch main, and "v1.2.0"
//     or "refs/tags/v1.2.0" a push of that tag.
//   - A full commit SHA (40 or 64 hex digits) is pinned and never matches.
//   - A semver constraint ("1.2.*", ">=1.0.0", "~1.2") matches a push of any
//     tag that is a version satisfying it ("v1.2.3" or "1.2.3").
//   - Anything else matches nothing.
//
// A push whose Ref is neither a branch nor a tag matches nothing.
func RevisionMatches(targetRevision string, p Push) bool {
	target := strings.TrimSpace(targetRevision)
	branch, isBranch := strings.CutPrefix(p.Ref, branchPrefix)
	tag, isTag := strings.CutPrefix(p.Ref, tagPrefix)
	switch {
	case !isBranch && !isTag:
		return false
	case target == "" || target == "HEAD":
		return isBranch && (p.DefaultBranch == "" || branch == p.DefaultBranch)
	case strings.HasPrefix(target, branchPrefix):
		return isBranch && branch == strings.TrimPrefix(target, branchPrefix)
	case strings.HasPrefix(target, tagPrefix):
		return isTag && tag == strings.TrimPrefix(target, tagPrefix)
	case isCommitSHA(target):
		return false
	case isBranch:
		return branch == target
	case tag == target:
		return true
	}
	return tagSatisfies(tag, target)
}

// tagSatisfies reports whether tag is a version satisfying the semver
// constraint; false when either does not parse.
func tagSatisfies(tag, constraint string) bool {
	c, err := semver.NewConstraint(constraint)
	if err != nil {
		return false
	}
	v, err := semver.NewVersion(tag)
	if err != nil {
		return false
	}
	return c.Check(v)
}

// isCommitSHA reports whether s is a full SHA-1 or SHA-256 object name.
func isCommitSHA(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return false
		}
	}
	return true
}
