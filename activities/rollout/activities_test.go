package rollout

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/windlass-cd/windlass/internal/appspec"
)

// fakeApps answers from a map keyed by "<project>/<name>" and records
// the syncs it is asked for.
type fakeApps struct {
	states  map[string]AppState
	syncErr error
	asked   []string
	// sets answers SetApps by set name; read records the apps State read
	// and lists the sets listed.
	sets  map[string][]AppRef
	read  []string
	lists []string
}

func (f *fakeApps) State(_ context.Context, project, name string) (AppState, bool, error) {
	f.read = append(f.read, project+"/"+name)
	if name == "broken" {
		return AppState{}, false, errors.New("query failed")
	}
	st, ok := f.states[project+"/"+name]
	return st, ok, nil
}

func (f *fakeApps) SetApps(_ context.Context, set string) (map[AppRef]AppState, error) {
	f.lists = append(f.lists, set)
	if set == "broken" {
		return nil, errors.New("list failed")
	}
	out := map[AppRef]AppState{}
	for _, r := range f.sets[set] {
		out[r] = f.states[r.String()]
	}
	return out, nil
}

func (f *fakeApps) Sync(_ context.Context, project, name, initiator, updateID string) (string, error) {
	f.asked = append(f.asked, fmt.Sprintf("%s/%s %s %s", project, name, initiator, updateID))
	if f.syncErr != nil {
		return "", f.syncErr
	}
	return "sync/" + project + "/" + name + "/9", nil
}

func ref(name string) AppRef { return AppRef{Project: "default", Name: name} }

func TestSync(t *testing.T) {
	const key = "rollout appset/web@v2 try 1"
	tests := []struct {
		name      string
		app       string
		states    map[string]AppState
		syncErr   error
		want      string
		wantAsked []string
		wantType  string // error type, "" for a retryable error or none
		wantErr   bool
	}{
		{name: "asks", app: "a", states: map[string]AppState{"default/a": {}},
			want: "sync/default/a/9", wantAsked: []string{"default/a " + key + " " + key}},
		{name: "finds the running one", app: "a",
			states: map[string]AppState{"default/a": {Operation: &PastSync{ID: "sync/default/a/4", Initiator: key}}},
			want:   "sync/default/a/4"},
		{name: "finds a recorded one", app: "a",
			states: map[string]AppState{"default/a": {Syncs: []PastSync{{ID: "sync/default/a/2", Initiator: "admin"}, {ID: "sync/default/a/3", Initiator: key, Done: true}}}},
			want:   "sync/default/a/3"},
		{name: "another initiator's operation", app: "a",
			states:  map[string]AppState{"default/a": {Operation: &PastSync{ID: "sync/default/a/4", Initiator: "admin"}}},
			syncErr: fmt.Errorf("%w: busy", ErrBusy), wantAsked: []string{"default/a " + key + " " + key}, wantErr: true},
		{name: "refused", app: "a", states: map[string]AppState{"default/a": {}},
			syncErr: fmt.Errorf("%w: sync window", ErrRefused), wantAsked: []string{"default/a " + key + " " + key},
			wantType: ErrTypeRefused, wantErr: true},
		{name: "missing", app: "ghost", wantType: ErrTypeAppNotFound, wantErr: true},
		{name: "unreadable", app: "broken", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			apps := &fakeApps{states: tt.states, syncErr: tt.syncErr}
			a, err := New(apps)
			if err != nil {
				t.Fatal(err)
			}
			out, err := a.Sync(t.Context(), SyncInput{App: ref(tt.app), Key: key})
			if (err != nil) != tt.wantErr {
				t.Fatalf("Sync error = %v, want error %v", err, tt.wantErr)
			}
			var appErr *temporal.ApplicationError
			if tt.wantType != "" && (!errors.As(err, &appErr) || appErr.Type() != tt.wantType || !appErr.NonRetryable()) {
				t.Errorf("Sync error = %v, want a non-retryable %s", err, tt.wantType)
			}
			if tt.wantType == "" && errors.As(err, &appErr) && appErr.NonRetryable() {
				t.Errorf("Sync error = %v, want a retryable one", err)
			}
			if out.SyncID != tt.want {
				t.Errorf("SyncID = %q, want %q", out.SyncID, tt.want)
			}
			if diff := cmp.Diff(tt.wantAsked, apps.asked); diff != "" {
				t.Errorf("syncs asked (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := New(nil); err == nil {
		t.Error("New(nil) succeeded")
	}
}

func TestCheck(t *testing.T) {
	const id = "sync/default/%s/1"
	done := func(name, sha string, ok bool, msg string) []PastSync {
		return []PastSync{{ID: fmt.Sprintf(id, name), SHA: sha, Done: true, Succeeded: ok, Message: msg}}
	}
	synced, healthy := appspec.SyncSynced, appspec.HealthHealthy
	apps := &fakeApps{states: map[string]AppState{
		"default/ok":        {Sync: synced, Health: healthy, SHA: "s2", Syncs: done("ok", "s2", true, "")},
		"default/running":   {Sync: synced, Health: healthy, SHA: "s1", Operation: &PastSync{ID: fmt.Sprintf(id, "running")}},
		"default/unseen":    {Sync: synced, Health: healthy},
		"default/failed":    {Sync: appspec.SyncOutOfSync, Health: healthy, Syncs: done("failed", "s2", false, "apply: forbidden")},
		"default/degraded":  {Sync: synced, Health: appspec.HealthDegraded, SHA: "s2", Syncs: done("degraded", "s2", true, "")},
		"default/settling":  {Sync: synced, Health: appspec.HealthProgressing, SHA: "s2", Syncs: done("settling", "s2", true, "")},
		"default/stale":     {Sync: synced, Health: healthy, SHA: "s1", Syncs: done("stale", "s2", true, "")},
		"default/another":   {Sync: synced, Health: healthy, SHA: "s2", Syncs: done("another", "s2", true, ""), Operation: &PastSync{ID: "sync/default/another/2"}},
		"default/nocompare": {Sync: appspec.SyncOutOfSync, Health: healthy, SHA: "s2", Syncs: done("nocompare", "s2", true, "")},
	}}
	a, err := New(apps)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"ok", "running", "unseen", "failed", "degraded", "settling", "stale", "another", "nocompare", "ghost"}
	var in CheckInput
	for _, n := range names {
		in.Apps = append(in.Apps, AppSync{App: ref(n), SyncID: fmt.Sprintf(id, n)})
	}
	out, err := a.Check(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	want := []Verdict{
		{App: ref("ok"), Verdict: Healthy},
		{App: ref("running"), Verdict: Progressing, Message: "sync sync/default/running/1 is running"},
		{App: ref("unseen"), Verdict: Progressing, Message: "sync sync/default/unseen/1 is not recorded yet"},
		{App: ref("failed"), Verdict: Failed, Message: "sync sync/default/failed/1 failed: apply: forbidden"},
		{App: ref("degraded"), Verdict: Failed, Message: "is Degraded after sync sync/default/degraded/1"},
		{App: ref("settling"), Verdict: Progressing, Message: "is Synced and Progressing; waits for Synced and Healthy"},
		{App: ref("stale"), Verdict: Progressing, Message: "is at s1, sync sync/default/stale/1 applied s2"},
		{App: ref("another"), Verdict: Progressing, Message: "sync sync/default/another/2 is running"},
		{App: ref("nocompare"), Verdict: Progressing, Message: "is OutOfSync and Healthy; waits for Synced and Healthy"},
		{App: ref("ghost"), Verdict: Failed, Message: "the application does not exist"},
	}
	if diff := cmp.Diff(want, out.Apps); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s", diff)
	}
	if _, err := a.Check(t.Context(), CheckInput{Apps: []AppSync{{App: ref("broken")}}}); err == nil {
		t.Error("Check of an unreadable app succeeded")
	}
}

// Plan reads labels, sync and revision, sorted, and skips gone apps; its
// digest moves with any app's revision and only then.
func TestPlan(t *testing.T) {
	states := map[string]AppState{
		"default/b": {Sync: appspec.SyncSynced, SHA: "s1", Labels: map[string]string{"env": "prod"}},
		"default/a": {Sync: appspec.SyncOutOfSync, SHA: "s1", Labels: map[string]string{"env": "dev"}},
		"other/c":   {Sync: appspec.SyncUnknown},
	}
	a, err := New(&fakeApps{states: states})
	if err != nil {
		t.Fatal(err)
	}
	env := (&testsuite.WorkflowTestSuite{}).NewTestActivityEnvironment()
	env.RegisterActivity(a.Plan)
	plan := func() PlanOutput {
		t.Helper()
		v, err := env.ExecuteActivity(a.Plan, PlanInput{Apps: []AppRef{ref("b"), {Project: "other", Name: "c"}, ref("gone"), ref("a")}})
		if err != nil {
			t.Fatal(err)
		}
		var out PlanOutput
		if err := v.Get(&out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	got := plan()
	want := []PlannedApp{
		{Project: "default", Name: "a", Labels: map[string]string{"env": "dev"}, Sync: "OutOfSync", SHA: "s1"},
		{Project: "default", Name: "b", Labels: map[string]string{"env": "prod"}, Sync: "Synced", SHA: "s1"},
		{Project: "other", Name: "c", Sync: "Unknown"},
	}
	if d := cmp.Diff(want, got.Apps); d != "" {
		t.Errorf("apps (-want +got):\n%s", d)
	}
	if got.OutOfSync != 2 || got.Uncompared != 1 || len(got.Revisions) != 12 {
		t.Errorf("outOfSync %d, uncompared %d, revisions %q", got.OutOfSync, got.Uncompared, got.Revisions)
	}
	// A change of sync status leaves the digest; a new revision moves it.
	states["default/a"] = AppState{Sync: appspec.SyncSynced, SHA: "s1"}
	if again := plan(); again.Revisions != got.Revisions {
		t.Errorf("digest moved with a sync status: %s → %s", got.Revisions, again.Revisions)
	}
	states["default/b"] = AppState{Sync: appspec.SyncOutOfSync, SHA: "s2"}
	if again := plan(); again.Revisions == got.Revisions {
		t.Error("digest did not move with a new revision")
	}
}

// With the set named, Plan reads the set's apps in one list and reads on
// its own only an app the list misses; a failed list fails the plan.
func TestPlanListsTheSet(t *testing.T) {
	states := map[string]AppState{
		"default/b": {Sync: appspec.SyncSynced, SHA: "s1", Labels: map[string]string{"env": "prod"}},
		"default/a": {Sync: appspec.SyncOutOfSync, SHA: "s1", Labels: map[string]string{"env": "dev"}},
		"other/c":   {Sync: appspec.SyncUnknown},
	}
	refs := []AppRef{ref("b"), {Project: "other", Name: "c"}, ref("gone"), ref("a")}
	tests := []struct {
		name      string
		set       string
		wantRead  []string
		wantLists []string
		wantErr   string
	}{
		{name: "each app read", set: "", wantRead: []string{"default/a", "default/b", "default/gone", "other/c"}},
		// c is not listed yet (visibility lags a new app): read on its own.
		{name: "one list", set: "web", wantRead: []string{"default/gone", "other/c"}, wantLists: []string{"web"}},
		{name: "list fails", set: "broken", wantLists: []string{"broken"}, wantErr: "list the apps of set broken"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			apps := &fakeApps{states: states, sets: map[string][]AppRef{"web": {ref("a"), ref("b")}}}
			a, err := New(apps)
			if err != nil {
				t.Fatal(err)
			}
			env := (&testsuite.WorkflowTestSuite{}).NewTestActivityEnvironment()
			env.RegisterActivity(a.Plan)
			v, err := env.ExecuteActivity(a.Plan, PlanInput{Set: tt.set, Apps: refs})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				var out PlanOutput
				if err := v.Get(&out); err != nil {
					t.Fatal(err)
				}
				want := []PlannedApp{
					{Project: "default", Name: "a", Labels: map[string]string{"env": "dev"}, Sync: "OutOfSync", SHA: "s1"},
					{Project: "default", Name: "b", Labels: map[string]string{"env": "prod"}, Sync: "Synced", SHA: "s1"},
					{Project: "other", Name: "c", Sync: "Unknown"},
				}
				if d := cmp.Diff(want, out.Apps); d != "" {
					t.Errorf("apps (-want +got):\n%s", d)
				}
			}
			if d := cmp.Diff(tt.wantRead, apps.read); d != "" {
				t.Errorf("apps read one by one (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.wantLists, apps.lists); d != "" {
				t.Errorf("sets listed (-want +got):\n%s", d)
			}
		})
	}
}
