package workflows

import (
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/internal/appspec"
)

// beforeBaseline makes env's workflows runs that began before
// versionBaseline: each change is asked for on its own.
func beforeBaseline(env *testsuite.TestWorkflowEnvironment) {
	atBaseline(env, workflow.DefaultVersion)
}

// atBaseline makes env's workflows runs that began at the baseline's
// level: the changes of later levels are asked for on their own.
func atBaseline(env *testsuite.TestWorkflowEnvironment, level workflow.Version) {
	env.OnGetVersion(versionBaseline, workflow.DefaultVersion, workflow.Version(baselineLevel)).Return(level)
}

// askedVersions records the change IDs env's workflows ask for, each
// answered with its newest version.
func askedVersions(env *testsuite.TestWorkflowEnvironment) func() []string {
	var (
		mu    sync.Mutex
		asked []string
	)
	for _, newest := range []workflow.Version{1, baselineLevel} {
		env.OnGetVersion(mock.Anything, workflow.DefaultVersion, newest).Run(func(args mock.Arguments) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, args.String(0))
		}).Return(newest).Maybe()
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(asked)
	}
}

// A new app's run asks for the baseline only: one version marker (and
// one TemporalChangeVersion upsert), however many of the baseline's
// changes it meets; the lean test shows it takes the new paths. Its
// syncs ask for nothing: the run hands them its code's newest level
// (SyncInput.Baseline), and they take the baseline's paths.
func (s *appSuite) TestNewRunAsksForTheBaselineOnly() {
	asked := askedVersions(s.env)
	l := s.leanRun()
	s.Equal(1, l.local[cluster.PlanName], "the sync took the local plan")
	s.Equal([]string{versionBaseline}, asked(), "the app's run asks once, its sync not at all")
}

// syncsFromBefore makes the app's syncs run as syncs started before
// SyncInput.Baseline: each reads its own version marker. It comes before
// any mock of the environment (the SDK's test suite wants registrations
// first).
func (s *appSuite) syncsFromBefore() {
	s.env.RegisterWorkflowWithOptions(func(ctx workflow.Context, in SyncInput) (SyncResult, error) {
		in.Baseline = 0
		return SyncWorkflow(ctx, in)
	}, workflow.RegisterOptions{Name: SyncWorkflowName, DisableAlreadyRegisteredCheck: true})
}

// A sync started at a level runs at it without asking (a level-1 sync
// takes level 1's local plan; the sync meets no change of a later level),
// and a level this code does not have fails its workflow task, as a
// version marker from newer code would.
func TestSyncTakesItsLevelFromItsInput(t *testing.T) {
	for _, tc := range []struct {
		name    string
		level   int
		want    []string
		wantErr string
	}{
		{name: "the newest level", level: baselineLevel},
		{name: "level 1", level: 1},
		{name: "a level from newer code", level: baselineLevel + 1, wantErr: "this worker's code has levels up to"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := syncEnv(t)
			asked := askedVersions(env)
			in := syncInput(nil)
			in.Baseline = tc.level
			if tc.wantErr == "" {
				wi := expectOneStepPlan(env, in)
				env.OnActivity(cluster.ApplyWaveName, mock.Anything, wi).Return(cluster.WaveOutput{Settled: true, Health: appspec.HealthHealthy}, nil).Once()
			}
			env.ExecuteWorkflow(SyncWorkflowName, in)
			if tc.wantErr != "" {
				require.ErrorContains(t, env.GetWorkflowError(), tc.wantErr)
				return
			}
			require.NoError(t, env.GetWorkflowError())
			require.Empty(t, asked(), "the level's changes (settled-apply, local-plan, quiet-one-step) came from the input")
			env.AssertExpectations(t)
		})
	}
}

// A sync started without a level (before SyncInput.Baseline) asks for
// the baseline only.
func TestNewSyncAsksForTheBaselineOnly(t *testing.T) {
	env := syncEnv(t)
	asked := askedVersions(env)
	in := syncInput(nil)
	wi := expectOneStepPlan(env, in)
	env.OnActivity(cluster.ApplyWaveName, mock.Anything, wi).Return(cluster.WaveOutput{Settled: true, Health: appspec.HealthHealthy}, nil).Once()
	env.ExecuteWorkflow(SyncWorkflowName, in)
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []string{versionBaseline}, asked(), "settled-apply, local-plan and quiet-one-step came from the baseline")
}

// A change that is not in the levels of a run's baseline is asked for on
// its own: a later change at every level, a level-2 change at level 1,
// every change before the baseline.
func TestVersionsOutsideTheBaseline(t *testing.T) {
	for _, tc := range []struct {
		level workflow.Version
		want  []string
	}{
		{level: baselineLevel, want: []string{"a-later-change"}},
		{level: 1, want: []string{"a-later-change", versionCoalescedPublish}},
		{level: workflow.DefaultVersion, want: []string{"a-later-change", versionCoalescedPublish, versionSettledApply}},
	} {
		var ts testsuite.WorkflowTestSuite
		env := ts.NewTestWorkflowEnvironment()
		asked := askedVersions(env)
		env.ExecuteWorkflow(func(ctx workflow.Context) (bool, error) {
			v := versions{baseline: tc.level}
			return v.has(ctx, "a-later-change") && v.has(ctx, versionCoalescedPublish) && v.has(ctx, versionSettledApply), nil
		})
		require.NoError(t, env.GetWorkflowError())
		var has bool
		require.NoError(t, env.GetWorkflowResult(&has))
		require.True(t, has)
		require.Equal(t, tc.want, asked(), "level %d", tc.level)
	}
}

// The levels hold distinct changes, and the newest is the one new runs
// start at.
func TestBaselineLevels(t *testing.T) {
	require.Len(t, baselineChanges, baselineLevel+1)
	require.Empty(t, baselineChanges[0])
	seen := map[string]bool{}
	for level, changes := range baselineChanges[1:] {
		require.NotEmpty(t, changes, "level %d", level+1)
		for _, c := range changes {
			require.False(t, seen[c], "%s in two levels", c)
			seen[c] = true
		}
	}
}
