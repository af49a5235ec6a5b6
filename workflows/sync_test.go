package workflows

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/internal/appspec"
)

func syncEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	Register(env)
	registerPlaceholders(env)
	env.SetStartTime(time.Date(2026, 1, 10, 10, 0, 0, 0, time.UTC))
	t.Cleanup(func() { env.AssertExpectations(t) })
	return env
}

func syncInput(policy *appspec.SyncPolicy) SyncInput {
	spec := testSpec(false)
	spec.SyncPolicy = policy
	id := SyncWorkflowID("default", "guestbook", 7)
	return SyncInput{ID: id, Spec: spec, Revision: "main", SHA: sha1, Sources: sources(sha1),
		Operation: cluster.SyncOperation{SyncID: id}}
}

func syncResultOf(t *testing.T, err error) SyncResult {
	t.Helper()
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	var res SyncResult
	require.NoError(t, app.Details(&res))
	return res
}

// A retry policy retries a failed attempt after its backoff, growing by the
// factor, and stops after the limit.
func TestSyncRetryFollowsBackoff(t *testing.T) {
	env := syncEnv(t)
	in := syncInput(&appspec.SyncPolicy{Retry: &appspec.RetryStrategy{Limit: 2,
		Backoff: &appspec.Backoff{Duration: "10s", Factor: 3, MaxDuration: "1m"}}})
	tgt := target()
	env.OnActivity(render.RenderName, mock.Anything, render.RenderInput{Request: bareReq(sha1)}).Return(ref(sha1), nil).Times(3)
	pin := cluster.PlanInput{Target: tgt, Manifests: ref(sha1), Operation: in.Operation}
	env.OnActivity(cluster.PlanName, mock.Anything, pin).Return(cluster.PlanOutput{Steps: []cluster.Step{syncStep}}, nil).Times(3)
	wi := cluster.WaveInput{Target: tgt, Manifests: ref(sha1), Operation: in.Operation, Step: syncStep, SettleMillis: defaultWaveWait.Milliseconds()}
	var applies []time.Time
	conflict := errors.New("the object has been modified") // retryable
	env.OnActivity(cluster.ApplyWaveName, mock.Anything, wi).Return(cluster.WaveOutput{}, conflict).Run(func(mock.Arguments) {
		applies = append(applies, env.Now())
	}).Times(6) // two sync attempts, each with Temporal's 3 activity tries
	env.OnActivity(cluster.ApplyWaveName, mock.Anything, wi).Return(cluster.WaveOutput{}, nil).Run(func(mock.Arguments) {
		applies = append(applies, env.Now())
	}).Once()
	env.ExecuteWorkflow(SyncWorkflowName, in)
	require.NoError(t, env.GetWorkflowError())
	var res SyncResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, PhaseSucceeded, res.Phase)
	require.Equal(t, 3, res.Attempts)
	require.Len(t, applies, 7)
	// Each apply is first retried by Temporal (3 tries, 1 s then 2 s apart);
	// the sync-level backoff separates the attempts: 10 s, then 10 s × 3.
	gap1, gap2 := applies[3].Sub(applies[2]), applies[6].Sub(applies[5])
	require.GreaterOrEqual(t, gap1, 10*time.Second)
	require.Less(t, gap1, 30*time.Second)
	require.GreaterOrEqual(t, gap2, 30*time.Second)
}

// An error retrying cannot fix fails the sync at once despite the policy.
func TestSyncPermanentErrorFailsFast(t *testing.T) {
	env := syncEnv(t)
	in := syncInput(&appspec.SyncPolicy{Retry: &appspec.RetryStrategy{Limit: 5}})
	env.OnActivity(render.RenderName, mock.Anything, render.RenderInput{Request: bareReq(sha1)}).
		Return(render.ManifestRef{}, temporal.NewNonRetryableApplicationError("bad.yaml line 3: mapping values are not allowed", "InvalidManifest", nil)).Once()
	env.ExecuteWorkflow(SyncWorkflowName, in)
	res := syncResultOf(t, env.GetWorkflowError())
	require.Equal(t, PhaseFailed, res.Phase)
	require.Equal(t, 1, res.Attempts)
	require.Contains(t, res.Message, "bad.yaml line 3")
}

// A degraded wave fails the sync with the failing resource, runs the
// SyncFail steps and cleans up the hooks for a failed outcome.
func TestSyncDegradedWaveRunsSyncFail(t *testing.T) {
	env := syncEnv(t)
	in := syncInput(nil)
	tgt := target()
	failStep := cluster.Step{Phase: cluster.PhaseSyncFail, Wave: 0, Resources: 1}
	pre := cluster.Step{Phase: cluster.PhasePreSync, Wave: 0, Resources: 1}
	plan := cluster.PlanOutput{Steps: []cluster.Step{pre, syncStep}, SyncFail: []cluster.Step{failStep}}
	env.OnActivity(render.RenderName, mock.Anything, render.RenderInput{Request: bareReq(sha1)}).Return(ref(sha1), nil).Once()
	pin := cluster.PlanInput{Target: tgt, Manifests: ref(sha1), Operation: in.Operation}
	env.OnActivity(cluster.PlanName, mock.Anything, pin).Return(plan, nil).Twice()
	wave := func(st cluster.Step) cluster.WaveInput {
		return cluster.WaveInput{Target: tgt, Manifests: ref(sha1), Operation: in.Operation, Step: st, SettleMillis: defaultWaveWait.Milliseconds()}
	}
	migrate := appspec.ResourceKey{Group: "batch", Kind: "Job", Namespace: "web", Name: "migrate"}
	env.OnActivity(cluster.ApplyWaveName, mock.Anything, wave(pre)).
		Return(cluster.WaveOutput{Resources: []cluster.ResourceResult{{ResourceKey: migrate, Action: cluster.ActionCreated}}}, nil).Once()
	env.OnActivity(cluster.WaitWaveName, mock.Anything, wave(pre)).
		Return(cluster.WaveOutput{Health: appspec.HealthDegraded, Failed: &migrate, Message: "Job has reached the specified backoff limit",
			Resources: []cluster.ResourceResult{{ResourceKey: migrate, Action: cluster.ActionHookFailed}}}, nil).Once()
	env.OnActivity(cluster.ApplyWaveName, mock.Anything, wave(failStep)).Return(cluster.WaveOutput{}, nil).Once()
	env.OnActivity(cluster.WaitWaveName, mock.Anything, wave(failStep)).Return(cluster.WaveOutput{Health: appspec.HealthHealthy}, nil).Once()
	env.OnActivity(cluster.DeleteHooksName, mock.Anything, cluster.HookCleanupInput{Target: tgt, SyncID: in.ID, Outcome: cluster.OutcomeFailed}).Return(nil).Once()
	env.ExecuteWorkflow(SyncWorkflowName, in)
	res := syncResultOf(t, env.GetWorkflowError())
	require.Equal(t, PhaseFailed, res.Phase)
	require.Equal(t, &migrate, res.Failed)
	require.Contains(t, res.Message, "PreSync wave 0: Job has reached the specified backoff limit")
	require.Equal(t, appspec.HealthDegraded, res.Health)
	require.Equal(t, []cluster.ResourceResult{{ResourceKey: migrate, Action: cluster.ActionCreated}, {ResourceKey: migrate, Action: cluster.ActionHookFailed}}, res.Resources)
}

// A plan that applied its lone wave (settled) leaves the sync no
// ApplyWave to run: the wave's results and health are the sync's.
func TestSyncTakesThePlansLoneWave(t *testing.T) {
	env := syncEnv(t)
	in := syncInput(nil)
	tgt := target()
	env.OnActivity(render.RenderName, mock.Anything, render.RenderInput{Request: bareReq(sha1)}).Return(ref(sha1), nil).Once()
	cm := cluster.ResourceResult{ResourceKey: appspec.ResourceKey{Kind: "ConfigMap", Namespace: "web", Name: "cfg"}, Action: cluster.ActionCreated}
	applied := &cluster.WaveOutput{Resources: []cluster.ResourceResult{cm}, Settled: true, Health: appspec.HealthHealthy}
	pin := cluster.PlanInput{Target: tgt, Manifests: ref(sha1), Operation: in.Operation}
	env.OnActivity(cluster.PlanName, mock.Anything, pin).Return(cluster.PlanOutput{Steps: []cluster.Step{syncStep}, Applied: applied}, nil).Once()
	env.ExecuteWorkflow(SyncWorkflowName, in)
	require.NoError(t, env.GetWorkflowError())
	env.AssertExpectations(t) // no ApplyWave: it has no expectation and would fail the workflow
	var res SyncResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, PhaseSucceeded, res.Phase)
	require.Equal(t, appspec.HealthHealthy, res.Health)
	require.Equal(t, []cluster.ResourceResult{cm}, res.Resources)
}

// A sync timeout terminates the sync: the running wait is cancelled and the
// sync's hooks are deleted.
func TestSyncTimeoutTerminates(t *testing.T) {
	env := syncEnv(t)
	in := syncInput(&appspec.SyncPolicy{SyncTimeoutSeconds: 60})
	tgt := target()
	env.OnActivity(render.RenderName, mock.Anything, render.RenderInput{Request: bareReq(sha1)}).Return(ref(sha1), nil).Once()
	pin := cluster.PlanInput{Target: tgt, Manifests: ref(sha1), Operation: in.Operation}
	env.OnActivity(cluster.PlanName, mock.Anything, pin).Return(cluster.PlanOutput{Steps: []cluster.Step{syncStep}}, nil).Once()
	wi := cluster.WaveInput{Target: tgt, Manifests: ref(sha1), Operation: in.Operation, Step: syncStep, SettleMillis: defaultWaveWait.Milliseconds()}
	smoke := cluster.ResourceResult{ResourceKey: appspec.ResourceKey{Group: "batch", Kind: "Job", Namespace: "web", Name: "smoke"}, Action: cluster.ActionCreated, Hook: true}
	env.OnActivity(cluster.ApplyWaveName, mock.Anything, wi).Return(cluster.WaveOutput{Resources: []cluster.ResourceResult{smoke}}, nil).Once()
	wi.HooksOnly = true // the last wave waits for its hook
	env.OnActivity(cluster.WaitWaveName, mock.Anything, wi).After(10*time.Minute).Return(cluster.WaveOutput{}, temporal.NewCanceledError()).Once()
	env.OnActivity(cluster.DeleteHooksName, mock.Anything, cluster.HookCleanupInput{Target: tgt, SyncID: in.ID, Outcome: cluster.OutcomeTerminated}).Return(nil).Once()
	env.ExecuteWorkflow(SyncWorkflowName, in)
	var app *temporal.ApplicationError
	require.ErrorAs(t, env.GetWorkflowError(), &app)
	require.Equal(t, ErrTypeSyncTerminated, app.Type())
	res := syncResultOf(t, env.GetWorkflowError())
	require.Equal(t, PhaseTerminated, res.Phase)
	require.Contains(t, res.Message, "timed out after 1m0s")
}

// pruningSync expects the render, a plan (with plan's prune counts) of a
// Sync and a PostSync step, and their waves (the last not waited for), for
// a sync that prunes; order logs the waves applied.
func pruningSync(t *testing.T, plan cluster.PlanOutput) (*testsuite.TestWorkflowEnvironment, SyncInput, *[]string) {
	env := syncEnv(t)
	in := syncInput(nil)
	in.Operation.Prune = true
	tgt := target()
	post := cluster.Step{Phase: cluster.PhasePostSync, Wave: 0, Resources: 1}
	plan.Steps = []cluster.Step{syncStep, post}
	env.OnActivity(render.RenderName, mock.Anything, render.RenderInput{Request: bareReq(sha1)}).Return(ref(sha1), nil).Once()
	pin := cluster.PlanInput{Target: tgt, Manifests: ref(sha1), Operation: in.Operation}
	env.OnActivity(cluster.PlanName, mock.Anything, pin).Return(plan, nil).Once()
	order := &[]string{}
	for _, st := range plan.Steps {
		wi := cluster.WaveInput{Target: tgt, Manifests: ref(sha1), Operation: in.Operation, Step: st, SettleMillis: defaultWaveWait.Milliseconds()}
		env.OnActivity(cluster.ApplyWaveName, mock.Anything, wi).Return(cluster.WaveOutput{}, nil).Run(func(mock.Arguments) { *order = append(*order, "apply "+st.Phase) }).Once()
		if st != post {
			env.OnActivity(cluster.WaitWaveName, mock.Anything, wi).Return(cluster.WaveOutput{Health: appspec.HealthHealthy}, nil).Once()
		}
	}
	return env, in, order
}

// Prune runs after the Sync phase and before PostSync, and only when the
// operation asks for it.
func TestSyncPrunesBeforePostSync(t *testing.T) {
	env, in, order := pruningSync(t, cluster.PlanOutput{Prune: 1})
	tgt := target()
	old := appspec.ResourceKey{Group: "apps", Kind: "Deployment", Namespace: "web", Name: "old"}
	env.OnActivity(cluster.PruneName, mock.Anything, cluster.PruneInput{Target: tgt, Manifests: ref(sha1), Operation: in.Operation}).
		Return(cluster.PruneOutput{Resources: []cluster.ResourceResult{{ResourceKey: old, Action: cluster.ActionPruned}}}, nil).
		Run(func(mock.Arguments) { *order = append(*order, "prune") }).Once()
	env.ExecuteWorkflow(SyncWorkflowName, in)
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []string{"apply Sync", "prune", "apply PostSync"}, *order)
	var res SyncResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, []cluster.ResourceResult{{ResourceKey: old, Action: cluster.ActionPruned}}, res.Resources)
}

// A prune that finds resources marked Prune=confirm waits for the
// approveDeletion signal and then prunes exactly those; resources with
// their own PruneLast go in a last pass after every wave.
func TestSyncPruneWaitsForApproval(t *testing.T) {
	env, in, order := pruningSync(t, cluster.PlanOutput{Prune: 3, PruneLastResources: 1})
	tgt := target()
	confirm := appspec.ResourceKey{Kind: "ConfigMap", Namespace: "web", Name: "precious"}
	last := appspec.ResourceKey{Kind: "ConfigMap", Namespace: "web", Name: "last"}
	pruneIn := func(pass string, approved bool, keys ...appspec.ResourceKey) cluster.PruneInput {
		op := in.Operation
		op.Resources = keys
		return cluster.PruneInput{Target: tgt, Manifests: ref(sha1), Operation: op, Pass: pass, Approved: approved}
	}
	results := func(k appspec.ResourceKey, a cluster.Action) []cluster.ResourceResult {
		return []cluster.ResourceResult{{ResourceKey: k, Action: a}}
	}
	env.OnActivity(cluster.PruneName, mock.Anything, pruneIn(cluster.PrunePassEarly, false)).
		Return(cluster.PruneOutput{Resources: results(confirm, cluster.ActionPruneSkipped), AwaitingApproval: []appspec.ResourceKey{confirm}}, nil).
		Run(func(mock.Arguments) { *order = append(*order, "prune early") }).Once()
	env.OnActivity(cluster.PruneName, mock.Anything, pruneIn("", true, confirm)).
		Return(cluster.PruneOutput{Resources: results(confirm, cluster.ActionPruned)}, nil).
		Run(func(mock.Arguments) { *order = append(*order, "prune approved") }).Once()
	env.OnActivity(cluster.PruneName, mock.Anything, pruneIn(cluster.PrunePassLast, false)).
		Return(cluster.PruneOutput{Resources: results(last, cluster.ActionPruned)}, nil).
		Run(func(mock.Arguments) { *order = append(*order, "prune last") }).Once()
	env.RegisterDelayedCallback(func() {
		*order = append(*order, "approve")
		env.SignalWorkflow(SignalApproveDeletion, ApproveDeletionRequest{Initiator: "alice"})
	}, time.Hour)
	env.ExecuteWorkflow(SyncWorkflowName, in)
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []string{"apply Sync", "prune early", "approve", "prune approved", "apply PostSync", "prune last"}, *order)
	var res SyncResult
	require.NoError(t, env.GetWorkflowResult(&res))
	want := append(append(results(confirm, cluster.ActionPruneSkipped), results(confirm, cluster.ActionPruned)...), results(last, cluster.ActionPruned)...)
	require.Equal(t, want, res.Resources)
}

// A succeeded sync that created hooks deletes those with the HookSucceeded
// policy (DeleteHooks with the succeeded outcome); one without hooks, or a
// dry run, makes no cleanup call.
func TestSyncSuccessCleansUpHooks(t *testing.T) {
	migrate := appspec.ResourceKey{Group: "batch", Kind: "Job", Namespace: "web", Name: "migrate-0a1b2c3d4e"}
	web := appspec.ResourceKey{Group: "apps", Kind: "Deployment", Namespace: "web", Name: "web"}
	tests := []struct {
		name    string
		applied []cluster.ResourceResult
		dryRun  bool
		cleanup bool
	}{
		{"hook", []cluster.ResourceResult{{ResourceKey: migrate, Action: cluster.ActionCreated, Phase: cluster.PhasePreSync, Hook: true}}, false, true},
		{"no hook", []cluster.ResourceResult{{ResourceKey: web, Action: cluster.ActionCreated, Phase: cluster.PhaseSync}}, false, false},
		{"dry run", []cluster.ResourceResult{{ResourceKey: migrate, Action: cluster.ActionCreated, Phase: cluster.PhasePreSync, Hook: true}}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := syncEnv(t)
			in := syncInput(nil)
			in.Operation.DryRun, in.DryRun = tt.dryRun, tt.dryRun
			tgt := target()
			env.OnActivity(render.RenderName, mock.Anything, render.RenderInput{Request: bareReq(sha1)}).Return(ref(sha1), nil).Once()
			pin := cluster.PlanInput{Target: tgt, Manifests: ref(sha1), Operation: in.Operation}
			env.OnActivity(cluster.PlanName, mock.Anything, pin).Return(cluster.PlanOutput{Steps: []cluster.Step{syncStep}}, nil).Once()
			wi := cluster.WaveInput{Target: tgt, Manifests: ref(sha1), Operation: in.Operation, Step: syncStep, SettleMillis: defaultWaveWait.Milliseconds()}
			env.OnActivity(cluster.ApplyWaveName, mock.Anything, wi).Return(cluster.WaveOutput{Resources: tt.applied}, nil).Once()
			if tt.cleanup { // the last wave waits for its hooks only
				wi.HooksOnly = true
				env.OnActivity(cluster.WaitWaveName, mock.Anything, wi).Return(cluster.WaveOutput{Health: appspec.HealthHealthy}, nil).Once()
			}
			if tt.cleanup {
				env.OnActivity(cluster.DeleteHooksName, mock.Anything, cluster.HookCleanupInput{Target: tgt, SyncID: in.ID, Outcome: cluster.OutcomeSucceeded}).Return(nil).Once()
			}
			env.ExecuteWorkflow(SyncWorkflowName, in)
			require.NoError(t, env.GetWorkflowError())
			var res SyncResult
			require.NoError(t, env.GetWorkflowResult(&res))
			require.Equal(t, PhaseSucceeded, res.Phase)
			require.NotContains(t, res.Message, "hook cleanup failed")
		})
	}
}

// A sync handed its manifests renders only when they are not the render
// of its sources: the same request is used as it is, another is rendered.
func TestSyncUsesHandedManifests(t *testing.T) {
	other := ref(sha2) // the render of another SHA than the sync's
	same := ref(sha1)
	same.Request = bareReq(sha1) // the sync has no project
	for _, tc := range []struct {
		name    string
		handed  render.ManifestRef
		renders int
	}{
		{name: "same request", handed: same, renders: 0},
		{name: "another request", handed: other, renders: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := syncEnv(t)
			in := syncInput(nil)
			in.Manifests = &tc.handed
			renders := 0
			env.OnActivity(render.RenderName, mock.Anything, render.RenderInput{Request: bareReq(sha1)}).
				Return(ref(sha1), nil).Run(func(mock.Arguments) { renders++ }).Maybe()
			used := ref(sha1)
			if tc.renders == 0 {
				used = tc.handed
			}
			pin := cluster.PlanInput{Target: target(), Manifests: used, Operation: in.Operation}
			env.OnActivity(cluster.PlanName, mock.Anything, pin).Return(cluster.PlanOutput{Steps: []cluster.Step{syncStep}}, nil).Once()
			wi := cluster.WaveInput{Target: target(), Manifests: used, Operation: in.Operation, Step: syncStep, SettleMillis: defaultWaveWait.Milliseconds()}
			env.OnActivity(cluster.ApplyWaveName, mock.Anything, wi).Return(cluster.WaveOutput{}, nil).Once()
			env.ExecuteWorkflow(SyncWorkflowName, in)
			require.NoError(t, env.GetWorkflowError())
			require.Equal(t, tc.renders, renders)
		})
	}
}

// expectOneStepPlan expects in's render and a plan of syncStep alone, and
// returns that step's wave input.
func expectOneStepPlan(env *testsuite.TestWorkflowEnvironment, in SyncInput) cluster.WaveInput {
	tgt := target()
	env.OnActivity(render.RenderName, mock.Anything, render.RenderInput{Request: bareReq(sha1)}).Return(ref(sha1), nil).Once()
	pin := cluster.PlanInput{Target: tgt, Manifests: ref(sha1), Operation: in.Operation}
	env.OnActivity(cluster.PlanName, mock.Anything, pin).Return(cluster.PlanOutput{Steps: []cluster.Step{syncStep}}, nil).Once()
	return cluster.WaveInput{Target: tgt, Manifests: ref(sha1), Operation: in.Operation, Step: syncStep, SettleMillis: defaultWaveWait.Milliseconds()}
}

// expectWaitedStepPlan expects in's render and a plan of syncStep and a
// last PostSync step without hooks (applied, not waited for), and returns
// syncStep's wave input: a wave that is waited for.
func expectWaitedStepPlan(env *testsuite.TestWorkflowEnvironment, in SyncInput) cluster.WaveInput {
	tgt := target()
	post := cluster.Step{Phase: cluster.PhasePostSync, Wave: 0, Resources: 1}
	env.OnActivity(render.RenderName, mock.Anything, render.RenderInput{Request: bareReq(sha1)}).Return(ref(sha1), nil).Once()
	pin := cluster.PlanInput{Target: tgt, Manifests: ref(sha1), Operation: in.Operation}
	env.OnActivity(cluster.PlanName, mock.Anything, pin).Return(cluster.PlanOutput{Steps: []cluster.Step{syncStep, post}}, nil).Once()
	settle := defaultWaveWait
	if in.WaitSeconds > 0 {
		settle = time.Duration(in.WaitSeconds) * time.Second
	}
	wi := cluster.WaveInput{Target: tgt, Manifests: ref(sha1), Operation: in.Operation, Step: syncStep, SettleMillis: settle.Milliseconds()}
	last := wi
	last.Step = post
	env.OnActivity(cluster.ApplyWaveName, mock.Anything, last).Return(cluster.WaveOutput{}, nil).Once()
	return wi
}

// A wave whose apply left every object healthy (WaveOutput.Settled) is not
// waited for; another is.
func TestSyncSkipsWaitOfSettledWave(t *testing.T) {
	for _, tc := range []struct {
		name      string
		settled   bool
		wantWaits int
	}{
		{name: "settled", settled: true, wantWaits: 0},
		{name: "not settled", settled: false, wantWaits: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := syncEnv(t)
			in := syncInput(nil)
			wi := expectWaitedStepPlan(env, in)
			applied := cluster.WaveOutput{Resources: []cluster.ResourceResult{{ResourceKey: appspec.ResourceKey{Kind: "ConfigMap", Namespace: "web", Name: "cfg"},
				Action: cluster.ActionConfigured, Phase: cluster.PhaseSync}}}
			if tc.settled {
				applied.Settled, applied.Health = true, appspec.HealthHealthy
			}
			env.OnActivity(cluster.ApplyWaveName, mock.Anything, wi).Return(applied, nil).Once()
			waits := 0
			env.OnActivity(cluster.WaitWaveName, mock.Anything, wi).Return(cluster.WaveOutput{Health: appspec.HealthHealthy}, nil).
				Run(func(mock.Arguments) { waits++ }).Maybe()
			env.ExecuteWorkflow(SyncWorkflowName, in)
			require.NoError(t, env.GetWorkflowError())
			var res SyncResult
			require.NoError(t, env.GetWorkflowResult(&res))
			require.Equal(t, PhaseSucceeded, res.Phase)
			require.Equal(t, appspec.HealthHealthy, res.Health)
			require.Equal(t, tc.wantWaits, waits)
		})
	}
}

// A wave's wait timeout bounds its apply's settle wait (SettleMillis) and
// its WaitWave together: WaitWave gets what the apply left of it, at least
// a second.
func TestWaveWaitTimeoutBoundsSettleAndWait(t *testing.T) {
	for _, tc := range []struct {
		name     string
		applying time.Duration
		want     time.Duration
	}{
		{name: "apply settles for 50 s", applying: 50 * time.Second, want: 70 * time.Second},
		{name: "apply outlasts the timeout", applying: 3 * time.Minute, want: time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := syncEnv(t)
			in := syncInput(nil)
			in.WaitSeconds = 120
			wi := expectWaitedStepPlan(env, in)
			wi.SettleMillis = 120_000
			env.OnActivity(cluster.ApplyWaveName, mock.Anything, wi).Return(cluster.WaveOutput{}, nil).After(tc.applying).Once()
			var got time.Duration
			env.OnActivity(cluster.WaitWaveName, mock.Anything, wi).Return(func(ctx context.Context, _ cluster.WaveInput) (cluster.WaveOutput, error) {
				got = activity.GetInfo(ctx).StartToCloseTimeout
				return cluster.WaveOutput{Health: appspec.HealthHealthy}, nil
			}).Once()
			env.ExecuteWorkflow(SyncWorkflowName, in)
			require.NoError(t, env.GetWorkflowError())
			require.Equal(t, tc.want, got)
		})
	}
}

// The last step waits for its hooks only: a sync
// whose last wave holds a resource that stays Progressing (a LoadBalancer
// Service) succeeds once the wave is applied, as in Argo CD; earlier
// waves are waited for.
func TestLastStepWaitsForHooksOnly(t *testing.T) {
	svc := cluster.ResourceResult{ResourceKey: appspec.ResourceKey{Kind: "Service", Namespace: "web", Name: "front"},
		Action: cluster.ActionCreated, Phase: cluster.PhaseSync, Health: appspec.HealthProgressing}
	hook := cluster.ResourceResult{ResourceKey: appspec.ResourceKey{Group: "batch", Kind: "Job", Namespace: "web", Name: "smoke"},
		Action: cluster.ActionCreated, Phase: cluster.PhaseSync, Hook: true}
	pre := cluster.Step{Phase: cluster.PhasePreSync, Wave: 0, Resources: 1}
	for _, tc := range []struct {
		name       string
		steps      []cluster.Step
		applied    []cluster.ResourceResult
		wantWaits  []cluster.WaveInput // by step: HooksOnly
		wantHealth appspec.HealthStatus
	}{
		{name: "last wave without hooks", steps: []cluster.Step{syncStep}, applied: []cluster.ResourceResult{svc},
			wantHealth: appspec.HealthProgressing},
		{name: "last wave with a hook", steps: []cluster.Step{syncStep}, applied: []cluster.ResourceResult{svc, hook},
			wantWaits: []cluster.WaveInput{{Step: syncStep, HooksOnly: true}}, wantHealth: appspec.HealthHealthy},
		{name: "an earlier wave is waited for", steps: []cluster.Step{pre, syncStep}, applied: []cluster.ResourceResult{svc},
			wantWaits: []cluster.WaveInput{{Step: pre}}, wantHealth: appspec.HealthProgressing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := syncEnv(t)
			in := syncInput(nil)
			tgt := target()
			env.OnActivity(render.RenderName, mock.Anything, render.RenderInput{Request: bareReq(sha1)}).Return(ref(sha1), nil).Once()
			pin := cluster.PlanInput{Target: tgt, Manifests: ref(sha1), Operation: in.Operation}
			env.OnActivity(cluster.PlanName, mock.Anything, pin).Return(cluster.PlanOutput{Steps: tc.steps}, nil).Once()
			var waits []cluster.WaveInput
			for _, st := range tc.steps {
				wi := cluster.WaveInput{Target: tgt, Manifests: ref(sha1), Operation: in.Operation, Step: st, SettleMillis: defaultWaveWait.Milliseconds()}
				env.OnActivity(cluster.ApplyWaveName, mock.Anything, wi).
					Return(cluster.WaveOutput{Resources: tc.applied, Health: appspec.HealthProgressing}, nil).Once()
			}
			env.OnActivity(cluster.WaitWaveName, mock.Anything, mock.Anything).Return(
				func(_ context.Context, wi cluster.WaveInput) (cluster.WaveOutput, error) {
					waits = append(waits, cluster.WaveInput{Step: wi.Step, HooksOnly: wi.HooksOnly})
					return cluster.WaveOutput{Health: appspec.HealthHealthy}, nil
				}).Maybe()
			env.ExecuteWorkflow(SyncWorkflowName, in)
			require.NoError(t, env.GetWorkflowError())
			var res SyncResult
			require.NoError(t, env.GetWorkflowResult(&res))
			require.Equal(t, PhaseSucceeded, res.Phase)
			require.Equal(t, tc.wantWaits, waits)
			require.Equal(t, tc.wantHealth, res.Health)
		})
	}
}

// showApplied marks what a running sync applied Synced, with its health,
// and the app's sync and health follow; hooks, failures and unknown
// resources change nothing.
func TestShowApplied(t *testing.T) {
	cm := appspec.ResourceKey{Kind: "ConfigMap", Namespace: "web", Name: "cfg"}
	dep := appspec.ResourceKey{Group: "apps", Kind: "Deployment", Namespace: "web", Name: "front"}
	missing := func(k appspec.ResourceKey) appspec.ResourceStatus {
		return appspec.ResourceStatus{ResourceKey: k, Status: appspec.SyncOutOfSync, Health: appspec.HealthMissing}
	}
	for _, tc := range []struct {
		name        string
		applied     []cluster.ResourceResult
		wantChanged bool
		wantSync    appspec.SyncStatus
		wantHealth  appspec.HealthStatus
	}{
		{name: "both applied", applied: []cluster.ResourceResult{
			{ResourceKey: cm, Action: cluster.ActionCreated, Health: appspec.HealthHealthy},
			{ResourceKey: dep, Action: cluster.ActionCreated, Health: appspec.HealthProgressing}},
			wantChanged: true, wantSync: appspec.SyncSynced, wantHealth: appspec.HealthProgressing},
		{name: "one applied", applied: []cluster.ResourceResult{{ResourceKey: cm, Action: cluster.ActionConfigured, Health: appspec.HealthHealthy}},
			wantChanged: true, wantSync: appspec.SyncOutOfSync, wantHealth: appspec.HealthMissing},
		{name: "a failed apply", applied: []cluster.ResourceResult{{ResourceKey: cm, Action: cluster.ActionFailed}},
			wantSync: appspec.SyncOutOfSync, wantHealth: appspec.HealthMissing},
		{name: "a hook", applied: []cluster.ResourceResult{{ResourceKey: cm, Action: cluster.ActionCreated, Hook: true}},
			wantSync: appspec.SyncOutOfSync, wantHealth: appspec.HealthMissing},
		{name: "not in the status", applied: []cluster.ResourceResult{{ResourceKey: appspec.ResourceKey{Kind: "Secret", Name: "x"}, Action: cluster.ActionCreated}},
			wantSync: appspec.SyncOutOfSync, wantHealth: appspec.HealthMissing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := AppStatus{Sync: appspec.SyncOutOfSync, Health: appspec.HealthMissing, Resources: []appspec.ResourceStatus{missing(cm), missing(dep)}}
			require.Equal(t, tc.wantChanged, showApplied(&st, tc.applied))
			require.Equal(t, tc.wantSync, st.Sync)
			require.Equal(t, tc.wantHealth, st.Health)
		})
	}
}

// A sync without prune lists the resources it leaves as prune-skipped, as
// Argo CD does; one that prunes does not.
func TestSyncListsPruneSkipped(t *testing.T) {
	old := appspec.ResourceKey{Kind: "ConfigMap", Namespace: "web", Name: "old"}
	env := syncEnv(t)
	in := syncInput(nil)
	in.PruneSkipped = []appspec.ResourceKey{old}
	wi := expectOneStepPlan(env, in)
	env.OnActivity(cluster.ApplyWaveName, mock.Anything, wi).Return(cluster.WaveOutput{}, nil).Once()
	env.ExecuteWorkflow(SyncWorkflowName, in)
	require.NoError(t, env.GetWorkflowError())
	var res SyncResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, []cluster.ResourceResult{{ResourceKey: old, Action: cluster.ActionPruneSkipped, Message: msgPruneSkipped}}, res.Resources)
}

// The app hands its sync the compared resources that require pruning, at
// most maxPruneSkipped.
func TestPruneCandidates(t *testing.T) {
	var rs []appspec.ResourceStatus
	for i := range maxPruneSkipped + 5 {
		rs = append(rs, appspec.ResourceStatus{ResourceKey: appspec.ResourceKey{Kind: "ConfigMap", Name: strconv.Itoa(i)}, RequiresPruning: i%2 == 0})
		rs = append(rs, appspec.ResourceStatus{ResourceKey: appspec.ResourceKey{Kind: "Secret", Name: strconv.Itoa(i)}, RequiresPruning: true})
	}
	got := pruneCandidates(rs[:4])
	require.Equal(t, []appspec.ResourceKey{{Kind: "ConfigMap", Name: "0"}, {Kind: "Secret", Name: "0"}, {Kind: "Secret", Name: "1"}}, got)
	require.Len(t, pruneCandidates(rs), maxPruneSkipped)
}

// A sync's log keeps at most cluster.MaxResults entries and counts the
// rest, those its activities left out too; a hook past the bound is still
// cleaned up.
func TestSyncLogIsBounded(t *testing.T) {
	env := syncEnv(t)
	in := syncInput(nil)
	wi := expectOneStepPlan(env, in)
	var applied []cluster.ResourceResult
	for i := range cluster.MaxResults {
		applied = append(applied, cluster.ResourceResult{ResourceKey: appspec.ResourceKey{Kind: "ConfigMap", Name: strconv.Itoa(i)}, Action: cluster.ActionCreated})
	}
	applied = append(applied, cluster.ResourceResult{ResourceKey: appspec.ResourceKey{Group: "batch", Kind: "Job", Name: "smoke"}, Action: cluster.ActionCreated, Hook: true})
	env.OnActivity(cluster.ApplyWaveName, mock.Anything, wi).Return(cluster.WaveOutput{Resources: applied, Omitted: 7000}, nil).Once()
	hooks := wi
	hooks.HooksOnly = true
	env.OnActivity(cluster.WaitWaveName, mock.Anything, hooks).Return(cluster.WaveOutput{Health: appspec.HealthHealthy}, nil).Once()
	env.OnActivity(cluster.DeleteHooksName, mock.Anything, cluster.HookCleanupInput{Target: target(), SyncID: in.ID, Outcome: cluster.OutcomeSucceeded}).Return(nil).Once()
	env.ExecuteWorkflow(SyncWorkflowName, in)
	require.NoError(t, env.GetWorkflowError())
	var res SyncResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Len(t, res.Resources, cluster.MaxResults)
	require.Equal(t, 7001, res.Omitted)
}
