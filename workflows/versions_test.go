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

// A new app's run and a new sync ask for the baseline only: one version
// marker (and one TemporalChangeVersion upsert) each, however many of
// the baseline's changes they meet; the lean test shows they take the
// new paths.
func (s *appSuite) TestNewRunAsksForTheBaselineOnly() {
	asked := askedVersions(s.env)
	l := s.leanRun()
	s.Equal(1, l.local[cluster.PlanName], "the sync took the local plan")
	s.Equal([]string{versionBaseline, versionBaseline}, asked(), "the app's run and its sync each ask once")
}

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
