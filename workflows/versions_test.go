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
	env.OnGetVersion(versionBaseline, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
}

// askedVersions records the change IDs env's workflows ask for, each
// answered with its newest version.
func askedVersions(env *testsuite.TestWorkflowEnvironment) func() []string {
	var (
		mu    sync.Mutex
		asked []string
	)
	env.OnGetVersion(mock.Anything, workflow.DefaultVersion, 1).Run(func(args mock.Arguments) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, args.String(0))
	}).Return(workflow.Version(1))
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

// A change that is not one of baselineChanges is asked for on its own,
// with or without the baseline.
func TestVersionsOutsideTheBaseline(t *testing.T) {
	for _, baseline := range []bool{true, false} {
		var ts testsuite.WorkflowTestSuite
		env := ts.NewTestWorkflowEnvironment()
		asked := askedVersions(env)
		env.ExecuteWorkflow(func(ctx workflow.Context) (bool, error) {
			v := versions{baseline: baseline}
			return v.has(ctx, "a-later-change") && v.has(ctx, versionSettledApply), nil
		})
		require.NoError(t, env.GetWorkflowError())
		var has bool
		require.NoError(t, env.GetWorkflowResult(&has))
		require.True(t, has)
		want := []string{"a-later-change"}
		if !baseline {
			want = append(want, versionSettledApply)
		}
		require.Equal(t, want, asked(), "baseline %v", baseline)
	}
}
