package workflows

import (
	"context"
	"errors"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/activities/notify"
	"github.com/windlass-cd/windlass/activities/placement"
	"github.com/windlass-cd/windlass/activities/project"
	"github.com/windlass-cd/windlass/activities/reconcile"
	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/activities/source"
	"github.com/windlass-cd/windlass/internal/appspec"
)

// stepLog counts what an app workflow runs: regular and local activities
// by name, and the upserts of its search attributes and memo.
type stepLog struct {
	mu              sync.Mutex
	regular, local  map[string]int
	saUps, memoUps  int
	upsAt5m, memo5m int
	// memoOps is each memo upsert's operation phase, in order.
	memoOps []string
	// memo is the last memo upserted.
	memo map[string]any
}

func (s *appSuite) recordSteps() *stepLog {
	l := &stepLog{regular: map[string]int{}, local: map[string]int{}}
	s.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.regular[info.ActivityType.Name]++
	})
	s.env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []any) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.local[info.ActivityType.Name]++
	})
	s.env.OnUpsertTypedSearchAttributes(mock.Anything).Return(nil).Run(func(mock.Arguments) { l.mu.Lock(); l.saUps++; l.mu.Unlock() })
	s.env.OnUpsertMemo(mock.Anything).Return(nil).Run(func(args mock.Arguments) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.memoUps++
		memo, _ := args.Get(0).(map[string]any)
		op, _ := memo["operation"].(string)
		l.memoOps = append(l.memoOps, op)
		l.memo = memo
	})
	return l
}

// leanRun runs an automated app to its first sync, then through one quiet
// refresh pass (the timer, at about 10 minutes, when the placement is
// looked up again: placementTTL), and returns the log. The default
// project has no sync windows, so no window is asked for.
func (s *appSuite) leanRun() *stepLog {
	l := s.recordSteps()
	s.expectProject(appspec.DefaultProjectSpec())
	s.expectReconcile(sha1, outOfSync)
	s.expectSync(1, sha1, nil)
	s.expectReconcile(sha1, synced)
	s.expectReconcile(sha1, synced) // the timer's pass: nothing changed
	var view AppView
	s.at(5*time.Minute, func() {
		view = s.status()
		l.mu.Lock()
		l.upsAt5m, l.memo5m = l.saUps, l.memoUps
		l.mu.Unlock()
	})
	s.cancelAt(15 * time.Minute)
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(true), Config: AppConfig{RefreshSeconds: 600}})
	s.Equal(appspec.SyncSynced, view.Status.Sync)
	s.Require().Len(view.History, 1)
	s.Equal(PhaseSucceeded, view.History[0].Phase)
	return l
}

// The first sync renders once, in the first reconcile: the sync gets the
// manifests, and later passes at the same SHA reuse them. The cheap steps
// are local activities, and a pass that changes nothing upserts nothing.
// Each pass's project and ls-remote run in one local activity, the quick
// pass,
// and so does its compare when no source moved: the first pass, which
// renders, compares on its own; the pass after the sync and the timer's
// are one local activity each.
func (s *appSuite) TestLeanFirstSync() {
	l := s.leanRun()
	s.Equal(map[string]int{
		render.RenderName: 1, cluster.ApplyWaveName: 1, // the last wave: not waited for
	}, l.regular)
	s.Equal(map[string]int{
		reconcile.QuickPassName: 3, placement.TaskQueueName: 2,
		// The cluster has no queue of its own: the sync's plan and the
		// first pass's compare run in the workflow's worker.
		cluster.PlanName: 1, cluster.CompareName: 1,
		// Without a notifications configuration the triggers are asked
		// for at the first pass and again after notifyRecheck.
		notify.EvaluateName: 2,
	}, l.local)
	s.Equal(3, s.stepCalls(project.GetName))
	s.Equal(3, s.stepCalls(source.ResolveRevisionName))
	s.Equal(3, s.stepCalls(cluster.CompareName))
	s.Positive(l.upsAt5m)
	s.Positive(l.memo5m)
	s.Equal(l.upsAt5m, l.saUps, "search attributes upserted by a pass that changed nothing")
	s.Equal(l.memo5m, l.memoUps, "memo upserted by a pass that changed nothing")
	// The sweep reads the refresh interval (AppConfig's 600 s) there.
	s.Equal(int64(600), l.memo[MemoRefreshSeconds])
}

// stepsOneByOne are the local activities of leanRun when every pass runs
// its steps one by one: when the quick pass fails.
var stepsOneByOne = map[string]int{
	project.GetName: 3, source.ResolveRevisionName: 3, placement.TaskQueueName: 2,
	cluster.PlanName: 1, cluster.CompareName: 3, notify.EvaluateName: 2,
}

// A quick pass that fails as a whole (it is not retried) answers for no
// step: the pass runs them all, with the same outcome.
func (s *appSuite) TestQuickPassFailureRunsTheSteps() {
	s.env.OnActivity(reconcile.QuickPassName, mock.Anything, mock.Anything).Return(reconcile.Pass{}, errors.New("worker shutting down")).Times(3)
	l := s.leanRun()
	want := maps.Clone(stepsOneByOne)
	want[reconcile.QuickPassName] = 3
	s.Equal(want, l.local)
}

// A quick pass whose compare fails answers for the project and the
// revision: the pass compares on its own, with the compare's retries.
func (s *appSuite) TestQuickPassCompareErrorComparesAgain() {
	s.expectProject(appspec.DefaultProjectSpec())
	s.expectReconcile(sha1, synced)
	s.expectResolve(sha1, false)
	in := cluster.CompareInput{Target: target(), Manifests: ref(sha1)}
	s.steps.On(cluster.CompareName, in).Return(cluster.CompareOutput{}, errors.New("connection refused")).Once()
	s.steps.On(cluster.CompareName, in).Return(outOfSync, nil).Once()
	l := s.recordSteps()
	var view AppView
	s.at(90*time.Second, func() { view = s.status() })
	s.cancelAt(2 * time.Minute)
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(false), Config: AppConfig{RefreshSeconds: 60}})
	s.Equal(appspec.SyncOutOfSync, view.Status.Sync)
	s.Equal(2, l.local[reconcile.QuickPassName], "the first pass's and the timer's")
	s.Equal(2, l.local[cluster.CompareName], "the first pass's, which rendered, and the timer's again")
	s.Zero(l.local[source.ResolveRevisionName])
	s.Zero(l.local[project.GetName])
}

// A quick pass that cannot resolve a source (a Git server that is slow
// or silent) leaves the resolve to a regular activity: the local one's
// retries would hold the workflow task, and every status query, for them
// all. The steps after it stay as they were.
func (s *appSuite) TestQuickPassResolveErrorResolvesRegularly() {
	s.expectProject(appspec.DefaultProjectSpec())
	s.steps.On(source.ResolveRevisionName, source.ResolveInput{RepoURL: repo, Revision: "main"}).
		Return(source.ResolveOutput{}, errors.New("ssh: handshake timed out after 10s")).Once()
	s.expectReconcile(sha1, synced)
	l := s.recordSteps()
	s.cancelAt(time.Minute)
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(false), Config: AppConfig{RefreshSeconds: 3600}})
	s.Equal(1, l.regular[source.ResolveRevisionName], "the workflow's own resolve")
	s.Zero(l.local[source.ResolveRevisionName])
	s.Equal(1, l.local[cluster.CompareName], "the compare stays local")
	s.assertExpectations()
}

// quickRenderRun is leanRun for an app whose first pass finds its
// manifests in the cache (another app rendered the same request): cached
// is what the cache answers for the request at sha1.
func (s *appSuite) quickRenderRun(cached render.ManifestRef) *stepLog {
	s.steps.On(cachedStep, ref(sha1).Request).Return(cached, true).Maybe()
	if cached.SHA != sha1 {
		s.steps.On(cluster.CompareName, cluster.CompareInput{Target: target(), Manifests: cached}).Return(synced, nil).Maybe()
	} else {
		s.rendered = sha1 // no render activity for the first pass
	}
	return s.leanRun()
}

// A new app whose request the manifest cache holds renders nothing: its
// first quick pass finds the manifests and compares them, so the first pass is one local activity and the sync
// starts from the app's first workflow task. The passes after it find no
// source moved and do not ask the cache.
func (s *appSuite) TestQuickRenderFirstSync() {
	l := s.quickRenderRun(ref(sha1))
	s.Equal(map[string]int{cluster.ApplyWaveName: 1}, l.regular)
	s.Equal(map[string]int{reconcile.QuickPassName: 3, placement.TaskQueueName: 2, cluster.PlanName: 1, notify.EvaluateName: 2}, l.local)
	s.Equal(1, s.stepCalls(cachedStep))
	s.Equal(3, s.stepCalls(cluster.CompareName))
}

// A ref from the cache that is not of the pass's request is not taken,
// nor the compare of its manifests: the pass renders and compares on its
// own.
func (s *appSuite) TestQuickRenderOfAnotherRequestIsNotTaken() {
	l := s.quickRenderRun(ref(sha2))
	s.Equal(1, l.regular[render.RenderName])
	s.Equal(1, l.local[cluster.CompareName], "the first pass's own compare")
	s.Equal(1, s.stepCalls(cachedStep))
}

// A pass whose automated sync starts in the same workflow task leaves its
// status to the sync's publish: the first sync upserts the memo twice, as
// the sync starts and after the pass that follows it. The search
// attributes are upserted alike.
func (s *appSuite) TestPublishCoalesced() {
	l := s.leanRun()
	s.Equal([]string{PhaseRunning, ""}, l.memoOps[:l.memo5m])
	s.Equal(2, l.upsAt5m)
}

// A cheap step run locally keeps its regular preset's per-attempt timeout
// and retries, with a budget for all its attempts (the SDK's default
// budget is one attempt's timeout).
func TestLocalOptionsKeepThePreset(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	for _, tc := range []struct {
		name   string
		preset func(workflow.Context) workflow.Context
		each   time.Duration
		budget time.Duration
	}{
		{name: "quick", preset: quickOptions, each: 30 * time.Second, budget: 5 * 40 * time.Second},
		{name: "git", preset: gitOptions, each: 2 * time.Minute, budget: 3 * 150 * time.Second},
		{name: "cluster", preset: clusterOptions, each: 5 * time.Minute, budget: 3 * 330 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := s.NewTestWorkflowEnvironment()
			env.ExecuteWorkflow(func(ctx workflow.Context) ([]time.Duration, error) {
				lo := workflow.GetLocalActivityOptions(localOptions(tc.preset(ctx)))
				return []time.Duration{lo.StartToCloseTimeout, lo.ScheduleToCloseTimeout, time.Duration(lo.RetryPolicy.MaximumAttempts)}, nil
			})
			var got []time.Duration
			require.NoError(t, env.GetWorkflowResult(&got))
			require.Equal(t, tc.each, got[0])
			require.Equal(t, tc.budget, got[1])
			require.Positive(t, got[2])
		})
	}
}

// The API creates an app by an Update-With-Start of setSpec with the
// start's own spec. The wake-up that setSpec sends is stale once the
// first pass has read the same spec: no second pass. A spec that differs
// from the one the pass read gets its pass.
func (s *appSuite) TestStaleWakeCostsNoPass() {
	changed := testSpec(false)
	changed.RefreshSeconds = 900
	for _, tc := range []struct {
		name     string
		spec     appspec.Application
		compares int
	}{
		{name: "same spec", spec: testSpec(false), compares: 1},
		{name: "changed spec", spec: changed, compares: 2},
	} {
		s.Run(tc.name, func() {
			s.SetupTest()
			l := s.recordSteps()
			s.expectProject(appspec.DefaultProjectSpec())
			for range tc.compares {
				s.expectReconcile(sha1, synced)
			}
			var set *updateOutcome
			s.at(0, func() { set = s.update(UpdateSetSpec, tc.spec) })
			s.cancelAt(5 * time.Minute)
			s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(false), Config: AppConfig{RefreshSeconds: 600}})
			s.Require().NoError(set.err)
			s.Equal(tc.compares, s.stepCalls(cluster.CompareName))
			s.Zero(l.regular[project.GetName], "setSpec looks the project up locally")
			s.assertExpectations()
		})
	}
}

// A sync of several steps tells the app which step runs, for the UI's
// operation panel; a sync of a single step sends no report before it.
func (s *appSuite) TestProgressOfMultiStepSyncs() {
	preSync := cluster.Step{Phase: cluster.PhasePreSync, Wave: 0, Resources: 1}
	for _, tc := range []struct {
		name  string
		steps []cluster.Step
		want  *cluster.Step
	}{
		{name: "two steps", steps: []cluster.Step{preSync, syncStep}, want: &syncStep},
		{name: "one step", steps: []cluster.Step{syncStep}},
	} {
		s.Run(tc.name, func() {
			s.SetupTest()
			op := s.expectManualSyncPlan(tc.steps)
			for i, step := range tc.steps {
				wi := cluster.WaveInput{Target: target(), Manifests: ref(sha1), Operation: op, Step: step, SettleMillis: defaultWaveWait.Milliseconds()}
				apply := s.env.OnActivity(cluster.ApplyWaveName, mock.Anything, wi).Return(cluster.WaveOutput{}, nil).Once()
				if i == len(tc.steps)-1 {
					apply.After(10 * time.Minute) // the last step takes a while; it is not waited for
					continue
				}
				s.env.OnActivity(cluster.WaitWaveName, mock.Anything, wi).Return(cluster.WaveOutput{Health: appspec.HealthHealthy}, nil).Once()
			}
			s.expectReconcile(sha1, synced)
			var during *Operation
			s.at(time.Second, func() { s.update(UpdateSync, SyncRequest{Initiator: "alice"}) })
			s.at(5*time.Minute, func() {
				v, err := s.env.QueryWorkflow(QueryOperation)
				s.Require().NoError(err)
				s.Require().NoError(v.Get(&during))
			})
			s.cancelAt(20 * time.Minute)
			s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(false), Config: AppConfig{RefreshSeconds: 3600}})
			s.Require().NotNil(during, "the sync runs at 5 minutes")
			s.Equal(tc.want, during.Step)
			if tc.want != nil {
				s.Equal(len(tc.steps)-1, during.StepIndex)
				s.Equal(len(tc.steps), during.Steps)
			}
			s.assertExpectations()
		})
	}
}

// A refresh about the live state (the drift watch's, the self-heal
// sweep's) resolves the revision through the ls-remote cache; any other
// refresh bypasses the cache.
func (s *appSuite) TestLiveRefreshUsesTheRevisionCache() {
	for _, tc := range []struct {
		name  string
		req   RefreshRequest
		fresh bool
	}{
		{name: "drift", req: RefreshRequest{Reason: "drift: Deployment web/web changed", Live: true}},
		{name: "webhook", req: RefreshRequest{Reason: "push"}, fresh: true},
	} {
		s.Run(tc.name, func() {
			s.SetupTest()
			s.expectProject(appspec.DefaultProjectSpec())
			s.expectReconcile(sha1, synced)
			s.expectReconcileF(sha1, synced, tc.fresh)
			s.at(time.Minute, func() { s.env.SignalWorkflow(SignalRefresh, tc.req) })
			s.cancelAt(2 * time.Minute)
			s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(false), Config: AppConfig{RefreshSeconds: 600}})
			s.assertExpectations()
		})
	}
}

// A pass that only the drift watch asked for compares with Drift (the app's
// known objects are read by GET); a pass that anything else asked for, a
// webhook's, the self-heal sweep's, the timer's, the one after a sync,
// lists them.
func (s *appSuite) TestDriftPassComparesWithDrift() {
	drift := RefreshRequest{Reason: "drift: Deployment web/web changed", Live: true, Drift: true}
	for _, tc := range []struct {
		name   string
		signal *RefreshRequest
		fresh  bool
		drift  bool
		heal   bool // the drift pass finds the app OutOfSync and syncs it
	}{
		{name: "drift", signal: &drift, drift: true},
		{name: "a webhook", signal: &RefreshRequest{Reason: "push"}, fresh: true},
		{name: "the self-heal sweep", signal: &RefreshRequest{Reason: "self-heal sweep", Live: true}},
		{name: "the timer"},
		{name: "drift, then the pass after its sync", signal: &drift, drift: true, heal: true},
	} {
		s.Run(tc.name, func() {
			s.SetupTest()
			s.expectProject(appspec.DefaultProjectSpec())
			s.expectReconcile(sha1, synced)
			s.expectResolve(sha1, tc.fresh)
			in := cluster.CompareInput{Target: target(), Manifests: ref(sha1), Drift: tc.drift}
			if tc.heal {
				s.steps.On(cluster.CompareName, in).Return(outOfSync, nil).Once()
				s.expectSync(1, sha1, nil)
				s.expectReconcile(sha1, synced)
			} else {
				s.steps.On(cluster.CompareName, in).Return(synced, nil).Once()
			}
			refresh := 600
			if tc.signal == nil {
				refresh = 60 // the second pass is the timer's
			} else {
				s.at(time.Minute-time.Second, func() { s.env.SignalWorkflow(SignalRefresh, *tc.signal) })
			}
			s.cancelAt(time.Minute + 5*time.Second)
			s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(tc.heal), Config: AppConfig{RefreshSeconds: refresh}})
			s.assertExpectations()
		})
	}
}

// Drift that keeps coming keeps the refresh timer from firing: once the
// last pass that listed is a refresh interval old, a drift pass lists too.
func (s *appSuite) TestDriftPassesListOncePerInterval() {
	drift := RefreshRequest{Reason: "drift: Deployment web/web changed", Live: true, Drift: true}
	s.expectProject(appspec.DefaultProjectSpec())
	s.expectReconcile(sha1, synced) // at the start: lists
	s.steps.On(source.ResolveRevisionName, source.ResolveInput{RepoURL: repo, Revision: "main"}).
		Return(source.ResolveOutput{SHA: sha1, Ref: "refs/heads/main"}, nil).Times(3)
	byGet := cluster.CompareInput{Target: target(), Manifests: ref(sha1), Drift: true}
	listing := cluster.CompareInput{Target: target(), Manifests: ref(sha1)}
	s.steps.On(cluster.CompareName, byGet).Return(synced, nil).Twice()  // at 5 and 9 minutes
	s.steps.On(cluster.CompareName, listing).Return(synced, nil).Once() // at 11
	for _, at := range []time.Duration{5 * time.Minute, 9 * time.Minute, 11 * time.Minute} {
		s.at(at, func() { s.env.SignalWorkflow(SignalRefresh, drift) })
	}
	s.cancelAt(12 * time.Minute)
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(false), Config: AppConfig{RefreshSeconds: 600}})
	s.assertExpectations()
}

// What a running sync's wave applied shows in the app's status before the
// wave is waited for: Synced, with the health its
// apply left it in; the rest keeps its compared state.
func (s *appSuite) TestStatusShowsAppliedWaves() {
	cm := appspec.ResourceKey{Kind: "ConfigMap", Namespace: "web", Name: "cfg"}
	first := cluster.Step{Phase: cluster.PhaseSync, Wave: -1, Resources: 1}
	missing := func(k appspec.ResourceKey) appspec.ResourceStatus {
		return appspec.ResourceStatus{ResourceKey: k, Status: appspec.SyncOutOfSync, Health: appspec.HealthMissing}
	}
	s.expectProject(appspec.DefaultProjectSpec())
	s.expectReconcile(sha1, cluster.CompareOutput{Sync: appspec.SyncOutOfSync, Health: appspec.HealthMissing,
		Resources: []appspec.ResourceStatus{missing(cm), missing(service)}})
	s.expectResolve(sha1, true)
	op := syncOp(1, false)
	s.env.OnActivity(render.RenderName, mock.Anything, render.RenderInput{Request: ref(sha1).Request}).Return(ref(sha1), nil).Once()
	pin := cluster.PlanInput{Target: target(), Manifests: ref(sha1), Operation: op, Project: ptr(appspec.DefaultProjectSpec())}
	s.env.OnActivity(cluster.PlanName, mock.Anything, pin).Return(cluster.PlanOutput{Steps: []cluster.Step{first, syncStep}}, nil).Once()
	wave := func(st cluster.Step) cluster.WaveInput {
		return cluster.WaveInput{Target: target(), Manifests: ref(sha1), Operation: op, Step: st, SettleMillis: defaultWaveWait.Milliseconds()}
	}
	s.env.OnActivity(cluster.ApplyWaveName, mock.Anything, wave(first)).Return(cluster.WaveOutput{Resources: []cluster.ResourceResult{
		{ResourceKey: cm, Action: cluster.ActionCreated, Phase: cluster.PhaseSync, Wave: -1, Health: appspec.HealthProgressing}}}, nil).Once()
	s.env.OnActivity(cluster.WaitWaveName, mock.Anything, wave(first)).After(10*time.Minute).
		Return(cluster.WaveOutput{Health: appspec.HealthHealthy}, nil).Once()
	s.env.OnActivity(cluster.ApplyWaveName, mock.Anything, wave(syncStep)).Return(cluster.WaveOutput{}, nil).Once()
	s.expectReconcile(sha1, synced)
	var during AppView
	s.at(time.Second, func() { s.update(UpdateSync, SyncRequest{Initiator: "alice"}) })
	s.at(5*time.Minute, func() { during = s.status() })
	s.cancelAt(20 * time.Minute)
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(false), Config: AppConfig{RefreshSeconds: 3600}})
	s.Require().NotNil(during.Status.Operation, "the sync runs at 5 minutes")
	s.Equal([]appspec.ResourceStatus{
		{ResourceKey: cm, Status: appspec.SyncSynced, Health: appspec.HealthProgressing}, missing(service),
	}, during.Status.Resources)
	s.Equal(appspec.SyncOutOfSync, during.Status.Sync)
	s.Equal(appspec.HealthMissing, during.Status.Health)
	s.assertExpectations()
}
