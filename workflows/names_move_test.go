package workflows

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSyncIDsAcrossMoves(t *testing.T) {
	// Syncs 1–2 ran in a, 3–5 in b, and the app is back in a.
	moves := []ProjectMove{{Project: "a", LastSeq: 2}, {Project: "b", LastSeq: 5}}
	for _, tc := range []struct {
		n    int
		want string
	}{{1, "sync/a/web/1"}, {2, "sync/a/web/2"}, {3, "sync/b/web/3"}, {5, "sync/b/web/5"}, {6, "sync/a/web/6"}} {
		if got := SyncIDOf("a", "web", moves, tc.n); got != tc.want {
			t.Errorf("SyncIDOf(%d) = %s, want %s", tc.n, got, tc.want)
		}
	}
	for _, tc := range []struct {
		id   string
		n    int
		want bool
	}{
		{"sync/a/web/1", 1, true}, {"sync/b/web/4", 4, true}, {"sync/a/web/7", 7, true},
		{"sync/b/web/1", 0, false}, // sync 1 ran in a
		{"sync/a/web/4", 0, false}, // sync 4 ran in b
		{"sync/c/web/1", 0, false}, {"sync/a/other/1", 0, false},
	} {
		n, ok := ParseSyncSeqMoved(tc.id, "a", "web", moves)
		if n != tc.n || ok != tc.want {
			t.Errorf("ParseSyncSeqMoved(%s) = %d, %v; want %d, %v", tc.id, n, ok, tc.n, tc.want)
		}
	}
	if d := cmp.Diff([]string{"a/web", "b/web"}, AppAliases("a", "web", moves)); d != "" {
		t.Errorf("AppAliases (-want +got):\n%s", d)
	}
}
