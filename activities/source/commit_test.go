package source

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/internal/appspec"
)

// TestRevisionMetadata reads a commit's subject, author and date once a
// checkout has brought the commit to the worker, from memory and from the
// mirror; it never fetches for it.
func TestRevisionMetadata(t *testing.T) {
	srv := gitServer(t)
	url, w := fixtureRepo(t, srv, "team/meta.git", nil)
	before := time.Now().Add(-time.Second)
	sha := commit(t, w, "\nguestbook: scale the UI to 3 replicas\n\nThe body says why.\n", map[string]string{"app/cm.yaml": "a: 1\n"})
	cacheDir := t.TempDir()
	a, err := New(cacheDir, nil, quietLogger(), WithShallowFetch(false)) // reads the mirror
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := a.RevisionMetadata(url, sha); ok {
		t.Fatalf("metadata %+v before any checkout: want unknown (no fetch)", m)
	}
	if _, err := a.Checkout(t.Context(), url, sha); err != nil {
		t.Fatal(err)
	}
	check := func(name string, a *Activities) {
		t.Helper()
		m, ok := a.RevisionMetadata(url, sha)
		if !ok {
			t.Fatalf("%s: no metadata after the checkout", name)
		}
		if m.Date.Before(before) || m.Date.After(time.Now()) {
			t.Errorf("%s: date %s, want the commit's (after %s)", name, m.Date, before)
		}
		want := appspec.RevisionMetadata{Message: "guestbook: scale the UI to 3 replicas", Author: "windlass-testbed", Date: m.Date}
		if d := cmp.Diff(want, m); d != "" {
			t.Errorf("%s: metadata (-want +got):\n%s", name, d)
		}
	}
	check("remembered by the checkout", a)
	// Another worker process on the same cache: read from the mirror.
	b, err := New(cacheDir, nil, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	check("read from the mirror", b)
	for _, bad := range []string{sha[:12], "not-a-sha"} {
		if m, ok := b.RevisionMetadata(url, bad); ok {
			t.Errorf("metadata %+v for %q: want none", m, bad)
		}
	}
}

func TestSubject(t *testing.T) {
	long := strings.Repeat("é", MaxSubjectRunes+10)
	for _, tc := range []struct{ msg, want string }{
		{"fix: one line", "fix: one line"},
		{"  subject  \n\nbody\nmore", "subject"},
		{"\n\n  after blank lines\r\nbody", "after blank lines"},
		{"", ""},
		{"bad \xff byte", "bad \uFFFD byte"},
		{long, strings.Repeat("é", MaxSubjectRunes-1) + "…"},
	} {
		got := subject(tc.msg)
		if got != tc.want {
			t.Errorf("subject(%q) = %q, want %q", tc.msg, got, tc.want)
		}
	}
}

var _ render.RevisionReader = (*Activities)(nil)
