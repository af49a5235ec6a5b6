package workflows

import (
	"fmt"
	"testing"

	"github.com/windlass-cd/windlass/internal/appspec"
)

// record keeps the spec's revisionHistoryLimit of summaries, newest first.
func TestRecordKeepsHistoryLimit(t *testing.T) {
	limit := func(n int) *int { return &n }
	tests := []struct {
		name  string
		limit *int
		want  int
	}{
		{"unset keeps maxHistory", nil, maxHistory},
		{"limit", limit(3), 3},
		{"zero keeps the last", limit(0), 1},
		{"above the syncs", limit(50), maxHistory + 5},
	}
	for _, tt := range tests {
		a := &application{st: AppState{Spec: appspec.Application{RevisionHistoryLimit: tt.limit}}}
		for i := range maxHistory + 5 {
			a.record(SyncResult{SyncSummary: SyncSummary{ID: fmt.Sprint(i)}})
		}
		if len(a.st.History) != tt.want || a.st.History[0].ID != fmt.Sprint(maxHistory+4) {
			t.Errorf("%s: kept %d summaries (newest %s), want %d", tt.name, len(a.st.History), a.st.History[0].ID, tt.want)
		}
	}
}
