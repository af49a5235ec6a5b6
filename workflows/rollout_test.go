package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/suite"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/windlass-cd/windlass/activities/rollout"
	"github.com/windlass-cd/windlass/internal/labelmatch"
)

type rolloutSuite struct {
	suite.Suite
	testsuite.WorkflowTestSuite
	env   *testsuite.TestWorkflowEnvironment
	world *fakeRolloutWorld
}

func TestRolloutSuite(t *testing.T) { suite.Run(t, new(rolloutSuite)) }

func (s *rolloutSuite) SetupTest() {
	s.env = s.NewTestWorkflowEnvironment()
	s.env.RegisterWorkflowWithOptions(RollingSyncWorkflow, workflow.RegisterOptions{Name: RollingSyncWorkflowName})
	s.world = &fakeRolloutWorld{checksToHealthy: 2, degraded: map[string]int{}, refuse: map[string]bool{}, checks: map[string]int{}}
	s.env.RegisterActivityWithOptions(s.world.sync, activity.RegisterOptions{Name: rollout.SyncName})
	s.env.RegisterActivityWithOptions(s.world.check, activity.RegisterOptions{Name: rollout.CheckName})
}

// fakeRolloutWorld plays the apps: a sync becomes Healthy after
// checksToHealthy checks, unless the app is Degraded for its first
// degraded[app] attempts.
type fakeRolloutWorld struct {
	mu              sync.Mutex
	checksToHealthy int
	degraded        map[string]int
	refuse          map[string]bool
	// syncs lists "<project>/<name> <key>" in the order they were asked.
	syncs []string
	// healthy lists the apps in the order they were first seen Healthy.
	healthy []string
	// inFlight is the most syncs seen unfinished at once per step prefix.
	inFlight, maxInFlight int
	checks                map[string]int
}

func (w *fakeRolloutWorld) sync(_ context.Context, in rollout.SyncInput) (rollout.SyncOutput, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.refuse[in.App.Name] {
		return rollout.SyncOutput{}, temporal.NewNonRetryableApplicationError("sync "+in.App.String()+": sync window", rollout.ErrTypeRefused, nil)
	}
	w.syncs = append(w.syncs, in.App.String()+" "+in.Key)
	w.inFlight++
	w.maxInFlight = max(w.maxInFlight, w.inFlight)
	return rollout.SyncOutput{SyncID: "sync/" + in.App.String() + "/" + tryOf(in.Key)}, nil
}

func tryOf(key string) string { return key[strings.LastIndex(key, " ")+1:] }

func (w *fakeRolloutWorld) check(_ context.Context, in rollout.CheckInput) (rollout.CheckOutput, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out rollout.CheckOutput
	for _, a := range in.Apps {
		w.checks[a.SyncID]++
		v := rollout.Verdict{App: a.App, Verdict: rollout.Progressing, Message: "settling"}
		n := w.checks[a.SyncID]
		attempt := a.SyncID[strings.LastIndex(a.SyncID, "/")+1:]
		switch {
		case n < w.checksToHealthy:
		case w.degraded[a.App.Name] > 0 && attempt <= string(rune('0'+w.degraded[a.App.Name])):
			v = rollout.Verdict{App: a.App, Verdict: rollout.Failed, Message: "is Degraded after sync " + a.SyncID}
			if n == w.checksToHealthy {
				w.inFlight--
			}
		default:
			v = rollout.Verdict{App: a.App, Verdict: rollout.Healthy}
			if n == w.checksToHealthy {
				w.inFlight--
				w.healthy = append(w.healthy, a.App.Name)
			}
		}
		out.Apps = append(out.Apps, v)
	}
	return out, nil
}

func envIn(v ...string) []labelmatch.Expression {
	return []labelmatch.Expression{{Key: "env", Operator: labelmatch.OpIn, Values: v}}
}

func rolloutApp(name, env string) RolloutApp {
	a := RolloutApp{Project: "default", Name: name}
	if env != "" {
		a.Labels = map[string]string{"env": env}
	}
	return a
}

// threeSteps is dev, then staging, then prod one app at a time; x has no
// env label and no step selects it.
func threeSteps() RolloutInput {
	return RolloutInput{Set: "web", Project: "default", Target: "v2",
		Steps: []RolloutStep{{MatchExpressions: envIn("dev")}, {MatchExpressions: envIn("staging")},
			{MatchExpressions: envIn("prod"), MaxUpdate: &MaxUpdate{Value: 1}}},
		Apps: []RolloutApp{rolloutApp("p2", "prod"), rolloutApp("d1", "dev"), rolloutApp("x", ""), rolloutApp("s1", "staging"),
			rolloutApp("p1", "prod"), rolloutApp("d2", "dev")},
	}
}

func key(try string) string { return "rollout appset/web/rollout@v2 try " + try }

func (s *rolloutSuite) result() RolloutStatus {
	s.Require().True(s.env.IsWorkflowCompleted())
	s.Require().NoError(s.env.GetWorkflowError())
	var st RolloutStatus
	s.Require().NoError(s.env.GetWorkflowResult(&st))
	return st
}

func (s *rolloutSuite) query() RolloutStatus {
	v, err := s.env.QueryWorkflow(QueryRollout)
	s.Require().NoError(err)
	var st RolloutStatus
	s.Require().NoError(v.Get(&st))
	return st
}

func (s *rolloutSuite) update(name string, c RolloutControl) *updateOutcome {
	o := &updateOutcome{}
	s.env.UpdateWorkflow(name, "", &testsuite.TestUpdateCallback{
		OnReject:   func(e error) { o.err = e },
		OnAccept:   func() { o.accepted = true },
		OnComplete: func(v any, e error) { o.result, o.err = v, e },
	}, c)
	return o
}

// Steps run in order, each after the previous one's apps are Healthy;
// maxUpdate 1 syncs prod's apps one after the other; x is never synced.
func (s *rolloutSuite) TestStepsInOrder() {
	s.env.ExecuteWorkflow(RollingSyncWorkflowName, threeSteps())
	st := s.result()
	s.Equal([]string{"default/d1 " + key("1"), "default/d2 " + key("1"), "default/s1 " + key("1"),
		"default/p1 " + key("1"), "default/p2 " + key("1")}, s.world.syncs)
	s.Equal([]string{"d1", "d2", "s1", "p1", "p2"}, s.world.healthy)
	s.Equal(RolloutCompleted, st.Phase)
	s.Equal(3, st.Step)
	s.Equal([]string{"default/x"}, st.Unmatched)
	want := []RolloutStepStatus{
		{Phase: StepCompleted, MaxUpdate: 2, Apps: []RolloutAppStatus{
			{Project: "default", Name: "d1", Phase: RolloutAppHealthy, SyncID: "sync/default/d1/1", Attempt: 1},
			{Project: "default", Name: "d2", Phase: RolloutAppHealthy, SyncID: "sync/default/d2/1", Attempt: 1}}},
		{Phase: StepCompleted, MaxUpdate: 1, Apps: []RolloutAppStatus{
			{Project: "default", Name: "s1", Phase: RolloutAppHealthy, SyncID: "sync/default/s1/1", Attempt: 1}}},
		{Phase: StepCompleted, MaxUpdate: 1, Apps: []RolloutAppStatus{
			{Project: "default", Name: "p1", Phase: RolloutAppHealthy, SyncID: "sync/default/p1/1", Attempt: 1},
			{Project: "default", Name: "p2", Phase: RolloutAppHealthy, SyncID: "sync/default/p2/1", Attempt: 1}}},
	}
	if diff := cmp.Diff(want, st.Steps); diff != "" {
		s.Fail("steps (-want +got)", diff)
	}
	s.Equal(2, s.world.maxInFlight, "dev's two apps sync together, prod's one at a time")
}

// A Degraded app halts its step: later steps never sync, the status names
// the app; resume syncs it again and the rollout completes.
func (s *rolloutSuite) TestDegradedHaltsUntilResume() {
	s.world.degraded["s1"] = 1
	var halted RolloutStatus
	var early, resumed *updateOutcome
	s.env.RegisterDelayedCallback(func() {
		halted = s.query()
		early = s.update(UpdateRolloutPause, RolloutControl{})
		resumed = s.update(UpdateRolloutResume, RolloutControl{Initiator: "alice", Reason: "fixed"})
	}, 10*time.Minute)
	s.env.ExecuteWorkflow(RollingSyncWorkflowName, threeSteps())
	st := s.result()
	s.Equal(RolloutHalted, halted.Phase)
	s.Equal(1, halted.Step)
	s.Equal("default/s1", halted.HaltedBy)
	s.Equal("halted at step 2: default/s1: is Degraded after sync sync/default/s1/1", halted.Message)
	s.Equal(StepHalted, halted.Steps[1].Phase)
	s.Equal(StepWaiting, halted.Steps[2].Phase)
	s.Require().Error(early.err)
	s.Contains(early.err.Error(), "cannot pause a rollout that is Halted")
	s.Require().NoError(resumed.err)
	// Before the resume, prod never synced; after it s1 synced once more.
	s.Equal([]string{"default/d1 " + key("1"), "default/d2 " + key("1"), "default/s1 " + key("1"),
		"default/s1 " + key("2"), "default/p1 " + key("1"), "default/p2 " + key("1")}, s.world.syncs)
	s.Equal(RolloutCompleted, st.Phase)
	s.Equal(2, st.Steps[1].Apps[0].Attempt)
	s.Empty(st.HaltedBy)
}

// Pause holds the next syncs until resume; abort ends the rollout and
// later steps never sync.
func (s *rolloutSuite) TestPauseResumeAbort() {
	var paused, aborted, resumeRunning *updateOutcome
	var whilePaused []string
	s.env.RegisterDelayedCallback(func() { paused = s.update(UpdateRolloutPause, RolloutControl{Initiator: "bob"}) }, time.Second)
	s.env.RegisterDelayedCallback(func() {
		s.world.mu.Lock()
		whilePaused = slices.Clone(s.world.syncs)
		s.world.mu.Unlock()
		s.Equal(RolloutPaused, s.query().Phase)
		s.update(UpdateRolloutResume, RolloutControl{})
	}, time.Hour)
	s.env.RegisterDelayedCallback(func() {
		resumeRunning = s.update(UpdateRolloutResume, RolloutControl{})
		aborted = s.update(UpdateRolloutAbort, RolloutControl{Initiator: "bob", Reason: "bad release"})
	}, time.Hour+5*time.Second)
	s.env.ExecuteWorkflow(RollingSyncWorkflowName, threeSteps())
	st := s.result()
	s.Require().NoError(paused.err)
	s.Require().NoError(aborted.err)
	s.Require().Error(resumeRunning.err)
	s.Equal([]string{"default/d1 " + key("1"), "default/d2 " + key("1")}, whilePaused)
	s.Equal(RolloutAborted, st.Phase)
	s.Equal("aborted by bob: bad release", st.Message)
	for _, sy := range s.world.syncs {
		s.NotContains(sy, "default/p", "prod synced after the abort")
	}
}

// A sync the app refuses halts the rollout at once.
func (s *rolloutSuite) TestRefusedSyncHalts() {
	s.world.refuse["d2"] = true
	var halted RolloutStatus
	s.env.RegisterDelayedCallback(func() { halted = s.query(); s.update(UpdateRolloutAbort, RolloutControl{}) }, time.Minute)
	s.env.ExecuteWorkflow(RollingSyncWorkflowName, threeSteps())
	st := s.result()
	s.Equal(RolloutHalted, halted.Phase)
	s.Equal("default/d2", halted.HaltedBy)
	s.Contains(halted.Message, "halted at step 1: default/d2: sync default/d2: sync window")
	s.Equal(RolloutAborted, st.Phase)
	s.Equal([]string{"default/d1 " + key("1")}, s.world.syncs)
}

// A run whose history is long continues as new with its state: the new
// run resumes at the same step and syncs no app twice.
func (s *rolloutSuite) TestContinueAsNewCarriesState() {
	in := threeSteps()
	s.env.RegisterDelayedCallback(func() { s.env.SetContinueAsNewSuggested(true) }, 5*time.Second)
	s.env.ExecuteWorkflow(RollingSyncWorkflowName, in)
	s.Require().True(s.env.IsWorkflowCompleted())
	var can *workflow.ContinueAsNewError
	s.Require().True(errors.As(s.env.GetWorkflowError(), &can), "error %v", s.env.GetWorkflowError())
	var next RolloutInput
	s.Require().NoError(converterFor().FromPayloads(can.Input, &next))
	s.Require().NotNil(next.State)
	synced := slices.Clone(s.world.syncs)
	s.NotEmpty(synced)

	// The next run goes on from there.
	s.SetupTest()
	s.world.syncs = nil
	s.Equal(1, next.State.Step, "continued during step 2")
	s.Equal(RolloutAppSyncing, next.State.Steps[1].Apps[0].Phase)
	s.env.ExecuteWorkflow(RollingSyncWorkflowName, next)
	st := s.result()
	s.Equal(RolloutCompleted, st.Phase)
	for _, sy := range s.world.syncs {
		s.NotContains(synced, sy, "synced again after continue-as-new")
	}
	s.Len(append(synced, s.world.syncs...), 5)
}

// Each bad input fails the workflow with an InvalidSpec error naming it.
func TestRolloutInvalidInput(t *testing.T) {
	zero := &MaxUpdate{}
	tests := []struct {
		name   string
		change func(*RolloutInput)
		want   string
	}{
		{name: "no set", change: func(in *RolloutInput) { in.Set = "" }, want: "set: is required"},
		{name: "no steps", change: func(in *RolloutInput) { in.Steps = nil }, want: "strategy.rollingSync.steps: at least one step is required"},
		{name: "bad operator", change: func(in *RolloutInput) {
			in.Steps[1].MatchExpressions = []labelmatch.Expression{{Key: "env", Operator: "Equals", Values: []string{"x"}}}
		}, want: `strategy.rollingSync.steps[1].matchExpressions[0]: invalid match expression: env: operator "Equals": want In, NotIn, Exists or DoesNotExist`},
		{name: "maxUpdate 0", change: func(in *RolloutInput) { in.Steps[0].MaxUpdate = zero },
			want: "strategy.rollingSync.steps[0].maxUpdate 0 would never sync the step's apps"},
		{name: "maxUpdate above 100%", change: func(in *RolloutInput) { in.Steps[2].MaxUpdate = &MaxUpdate{Value: 150, Percent: true} },
			want: "strategy.rollingSync.steps[2].maxUpdate 150% is above 100%"},
		{name: "negative maxUpdate", change: func(in *RolloutInput) { in.Steps[2].MaxUpdate = &MaxUpdate{Value: -1} },
			want: "strategy.rollingSync.steps[2].maxUpdate -1 is negative"},
		{name: "deletion order", change: func(in *RolloutInput) { in.DeletionOrder = "Backwards" },
			want: `strategy.deletionOrder: "Backwards": want AllAtOnce or Reverse`},
		{name: "app twice", change: func(in *RolloutInput) { in.Apps = append(in.Apps, rolloutApp("d1", "prod")) },
			want: "apps[6]: default/d1 is listed twice"},
		{name: "app without project", change: func(in *RolloutInput) { in.Apps[0].Project = "" },
			want: "apps[0]: project and name are required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ts testsuite.WorkflowTestSuite
			env := ts.NewTestWorkflowEnvironment()
			env.RegisterWorkflowWithOptions(RollingSyncWorkflow, workflow.RegisterOptions{Name: RollingSyncWorkflowName})
			in := threeSteps()
			tt.change(&in)
			env.ExecuteWorkflow(RollingSyncWorkflowName, in)
			var appErr *temporal.ApplicationError
			if err := env.GetWorkflowError(); !errors.As(err, &appErr) || appErr.Type() != ErrTypeInvalidSpec || appErr.Message() != tt.want {
				t.Fatalf("error = %v, want InvalidSpec %q", err, tt.want)
			}
		})
	}
}

func TestMaxUpdate(t *testing.T) {
	tests := []struct {
		json string
		want MaxUpdate
		of   map[int]int // apps in the step: apps at once
	}{
		{json: `2`, want: MaxUpdate{Value: 2}, of: map[int]int{0: 0, 1: 1, 5: 2}},
		{json: `"3"`, want: MaxUpdate{Value: 3}, of: map[int]int{2: 2, 10: 3}},
		{json: `"25%"`, want: MaxUpdate{Value: 25, Percent: true}, of: map[int]int{1: 1, 3: 1, 8: 2, 10: 2}},
		{json: `"100%"`, want: MaxUpdate{Value: 100, Percent: true}, of: map[int]int{7: 7}},
	}
	for _, tt := range tests {
		t.Run(tt.json, func(t *testing.T) {
			var m MaxUpdate
			if err := json.Unmarshal([]byte(tt.json), &m); err != nil {
				t.Fatal(err)
			}
			if m != tt.want {
				t.Fatalf("parsed %+v, want %+v", m, tt.want)
			}
			for n, want := range tt.of {
				if got := m.Of(n); got != want {
					t.Errorf("of(%d) = %d, want %d", n, got, want)
				}
			}
			out, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			var back MaxUpdate
			if err := json.Unmarshal(out, &back); err != nil || back != m {
				t.Errorf("round trip %s = %+v, %v", out, back, err)
			}
		})
	}
	for _, bad := range []string{`"many"`, `"%"`, `true`, `"1.5"`} {
		var m MaxUpdate
		if err := json.Unmarshal([]byte(bad), &m); err == nil {
			t.Errorf("Unmarshal(%s) succeeded", bad)
		}
	}
	if got := (*MaxUpdate)(nil).Of(4); got != 4 {
		t.Errorf("no maxUpdate: of(4) = %d, want 4", got)
	}
}

func TestDeletionGroups(t *testing.T) {
	in := threeSteps()
	names := func(groups [][]RolloutApp) [][]string {
		var out [][]string
		for _, g := range groups {
			var ns []string
			for _, a := range g {
				ns = append(ns, a.Name)
			}
			out = append(out, ns)
		}
		return out
	}
	tests := []struct {
		order string
		apps  []RolloutApp
		want  [][]string
	}{
		{order: "", apps: in.Apps, want: [][]string{{"p2", "d1", "x", "s1", "p1", "d2"}}},
		{order: DeletionOrderAllAtOnce, apps: in.Apps, want: [][]string{{"p2", "d1", "x", "s1", "p1", "d2"}}},
		{order: DeletionOrderReverse, apps: in.Apps, want: [][]string{{"x"}, {"p2", "p1"}, {"s1"}, {"d1", "d2"}}},
		{order: DeletionOrderReverse, apps: in.Apps[:2], want: [][]string{{"p2"}, {"d1"}}},
		{order: DeletionOrderReverse},
	}
	for _, tt := range tests {
		got := names(DeletionGroups(in.Steps, tt.apps, tt.order))
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.order, diff)
		}
	}
}
