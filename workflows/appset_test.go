package workflows

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/windlass-cd/windlass/activities/appsets"
	"github.com/windlass-cd/windlass/internal/appset"
)

func testAppSet(t *testing.T, requeue string) appset.ApplicationSet {
	t.Helper()
	set, err := appset.Parse([]byte(`apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: dirs}
spec:
  generators:
  - matrix:
      generators:
      - git: {repoURL: 'https://git.example/Org/Repo.git', revision: HEAD, directories: [{path: '*'}]` + requeue + `}
      - list: {elements: [{c: a}]}
  template:
    metadata: {name: '{{path.basename}}-{{c}}'}
    spec:
      project: team
      source: {repoURL: 'https://git.example/Org/Repo.git', path: '{{path}}'}
      destination: {server: 'https://kubernetes.default.svc', namespace: x}
`))
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func TestAppSetHelpers(t *testing.T) {
	set := testAppSet(t, ", requeueAfterSeconds: 30")
	if diff := cmp.Diff([]string{"git.example/org/repo"}, AppSetRepos(set)); diff != "" {
		t.Errorf("repos (-want +got):\n%s", diff)
	}
	if got := requeueAfter(set); got != 30*time.Second {
		t.Errorf("requeue = %v, want 30s", got)
	}
	if got := requeueAfter(testAppSet(t, "")); got != DefaultRequeueSeconds*time.Second {
		t.Errorf("default requeue = %v", got)
	}
	if got := AppSetProject(set); got != "team" {
		t.Errorf("project = %q", got)
	}
}

// TestAppSetWorkflow drives a set: a pass at start, one per requeue, one
// on a refresh signal, one on evaluate, then a delete that removes the
// apps the last pass left.
func TestAppSetWorkflow(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	set := testAppSet(t, ", requeueAfterSeconds: 60")
	var passes []appsets.ReconcileInput
	env.RegisterActivityWithOptions(func(_ context.Context, in appsets.ReconcileInput) (appsets.ReconcileOutput, error) {
		passes = append(passes, in)
		if len(passes) == 2 {
			return appsets.ReconcileOutput{Apps: in.Owned, Error: "boom", ErrorKind: appsets.ErrKindSource}, nil
		}
		apps := []string{"team/a"}
		if len(passes) > 2 {
			apps = append(apps, "team/b")
		}
		return appsets.ReconcileOutput{Apps: apps, Generated: len(apps), Created: apps[len(apps)-1:]}, nil
	}, activity.RegisterOptions{Name: appsets.ReconcileName})
	var deleted appsets.DeleteAppsInput
	env.RegisterActivityWithOptions(func(_ context.Context, in appsets.DeleteAppsInput) (appsets.DeleteAppsOutput, error) {
		deleted = in
		return appsets.DeleteAppsOutput{Deleted: in.Owned}, nil
	}, activity.RegisterOptions{Name: appsets.DeleteAppsName})
	Register(env)

	query := func() AppSetView {
		t.Helper()
		v, err := env.QueryWorkflow(QueryStatus)
		if err != nil {
			t.Fatal(err)
		}
		var view AppSetView
		if err := v.Get(&view); err != nil {
			t.Fatal(err)
		}
		return view
	}
	// Pass 1 at start; pass 2 by the requeue timer (an error, which
	// keeps the apps); pass 3 by a webhook's refresh.
	env.RegisterDelayedCallback(func() {
		st := query().Status
		if st.Error != "boom" || st.ErrorKind != appsets.ErrKindSource || st.Passes != 2 || st.LastReason != "requeue" {
			t.Errorf("after the requeue: %+v", st)
		}
		if diff := cmp.Diff([]string{"team/a"}, st.Apps); diff != "" {
			t.Errorf("apps after a failed pass (-want +got):\n%s", diff)
		}
		env.SignalWorkflow(SignalRefresh, RefreshRequest{Reason: "push"})
	}, 61*time.Second)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(UpdateEvaluate, "eval", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { t.Errorf("evaluate rejected: %v", err) },
			OnAccept: func() {},
			OnComplete: func(v any, err error) {
				st := v.(AppSetView).Status
				if err != nil || st.Passes != 4 || st.LastReason != "evaluate: now" || st.Error != "" {
					t.Errorf("evaluate answered %+v, %v", st, err)
				}
			},
		}, RefreshRequest{Reason: "now"})
	}, 70*time.Second)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(UpdateDelete, "del", &testsuite.TestUpdateCallback{
			OnReject:   func(err error) { t.Errorf("delete rejected: %v", err) },
			OnAccept:   func() {},
			OnComplete: func(_ any, err error) {},
		}, AppSetDeleteRequest{})
	}, 80*time.Second)
	env.ExecuteWorkflow(ApplicationSetWorkflowName, AppSetInput{Set: set})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var res AppSetDeleteResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"team/a", "team/b"}, res.Deleted); diff != "" {
		t.Errorf("deleted (-want +got):\n%s", diff)
	}
	if deleted.Set != "dirs" {
		t.Errorf("delete input %+v", deleted)
	}
	if len(passes) != 4 || passes[2].Set.Metadata.Name != "dirs" {
		t.Errorf("%d passes", len(passes))
	}
	if diff := cmp.Diff([]string{"team/a"}, passes[2].Owned); diff != "" {
		t.Errorf("pass 3 owned (-want +got):\n%s", diff)
	}
}
