package workflows

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/activities/source"
	"github.com/windlass-cd/windlass/internal/appspec"
)

// refreshEnv is a sync's test environment whose revision resolutions are
// answered by the returned mock.
func refreshEnv(t *testing.T) (*testsuite.TestWorkflowEnvironment, *stepMock) {
	t.Helper()
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	Register(env)
	registerOtherPlaceholders(env)
	steps := registerSteps(env)
	env.SetStartTime(time.Date(2026, 1, 10, 10, 0, 0, 0, time.UTC))
	t.Cleanup(func() { env.AssertExpectations(t); steps.AssertExpectations(t) })
	return env, steps
}

// expectAttempt expects one attempt at sha whose apply returns applyErr
// (tries times: Temporal retries an activity 3 times).
func expectAttempt(env *testsuite.TestWorkflowEnvironment, in SyncInput, sha string, applyErr error, tries int) {
	env.OnActivity(render.RenderName, mock.Anything, render.RenderInput{Request: bareReq(sha)}).Return(ref(sha), nil).Once()
	pin := cluster.PlanInput{Target: target(), Manifests: ref(sha), Operation: in.Operation}
	env.OnActivity(cluster.PlanName, mock.Anything, pin).Return(cluster.PlanOutput{Steps: []cluster.Step{syncStep}}, nil).Once()
	wi := cluster.WaveInput{Target: target(), Manifests: ref(sha), Operation: in.Operation, Step: syncStep, SettleMillis: defaultWaveWait.Milliseconds()}
	env.OnActivity(cluster.ApplyWaveName, mock.Anything, wi).Return(cluster.WaveOutput{}, applyErr).Times(tries)
}

// With retry.refresh, a retry resolves the target again and syncs the
// commit it moved to.
func TestSyncRetryRefreshSyncsLatestCommit(t *testing.T) {
	env, steps := refreshEnv(t)
	in := syncInput(&appspec.SyncPolicy{Retry: &appspec.RetryStrategy{Limit: 1, Refresh: true}})
	expectAttempt(env, in, sha1, errors.New("admission webhook denied the request"), 3)
	steps.On(source.ResolveRevisionName, source.ResolveInput{RepoURL: repo, Revision: "main", Hard: true}).
		Return(source.ResolveOutput{SHA: sha2, Ref: "refs/heads/main"}, nil).Once()
	expectAttempt(env, in, sha2, nil, 1)
	res := runSucceeded(t, env, in)
	require.Equal(t, 2, res.Attempts)
	require.Equal(t, sha2, res.SHA)
	require.Equal(t, sources(sha2), res.Sources)
}

// A rollback, or a sync of an explicit revision, is pinned: its retries
// stay on its commit and resolve nothing.
func TestSyncRetryRefreshKeepsPinnedCommit(t *testing.T) {
	env, _ := refreshEnv(t)
	in := syncInput(&appspec.SyncPolicy{Retry: &appspec.RetryStrategy{Limit: 1, Refresh: true}})
	in.Pinned = true
	expectAttempt(env, in, sha1, errors.New("admission webhook denied the request"), 3)
	expectAttempt(env, in, sha1, nil, 1)
	res := runSucceeded(t, env, in)
	require.Equal(t, sha1, res.SHA)
	require.Equal(t, 2, res.Attempts)
}

func runSucceeded(t *testing.T, env *testsuite.TestWorkflowEnvironment, in SyncInput) SyncResult {
	t.Helper()
	env.ExecuteWorkflow(SyncWorkflowName, in)
	require.NoError(t, env.GetWorkflowError())
	var res SyncResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, PhaseSucceeded, res.Phase)
	return res
}
