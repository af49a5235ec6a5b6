package cluster

import (
	"strconv"
	"testing"

	"github.com/windlass-cd/windlass/internal/appspec"
)

// A long list keeps MaxResults entries in their order, those that need
// attention first, and counts the rest; a short one is kept whole.
func TestBound(t *testing.T) {
	var rs []ResourceResult
	var st []appspec.ResourceStatus
	for i := range 8000 {
		k := appspec.ResourceKey{Kind: "ConfigMap", Name: strconv.Itoa(i)}
		r := ResourceResult{ResourceKey: k, Action: ActionCreated}
		s := appspec.ResourceStatus{ResourceKey: k, Status: appspec.SyncSynced, Health: appspec.HealthHealthy}
		if i == 7000 {
			r.Hook = true
			s.Status = appspec.SyncOutOfSync
		}
		if i == 7999 {
			r.Action = ActionFailed
			s.Health = appspec.HealthDegraded
		}
		rs, st = append(rs, r), append(st, s)
	}
	got, omitted := boundResults(rs)
	if len(got) != MaxResults || omitted != 8000-MaxResults || got[MaxResults-2].Name != "7000" || got[MaxResults-1].Name != "7999" || got[0].Name != "0" {
		t.Fatalf("boundResults: %d kept, %d omitted, last %v", len(got), omitted, got[len(got)-2:])
	}
	gotS, omitted := boundStatuses(st)
	if len(gotS) != MaxResults || omitted != 8000-MaxResults || gotS[MaxResults-2].Name != "7000" || gotS[MaxResults-1].Name != "7999" {
		t.Fatalf("boundStatuses: %d kept, %d omitted", len(gotS), omitted)
	}
	if short, omitted := boundResults(rs[:10]); len(short) != 10 || omitted != 0 {
		t.Fatalf("a short list: %d kept, %d omitted", len(short), omitted)
	}
}
