package workflows

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/windlass-cd/windlass/activities/appsets"
	"github.com/windlass-cd/windlass/activities/rollout"
	"github.com/windlass-cd/windlass/internal/appset"
)

func rollingSet(t *testing.T) appset.ApplicationSet {
	t.Helper()
	set, err := appset.Parse([]byte(`apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: web}
spec:
  generators:
  - git: {repoURL: 'https://git.example/r.git', revision: HEAD, directories: [{path: '*'}], requeueAfterSeconds: 60}
  strategy:
    type: RollingSync
    deletionOrder: Reverse
    rollingSync:
      steps:
      - matchExpressions: [{key: env, operator: In, values: [dev]}]
      - matchExpressions: [{key: env, operator: In, values: [prod]}]
  template:
    metadata: {name: '{{path.basename}}', labels: {env: '{{path.basename}}'}}
    spec:
      project: team
      source: {repoURL: 'https://git.example/r.git', path: '{{path}}'}
      destination: {server: 'https://kubernetes.default.svc', namespace: x}
`))
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// TestAppSetStartsItsRollout drives a RollingSync set: its new apps are
// planned once they have compared, a rollout syncs step 1 then step 2, a
// new revision replaces the running rollout with one to the new target,
// an unchanged plan starts none, and the deletion removes step 2's app
// and waits before step 1's.
func TestAppSetStartsItsRollout(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	var mu sync.Mutex
	var syncs, deletes []string
	plans, checks := 0, 0
	env.RegisterActivityWithOptions(func(_ context.Context, in appsets.ReconcileInput) (appsets.ReconcileOutput, error) {
		out := appsets.ReconcileOutput{Apps: []string{"team/dev", "team/prod"}, Generated: 2}
		if len(in.Owned) == 0 {
			out.Created = out.Apps
		}
		return out, nil
	}, activity.RegisterOptions{Name: appsets.ReconcileName})
	env.RegisterActivityWithOptions(func(_ context.Context, in rollout.PlanInput) (rollout.PlanOutput, error) {
		mu.Lock()
		defer mu.Unlock()
		plans++
		if in.Set != "web" {
			return rollout.PlanOutput{}, fmt.Errorf("plan of set %q, want web (its apps in one list)", in.Set)
		}
		out := rollout.PlanOutput{Revisions: "r1", OutOfSync: 2}
		switch {
		case plans == 1:
			out.Uncompared = 2 // just created
		case plans >= 3:
			out.Revisions = "r2" // a commit reached the apps
		}
		for _, a := range in.Apps {
			out.Apps = append(out.Apps, rollout.PlannedApp{Project: a.Project, Name: a.Name, Labels: map[string]string{"env": a.Name}})
		}
		return out, nil
	}, activity.RegisterOptions{Name: rollout.PlanName})
	env.RegisterActivityWithOptions(func(_ context.Context, in rollout.SyncInput) (rollout.SyncOutput, error) {
		mu.Lock()
		defer mu.Unlock()
		syncs = append(syncs, in.App.Name+" "+strings.TrimPrefix(in.Key, "rollout appset/web/rollout@"))
		return rollout.SyncOutput{SyncID: in.App.Name + "@" + in.Key}, nil
	}, activity.RegisterOptions{Name: rollout.SyncName})
	env.RegisterActivityWithOptions(func(_ context.Context, in rollout.CheckInput) (rollout.CheckOutput, error) {
		mu.Lock()
		checks++
		mu.Unlock()
		var out rollout.CheckOutput
		for _, a := range in.Apps {
			v := rollout.Verdict{App: a.App, Verdict: rollout.Healthy}
			if a.App.Name == "prod" && strings.Contains(a.SyncID, "g1-r1") {
				v.Verdict = rollout.Progressing // the first rollout never ends
			}
			out.Apps = append(out.Apps, v)
		}
		return out, nil
	}, activity.RegisterOptions{Name: rollout.CheckName})
	env.RegisterActivityWithOptions(func(_ context.Context, in appsets.DeleteAppsInput) (appsets.DeleteAppsOutput, error) {
		mu.Lock()
		defer mu.Unlock()
		deletes = append(deletes, strings.Join(in.Owned, ",")+" exact="+map[bool]string{true: "yes", false: "no"}[in.Exact])
		return appsets.DeleteAppsOutput{Deleted: in.Owned}, nil
	}, activity.RegisterOptions{Name: appsets.DeleteAppsName})
	Register(env)

	query := func() AppSetStatus {
		t.Helper()
		v, err := env.QueryWorkflow(QueryStatus)
		if err != nil {
			t.Fatal(err)
		}
		var view AppSetView
		if err := v.Get(&view); err != nil {
			t.Fatal(err)
		}
		return view.Status
	}
	env.RegisterDelayedCallback(func() {
		ro := query().Rollout
		if ro == nil || ro.Started != 1 || ro.Target != "g1-r1" {
			t.Errorf("before the commit: rollout %+v", ro)
		}
	}, 50*time.Second)
	// The requeue pass at 60 s plans r2; a refresh at 70 s plans r2 again.
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalRefresh, RefreshRequest{Reason: "push"}) }, 70*time.Second)
	env.RegisterDelayedCallback(func() {
		ro := query().Rollout
		if ro == nil || ro.Started != 2 || ro.Target != "g1-r2" || ro.Message != "" {
			t.Errorf("after the commit: rollout %+v", ro)
		}
		env.UpdateWorkflow(UpdateDelete, "del", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { t.Errorf("delete rejected: %v", err) }, OnAccept: func() {}, OnComplete: func(any, error) {},
		}, AppSetDeleteRequest{})
	}, 80*time.Second)
	env.ExecuteWorkflow(ApplicationSetWorkflowName, AppSetInput{Set: rollingSet(t)})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"dev g1-r1 try 1", "prod g1-r1 try 1", "dev g1-r2 try 1", "prod g1-r2 try 1"}, syncs); d != "" {
		t.Errorf("syncs (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"team/prod exact=yes", "team/dev exact=yes", " exact=no"}, deletes); d != "" {
		t.Errorf("deletions (-want +got):\n%s", d)
	}
	// A canceled rollout stops at once (it once spun on its checks).
	if checks > 30 {
		t.Errorf("%d checks of the apps, want a few", checks)
	}
	if plans != 5 {
		t.Errorf("%d plans, want 5 (created, compared, requeue, refresh, delete)", plans)
	}
}

// A set whose strategy is dropped cancels its rollout and forgets it.
func TestAppSetDropsItsRollout(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	checks := 0
	env.RegisterActivityWithOptions(func(_ context.Context, in appsets.ReconcileInput) (appsets.ReconcileOutput, error) {
		out := appsets.ReconcileOutput{Apps: []string{"team/dev"}, Generated: 1}
		if len(in.Owned) == 0 {
			out.Created = out.Apps
		}
		return out, nil
	}, activity.RegisterOptions{Name: appsets.ReconcileName})
	env.RegisterActivityWithOptions(func(_ context.Context, in rollout.PlanInput) (rollout.PlanOutput, error) {
		return rollout.PlanOutput{Revisions: "r1", OutOfSync: 1, Apps: []rollout.PlannedApp{{Project: "team", Name: "dev", Labels: map[string]string{"env": "dev"}}}}, nil
	}, activity.RegisterOptions{Name: rollout.PlanName})
	env.RegisterActivityWithOptions(func(_ context.Context, in rollout.SyncInput) (rollout.SyncOutput, error) {
		return rollout.SyncOutput{SyncID: "s1"}, nil
	}, activity.RegisterOptions{Name: rollout.SyncName})
	env.RegisterActivityWithOptions(func(_ context.Context, in rollout.CheckInput) (rollout.CheckOutput, error) {
		checks++
		return rollout.CheckOutput{Apps: []rollout.Verdict{{App: in.Apps[0].App, Verdict: rollout.Progressing}}}, nil
	}, activity.RegisterOptions{Name: rollout.CheckName})
	Register(env)
	plain := rollingSet(t)
	plain.Spec.Strategy = nil
	var before int
	checked := false
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(UpdateSetSpec, "spec", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { t.Errorf("setSpec rejected: %v", err) }, OnAccept: func() {}, OnComplete: func(any, error) {},
		}, plain)
	}, 20*time.Second)
	env.RegisterDelayedCallback(func() { before = checks }, 30*time.Second)
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(QueryStatus)
		if err != nil {
			t.Fatal(err)
		}
		var view AppSetView
		if err := v.Get(&view); err != nil {
			t.Fatal(err)
		}
		if view.Status.Rollout != nil {
			t.Errorf("rollout %+v kept after the strategy went", view.Status.Rollout)
		}
		if before == 0 || checks != before {
			t.Errorf("checks: %d before the strategy went, %d after; want some, then no more", before, checks)
		}
		checked = true
		env.CancelWorkflow()
	}, 200*time.Second)
	env.ExecuteWorkflow(ApplicationSetWorkflowName, AppSetInput{Set: rollingSet(t)})
	if !checked {
		t.Fatalf("the set ended before the checks: %v", env.GetWorkflowError())
	}
}
