package workflows

import "github.com/windlass-cd/windlass/internal/appspec"

// historyLimit is how many sync summaries the app keeps: its
// revisionHistoryLimit, at least 1 (the status shows the last sync), or
// maxHistory when unset. 0.1.0 had no such field, so its histories keep
// maxHistory; trimming state issues no command either way.
func historyLimit(spec appspec.Application) int {
	if l := spec.RevisionHistoryLimit; l != nil {
		return max(*l, 1)
	}
	return maxHistory
}
