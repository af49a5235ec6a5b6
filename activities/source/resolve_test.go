package source

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/google/go-cmp/cmp"
)

func TestPickRevision(t *testing.T) {
	sha := func(c string) string { return strings.Repeat(c, 40) }
	refs := []*plumbing.Reference{
		plumbing.NewSymbolicReference(plumbing.HEAD, "refs/heads/main"),
		plumbing.NewHashReference("refs/heads/main", plumbing.NewHash(sha("1"))),
		plumbing.NewHashReference("refs/heads/v1.5.0-branch", plumbing.NewHash(sha("2"))),
		plumbing.NewHashReference("refs/heads/abcdef12", plumbing.NewHash(sha("3"))),
		plumbing.NewHashReference("refs/tags/v1.0.0", plumbing.NewHash(sha("4"))),
		plumbing.NewHashReference("refs/tags/v1.2.0", plumbing.NewHash(sha("a"))), // annotated
		plumbing.NewHashReference("refs/tags/v1.2.0^{}", plumbing.NewHash(sha("5"))),
		plumbing.NewHashReference("refs/tags/v1.10.1", plumbing.NewHash(sha("6"))),
		plumbing.NewHashReference("refs/tags/v2.0.0-rc.1", plumbing.NewHash(sha("7"))),
		plumbing.NewHashReference("refs/tags/2.1.0", plumbing.NewHash(sha("8"))),
		plumbing.NewHashReference("refs/tags/latest", plumbing.NewHash(sha("9"))),
		plumbing.NewHashReference("refs/tags/v3.*", plumbing.NewHash(sha("b"))), // a tag named like a range
	}
	tests := []struct {
		rev, sha, ref string
		err           error
	}{
		{rev: "", sha: sha("1"), ref: "HEAD"},
		{rev: "HEAD", sha: sha("1"), ref: "HEAD"},
		{rev: "main", sha: sha("1"), ref: "refs/heads/main"},
		{rev: "refs/heads/main", sha: sha("1"), ref: "refs/heads/main"},
		{rev: "v1.0.0", sha: sha("4"), ref: "refs/tags/v1.0.0"},
		{rev: "v1.2.0", sha: sha("5"), ref: "refs/tags/v1.2.0"},
		{rev: "refs/tags/v1.2.0", sha: sha("a"), ref: "refs/tags/v1.2.0"},
		{rev: sha("c"), sha: sha("c")},
		{rev: strings.ToUpper(sha("c")), sha: sha("c")},
		{rev: "abcdef12", sha: sha("3"), ref: "refs/heads/abcdef12"}, // a branch beats a short SHA
		{rev: "abcdef1", err: errShortSHA},
		{rev: "v1.*", sha: sha("6"), ref: "refs/tags/v1.10.1"},
		{rev: "v1.2.*", sha: sha("5"), ref: "refs/tags/v1.2.0"},
		{rev: "^1.0", sha: sha("6"), ref: "refs/tags/v1.10.1"},
		{rev: "~1.2", sha: sha("5"), ref: "refs/tags/v1.2.0"},
		{rev: ">=1.0.0 <1.10.0", sha: sha("5"), ref: "refs/tags/v1.2.0"},
		{rev: ">=2.0.0-0", sha: sha("8"), ref: "refs/tags/2.1.0"},
		{rev: "*", sha: sha("8"), ref: "refs/tags/2.1.0"},
		{rev: "v3.*", sha: sha("b"), ref: "refs/tags/v3.*"}, // exact refs win
		{rev: "v4.*", err: ErrRevisionNotFound},
		{rev: "v1.3.0", err: ErrRevisionNotFound}, // an exact version is no range
		{rev: "nope", err: ErrRevisionNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.rev, func(t *testing.T) {
			sha, ref, err := pickRevision(refs, tt.rev)
			if !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
				t.Fatalf("error = %v, want %v", err, tt.err)
			}
			if d := cmp.Diff([2]string{tt.sha, tt.ref}, [2]string{sha, ref}); d != "" {
				t.Errorf("sha, ref (-want +got):\n%s", d)
			}
		})
	}
	if _, _, err := pickRevision(refs[1:], "HEAD"); !errors.Is(err, ErrRevisionNotFound) {
		t.Errorf("HEAD without HEAD: %v", err)
	}
}

func TestRefsEncoding(t *testing.T) {
	refs := []*plumbing.Reference{
		plumbing.NewSymbolicReference(plumbing.HEAD, "refs/heads/main"),
		plumbing.NewHashReference("refs/heads/main", plumbing.NewHash(strings.Repeat("1", 40))),
		plumbing.NewHashReference("refs/tags/v1^{}", plumbing.NewHash(strings.Repeat("2", 40))),
	}
	got, err := decodeRefs(encodeRefs(refs))
	if err != nil {
		t.Fatal(err)
	}
	str := func(rs []*plumbing.Reference) (out []string) {
		for _, r := range rs {
			out = append(out, r.String())
		}
		return out
	}
	if d := cmp.Diff(str(refs), str(got)); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
	if _, err := decodeRefs([]byte("{")); err == nil {
		t.Error("decodeRefs accepted garbage")
	}
}
