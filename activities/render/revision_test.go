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

// RenderQuick renders only Git sources at a commit the worker has read,
// without a chart or plugin; otherwise it answers false and renders
// nothing, leaving the render to the activity.
func TestRenderQuick(t *testing.T) {
	git, req := fixtureRequest(t, "a")
	src := req.Sources[0]
	known := knownRevisions{src.RepoURL + "@" + src.SHA: {Message: "guestbook"}}
	with := func(f func(s *SourceRequest)) Request {
		r := req
		r.Sources = []SourceRequest{src}
		f(&r.Sources[0])
		return r
	}
	for _, tc := range []struct {
		name      string
		revisions RevisionReader
		req       Request
		want      bool
	}{
		{"a commit the worker has read", known, req, true},
		{"a commit the worker has not read", knownRevisions{}, req, false},
		{"no revision reader", nil, req, false},
		{"a chart", known, with(func(s *SourceRequest) { s.Chart = "guestbook" }), false},
		{"a plugin", known, with(func(s *SourceRequest) { s.Plugin = &appspec.Plugin{Name: "cmp"} }), false},
		{"an OCI artifact", known, with(func(s *SourceRequest) { s.RepoURL = "oci://registry.example/guestbook" }), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &memStore{}
			r, err := NewRenderer(Config{Store: store, Git: git, Revisions: tc.revisions, Logger: quietLogger()})
			if err != nil {
				t.Fatal(err)
			}
			ref, ok := r.RenderQuick(t.Context(), tc.req)
			if ok != tc.want {
				t.Fatalf("RenderQuick = %v, want %v", ok, tc.want)
			}
			if _, cached := r.Cached(t.Context(), tc.req); cached != tc.want || (ok && ref.Count == 0) {
				t.Fatalf("after RenderQuick: cached %v, %d objects", cached, ref.Count)
			}
		})
	}
}
