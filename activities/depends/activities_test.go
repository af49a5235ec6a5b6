package depends

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/windlass-cd/windlass/internal/appspec"
)

// fakeApps answers from a map keyed by "<project>/<name>".
type fakeApps map[string]State

func (f fakeApps) State(_ context.Context, ref appspec.DependencyRef) (State, bool, error) {
	if ref.Name == "broken" {
		return State{}, false, errors.New("query failed")
	}
	st, ok := f[ref.String()]
	return st, ok, nil
}

func TestCheck(t *testing.T) {
	apps := fakeApps{
		"default/db":    {Sync: appspec.SyncSynced, Health: appspec.HealthHealthy},
		"default/cache": {Sync: appspec.SyncSynced, Health: appspec.HealthProgressing},
		"infra/net":     {Sync: appspec.SyncOutOfSync, Health: appspec.HealthHealthy},
		"default/queue": {Sync: appspec.SyncSynced, Health: appspec.HealthHealthy, Operation: "sync/default/queue/3"},
	}
	a, err := New(apps)
	if err != nil {
		t.Fatal(err)
	}
	ref := func(p, n string) appspec.DependencyRef { return appspec.DependencyRef{Project: p, Name: n} }
	tests := []struct {
		name string
		deps []appspec.DependencyRef
		want []Waiting
	}{
		{name: "ready", deps: []appspec.DependencyRef{ref("default", "db")}},
		{name: "none"},
		{name: "each reason, in order", deps: []appspec.DependencyRef{ref("default", "cache"), ref("default", "db"),
			ref("infra", "net"), ref("default", "queue"), ref("default", "ghost")},
			want: []Waiting{
				{App: ref("default", "cache"), Reason: "is Synced and Progressing; waits for Synced and Healthy"},
				{App: ref("infra", "net"), Reason: "is OutOfSync and Healthy; waits for Synced and Healthy"},
				{App: ref("default", "queue"), Reason: "sync sync/default/queue/3 is running"},
				{App: ref("default", "ghost"), Reason: "does not exist"},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := a.Check(t.Context(), CheckInput{Dependencies: tt.deps})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, out.Waiting); diff != "" {
				t.Errorf("waiting (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := a.Check(t.Context(), CheckInput{Dependencies: []appspec.DependencyRef{ref("default", "broken")}}); err == nil {
		t.Error("Check with an unreadable dependency succeeded")
	}
	if _, err := New(nil); err == nil {
		t.Error("New(nil) succeeded")
	}
}
