package render

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/windlass-cd/windlass/internal/appspec"
)

// knownRevisions answers RevisionMetadata from a map keyed by repo@sha.
type knownRevisions map[string]appspec.RevisionMetadata

func (k knownRevisions) RevisionMetadata(repoURL, sha string) (appspec.RevisionMetadata, bool) {
	m, ok := k[repoURL+"@"+sha]
	return m, ok
}

// TestRenderRevisionMetadata checks that a rendered ref, fresh or from the
// cache, carries the metadata of its first source's commit when the
// worker knows it, and none otherwise.
func TestRenderRevisionMetadata(t *testing.T) {
	git, req := fixtureRequest(t, "a")
	src := req.Sources[0]
	meta := appspec.RevisionMetadata{Message: "guestbook: one ConfigMap", Author: "Ada", Date: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	known := knownRevisions{src.RepoURL + "@" + src.SHA: meta}
	for _, tc := range []struct {
		name      string
		revisions RevisionReader
		want      *appspec.RevisionMetadata
	}{
		{"known commit", known, &meta},
		{"unknown commit", knownRevisions{}, nil},
		{"no reader", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewRenderer(Config{Store: &memStore{}, Git: git, Revisions: tc.revisions, Logger: quietLogger()})
			if err != nil {
				t.Fatal(err)
			}
			for _, pass := range []string{"rendered", "cached"} {
				ref, err := r.Render(t.Context(), req, false)
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(tc.want, ref.RevisionMetadata); d != "" {
					t.Errorf("%s: metadata (-want +got):\n%s", pass, d)
				}
			}
		})
	}
}
