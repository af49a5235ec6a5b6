package cluster

import "github.com/windlass-cd/windlass/internal/appspec"

// MaxResults bounds the per-resource entries an activity returns to a
// workflow: its result, and the app's state after it, must stay far below
// Temporal's payload limit however many resources an app has (500 entries
// of the longest names take about 200 KB). What is left out is counted.
const MaxResults = 500

// boundResults keeps at most MaxResults of rs, in their order: hooks and
// failures first, then the others in order. It returns how many it left
// out.
func boundResults(rs []ResourceResult) ([]ResourceResult, int) {
	return bound(rs, func(r ResourceResult) bool {
		return r.Hook || r.Action == ActionFailed || r.Action == ActionHookFailed
	})
}

// boundStatuses keeps at most MaxResults of rs, in their order: those out
// of sync or not healthy first, then the others in order. It returns how
// many it left out.
func boundStatuses(rs []appspec.ResourceStatus) ([]appspec.ResourceStatus, int) {
	return bound(rs, func(r appspec.ResourceStatus) bool {
		return r.Status != appspec.SyncSynced || (r.Health != "" && r.Health != appspec.HealthHealthy)
	})
}

func bound[T any](rs []T, first func(T) bool) ([]T, int) {
	if len(rs) <= MaxResults {
		return rs, 0
	}
	keep := make([]bool, len(rs))
	n := 0
	for i, r := range rs {
		if n < MaxResults && first(r) {
			keep[i], n = true, n+1
		}
	}
	for i := range rs {
		if n < MaxResults && !keep[i] {
			keep[i], n = true, n+1
		}
	}
	out := make([]T, 0, MaxResults)
	for i, r := range rs {
		if keep[i] {
			out = append(out, r)
		}
	}
	return out, len(rs) - len(out)
}
