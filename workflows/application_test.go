package workflows

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/suite"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/activities/depends"
	"github.com/windlass-cd/windlass/activities/notify"
	"github.com/windlass-cd/windlass/activities/placement"
	"github.com/windlass-cd/windlass/activities/project"
	"github.com/windlass-cd/windlass/activities/reconcile"
	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/activities/source"
	"github.com/windlass-cd/windlass/activities/watch"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/secretstore"
)

type appSuite struct {
	suite.Suite
	testsuite.WorkflowTestSuite
	env  *testsuite.TestWorkflowEnvironment
	proj appspec.Project
	// steps answers a pass's project, resolve and compare steps (and the
	// quick pass's cache lookups), whether
	// the workflow runs them as activities of their own or the quick pass
	// (the real reconcile.Activities, registered over steps) runs them.
	steps *stepMock
	// rendered is the SHA the app workflow rendered last: a reconcile
	// renders only another request.
	rendered string
}

func TestApplicationWorkflow(t *testing.T) { suite.Run(t, new(appSuite)) }

const (
	repo = "http://git.test/apps.git"
	sha1 = "1111111111111111111111111111111111111111"
	sha2 = "2222222222222222222222222222222222222222"
)

func testSpec(automated bool) appspec.Application {
	a := appspec.Application{Name: "guestbook", Project: "default",
		Source:      appspec.Source{RepoURL: repo, Path: "guestbook", TargetRevision: "main"},
		Destination: appspec.Destination{Namespace: "web"}}
	if automated {
		a.SyncPolicy = &appspec.SyncPolicy{Automated: &appspec.Automated{}}
	}
	return a.Defaulted()
}

func selfHealSpec() appspec.Application {
	a := testSpec(true)
	a.SyncPolicy.Automated.SelfHeal = true
	return a
}

// placeholder registers an activity under name that fails if a test did not
// expect the call: every call a test makes is mocked with its exact input.
func placeholder[I, O any](env *testsuite.TestWorkflowEnvironment, name string) {
	env.RegisterActivityWithOptions(func(context.Context, I) (O, error) {
		var zero O
		return zero, errors.New("unexpected call of " + name)
	}, activity.RegisterOptions{Name: name})
}

func registerPlaceholders(env *testsuite.TestWorkflowEnvironment) {
	placeholder[source.ResolveInput, source.ResolveOutput](env, source.ResolveRevisionName)
	placeholder[cluster.CompareInput, cluster.CompareOutput](env, cluster.CompareName)
	placeholder[project.GetInput, appspec.Project](env, project.GetName)
	registerOtherPlaceholders(env)
}

// registerOtherPlaceholders registers the placeholders of every activity
// but a pass's steps (project, resolve, compare).
func registerOtherPlaceholders(env *testsuite.TestWorkflowEnvironment) {
	placeholder[render.RenderInput, render.ManifestRef](env, render.RenderName)
	placeholder[cluster.PlanInput, cluster.PlanOutput](env, cluster.PlanName)
	placeholder[cluster.WaveInput, cluster.WaveOutput](env, cluster.ApplyWaveName)
	placeholder[cluster.WaveInput, cluster.WaveOutput](env, cluster.WaitWaveName)
	placeholder[cluster.PruneInput, cluster.PruneOutput](env, cluster.PruneName)
	env.RegisterActivityWithOptions(func(context.Context, cluster.HookCleanupInput) error {
		return errors.New("unexpected call of " + cluster.DeleteHooksName)
	}, activity.RegisterOptions{Name: cluster.DeleteHooksName})
	placeholder[cluster.DeleteAppInput, cluster.DeleteAppOutput](env, cluster.DeleteAppName)
	placeholder[project.WindowInput, appspec.WindowDecision](env, project.SyncWindowName)
	placeholder[cluster.RunActionInput, cluster.RunActionOutput](env, cluster.RunActionName)
	placeholder[cluster.RetrackInput, cluster.RetrackOutput](env, cluster.RetrackName)
	placeholder[depends.CheckInput, depends.CheckOutput](env, depends.CheckName)
	// No notifications are configured unless a test says so.
	noNotify, _ := notify.New(notify.StaticSource{}, &secretstore.Memory{}, slog.New(slog.DiscardHandler))
	noNotify.Register(env)
	// No cluster has a task queue of its own unless a test says so.
	noQueues, _ := placement.New(placement.None{})
	noQueues.Register(env)
}

func (s *appSuite) SetupTest() {
	s.rendered = ""
	s.env = s.NewTestWorkflowEnvironment()
	Register(s.env)
	registerOtherPlaceholders(s.env)
	s.steps = registerSteps(s.env)
	s.env.SetStartTime(time.Date(2026, 1, 10, 10, 0, 0, 0, time.UTC))
}

func (s *appSuite) AfterTest(_, _ string) { s.assertExpectations() }

// assertExpectations checks that every expected activity and step ran.
func (s *appSuite) assertExpectations() {
	s.env.AssertExpectations(s.T())
	s.steps.AssertExpectations(s.T())
}

// stepCalls counts the calls of a pass's step, by the quick pass or not.
func (s *appSuite) stepCalls(step string) int {
	n := 0
	for _, c := range s.steps.Calls {
		if c.Method == step {
			n++
		}
	}
	return n
}

// stepMock is the mock of a pass's steps: a test expects each step with
// steps.On(name, input), and the step's activity and the quick pass both
// answer from it, so one expectation holds whichever runs the step. An
// unexpected call fails the step.
type stepMock struct{ mock.Mock }

func registerSteps(env *testsuite.TestWorkflowEnvironment) *stepMock {
	m := &stepMock{}
	env.RegisterActivityWithOptions(m.Get, activity.RegisterOptions{Name: project.GetName})
	env.RegisterActivityWithOptions(m.ResolveRevision, activity.RegisterOptions{Name: source.ResolveRevisionName})
	env.RegisterActivityWithOptions(m.Compare, activity.RegisterOptions{Name: cluster.CompareName})
	quick, err := reconcile.New(m, m, m, m, nil)
	if err != nil {
		panic(err)
	}
	quick.Register(env)
	return m
}

// called answers the call of step with input in, or fails it when no test
// expected it.
func (m *stepMock) called(step string, in any) (args mock.Arguments, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("unexpected call of %s(%+v)", step, in)
		}
	}()
	return m.MethodCalled(step, in), nil
}

func (m *stepMock) Get(_ context.Context, in project.GetInput) (appspec.Project, error) {
	args, err := m.called(project.GetName, in)
	if err != nil {
		return appspec.Project{}, err
	}
	return args.Get(0).(appspec.Project), args.Error(1)
}

func (m *stepMock) ResolveRevision(_ context.Context, in source.ResolveInput) (source.ResolveOutput, error) {
	args, err := m.called(source.ResolveRevisionName, in)
	if err != nil {
		return source.ResolveOutput{}, err
	}
	return args.Get(0).(source.ResolveOutput), args.Error(1)
}

// cachedStep is the quick pass's manifest-cache lookup: a test that
// expects none has every lookup miss.
const cachedStep = "cached"

func (m *stepMock) Cached(_ context.Context, req render.Request) (render.ManifestRef, bool) {
	args, err := m.called(cachedStep, req)
	if err != nil {
		return render.ManifestRef{}, false
	}
	return args.Get(0).(render.ManifestRef), args.Bool(1)
}

// RenderQuick never renders: the workflow tests' first passes stop at the
// render, as a worker's do for sources it has not read.
func (m *stepMock) RenderQuick(context.Context, render.Request) (render.ManifestRef, bool) {
	return render.ManifestRef{}, false
}

func (m *stepMock) Compare(_ context.Context, in cluster.CompareInput) (cluster.CompareOutput, error) {
	args, err := m.called(cluster.CompareName, in)
	if err != nil {
		return cluster.CompareOutput{}, err
	}
	return args.Get(0).(cluster.CompareOutput), args.Error(1)
}

func sources(sha string) []render.SourceRequest {
	return []render.SourceRequest{{Source: appspec.Source{RepoURL: repo, Path: "guestbook", TargetRevision: "main"}, SHA: sha}}
}

// ref is what the render of sha returns to an app of the default project.
func ref(sha string) render.ManifestRef {
	req := render.Request{AppName: "guestbook", Namespace: "web", Sources: sources(sha), Scope: render.ScopeOf(appspec.DefaultProjectSpec())}
	return render.ManifestRef{Key: req.Key(), SHA: sha, Count: 2, Digest: "sha256:x", Request: req}
}

// bareReq is ref(sha)'s request without a project, as a sync started
// without one renders it.
func bareReq(sha string) render.Request {
	req := ref(sha).Request
	req.Scope = nil
	return req
}

func target() cluster.Target {
	return cluster.Target{Project: "default", App: "guestbook", Destination: appspec.Destination{Server: appspec.InClusterServer, Namespace: "web"}}
}

var (
	outOfSync = cluster.CompareOutput{Sync: appspec.SyncOutOfSync, Health: appspec.HealthMissing}
	synced    = cluster.CompareOutput{Sync: appspec.SyncSynced, Health: appspec.HealthHealthy}
	service   = appspec.ResourceKey{Kind: "Service", Namespace: "web", Name: "guestbook"}
	syncStep  = cluster.Step{Phase: cluster.PhaseSync, Wave: 0, Resources: 2}
)

// expectProject answers project lookups with p, as often as asked.
func (s *appSuite) expectProject(p appspec.Project) {
	s.proj = p
	s.steps.On(project.GetName, project.GetInput{Name: "default"}).Return(p, nil)
}

// expectResolve expects the revision resolved; fresh (a requested refresh
// or a manual sync) bypasses the ls-remote cache.
func (s *appSuite) expectResolve(sha string, fresh bool) {
	s.steps.On(source.ResolveRevisionName, source.ResolveInput{RepoURL: repo, Revision: "main", Hard: fresh}).
		Return(source.ResolveOutput{SHA: sha, Ref: "refs/heads/main"}, nil).Once()
}

func (s *appSuite) expectReconcile(sha string, out cluster.CompareOutput) {
	s.expectReconcileF(sha, out, false)
}

// expectReconcileF expects a reconcile pass after a refresh signal.
// The render is expected when the SHA differs from the last rendered.
func (s *appSuite) expectReconcileF(sha string, out cluster.CompareOutput, fresh bool) {
	s.expectResolve(sha, fresh)
	if sha != s.rendered {
		s.env.OnActivity(render.RenderName, mock.Anything, render.RenderInput{Request: ref(sha).Request}).Return(ref(sha), nil).Once()
		s.rendered = sha
	}
	s.steps.On(cluster.CompareName, cluster.CompareInput{Target: target(), Manifests: ref(sha)}).Return(out, nil).Once()
}

// syncOp is the operation the app workflow hands its n-th sync.
func syncOp(n int, prune bool) cluster.SyncOperation {
	return cluster.SyncOperation{SyncID: SyncWorkflowID("default", "guestbook", n), Prune: prune}
}

// expectSync expects the activities of sync n at sha: render (unless the
// app hands the sync its manifests, as an automated sync does), plan, one
// wave applied (the last wave: not waited for); applyErr fails the apply,
// and a failure runs the SyncFail plan and the hook cleanup.
func (s *appSuite) expectSync(n int, sha string, applyErr error) {
	op := syncOp(n, false)
	s.env.OnActivity(render.RenderName, mock.Anything, render.RenderInput{Request: ref(sha).Request}).Return(ref(sha), nil).Maybe()
	pin := cluster.PlanInput{Target: target(), Manifests: ref(sha), Operation: op, Project: ptr(s.proj)}
	s.env.OnActivity(cluster.PlanName, mock.Anything, pin).Return(cluster.PlanOutput{Steps: []cluster.Step{syncStep}}, nil).Once()
	wi := cluster.WaveInput{Target: target(), Manifests: ref(sha), Operation: op, Step: syncStep, SettleMillis: defaultWaveWait.Milliseconds()}
	applied := cluster.WaveOutput{Resources: []cluster.ResourceResult{{ResourceKey: service, Action: cluster.ActionCreated}}}
	if applyErr != nil {
		applied.Failed = &service
	}
	s.env.OnActivity(cluster.ApplyWaveName, mock.Anything, wi).Return(applied, applyErr).Once()
	if applyErr == nil {
		return
	}
	s.env.OnActivity(cluster.PlanName, mock.Anything, pin).Return(cluster.PlanOutput{Steps: []cluster.Step{syncStep}}, nil).Once()
	s.env.OnActivity(cluster.DeleteHooksName, mock.Anything, cluster.HookCleanupInput{Target: target(), SyncID: op.SyncID, Outcome: cluster.OutcomeFailed}).
		Return(nil).Once()
}

// expectManualSyncPlan expects a manual app's first pass (OutOfSync at
// sha1), then the first manual sync's resolve, render and plan, which
// returns steps; it returns the sync's operation.
func (s *appSuite) expectManualSyncPlan(steps []cluster.Step) cluster.SyncOperation {
	s.expectProject(appspec.DefaultProjectSpec())
	s.expectReconcile(sha1, outOfSync)
	s.expectResolve(sha1, true)
	op := syncOp(1, false)
	s.env.OnActivity(render.RenderName, mock.Anything, render.RenderInput{Request: ref(sha1).Request}).Return(ref(sha1), nil).Once()
	pin := cluster.PlanInput{Target: target(), Manifests: ref(sha1), Operation: op, Project: ptr(appspec.DefaultProjectSpec())}
	s.env.OnActivity(cluster.PlanName, mock.Anything, pin).Return(cluster.PlanOutput{Steps: steps}, nil).Once()
	return op
}

func ptr[T any](v T) *T { return &v }

func (s *appSuite) status() AppView {
	v, err := s.env.QueryWorkflow(QueryStatus)
	s.Require().NoError(err)
	var view AppView
	s.Require().NoError(v.Get(&view))
	return view
}

// at runs fn at d after the start, then cancels the workflow at end.
func (s *appSuite) at(d time.Duration, fn func()) { s.env.RegisterDelayedCallback(fn, d) }

func (s *appSuite) cancelAt(d time.Duration) { s.env.RegisterDelayedCallback(s.env.CancelWorkflow, d) }

// updateOutcome is filled in as the test environment runs an update.
type updateOutcome struct {
	accepted bool
	result   any
	err      error
}

// update sends an update; its outcome is known once the callbacks ran,
// which is later: read it after ExecuteWorkflow returns.
func (s *appSuite) update(name string, arg any) *updateOutcome {
	o := &updateOutcome{}
	s.env.UpdateWorkflow(name, "", &testsuite.TestUpdateCallback{
		OnReject:   func(e error) { o.err = e },
		OnAccept:   func() { o.accepted = true },
		OnComplete: func(v any, e error) { o.result, o.err = v, e },
	}, arg)
	return o
}

// An automated app that is OutOfSync syncs by itself and ends Synced.
func (s *appSuite) TestAutoSyncOnOutOfSync() {
	s.expectProject(appspec.DefaultProjectSpec())
	s.expectReconcile(sha1, outOfSync)
	s.expectSync(1, sha1, nil)
	s.expectReconcile(sha1, synced)
	var view AppView
	s.at(time.Minute, func() { view = s.status(); s.env.CancelWorkflow() })
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(true)})
	s.Equal(appspec.SyncSynced, view.Status.Sync)
	s.Equal(appspec.HealthHealthy, view.Status.Health)
	s.Equal(sha1, view.Status.SHA)
	s.Require().Len(view.History, 1)
	h := view.History[0]
	s.Equal(SyncWorkflowID("default", "guestbook", 1), h.ID)
	s.Equal(PhaseSucceeded, h.Phase)
	s.Equal(InitiatorAutomated, h.Initiator)
	s.Equal(sources(sha1), h.Sources)
}

// A SHA whose automated sync failed is not synced again; a new SHA is.
func (s *appSuite) TestNoRetryOfFailedSHA() {
	rejected := temporal.NewNonRetryableApplicationError("apply rejected", "ApplyFailed", nil)
	s.expectProject(appspec.DefaultProjectSpec())
	s.expectReconcile(sha1, outOfSync)
	s.expectSync(1, sha1, rejected)
	s.expectReconcile(sha1, outOfSync) // after the failed sync
	s.expectReconcile(sha1, outOfSync) // timer refresh: same SHA, no sync
	s.expectReconcile(sha2, outOfSync) // new commit: sync again
	s.expectSync(2, sha2, nil)
	s.expectReconcile(sha2, synced)
	var view AppView
	s.at(7*time.Minute, func() { view = s.status(); s.env.CancelWorkflow() })
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(true), Config: AppConfig{RefreshSeconds: 180}})
	s.Require().Len(view.History, 2)
	s.Equal(PhaseSucceeded, view.History[0].Phase)
	s.Equal(sha2, view.History[0].SHA)
	s.Equal(PhaseFailed, view.History[1].Phase)
	s.Contains(view.History[1].Message, "apply rejected")
}

// A manual sync through the update returns the sync's ID once it has
// started; a second sync while one runs is rejected by the validator.
func (s *appSuite) TestManualSyncUpdate() {
	s.expectProject(appspec.DefaultProjectSpec())
	s.expectReconcile(sha1, outOfSync)
	s.expectResolve(sha1, true) // the update resolves the revision before accepting
	s.expectSync(1, sha1, nil)
	s.expectReconcile(sha1, synced)
	var first, second *updateOutcome
	s.at(time.Second, func() {
		first = s.update(UpdateSync, SyncRequest{Initiator: "alice"})
		second = s.update(UpdateSync, SyncRequest{Initiator: "bob"})
	})
	var view AppView
	s.at(time.Minute, func() { view = s.status(); s.env.CancelWorkflow() })
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(false)})
	s.Require().NoError(first.err)
	s.Equal(SyncAccepted{ID: SyncWorkflowID("default", "guestbook", 1)}, first.result)
	s.Require().Error(second.err)
	s.Contains(second.err.Error(), "already in progress")
	s.Require().Len(view.History, 1)
	s.Equal("alice", view.History[0].Initiator)
	s.Equal(PhaseSucceeded, view.History[0].Phase)
}

// A sync signal that cannot run is recorded as an event with its reason.
func (s *appSuite) TestSyncSignalRefusedIsAnEvent() {
	s.expectProject(appspec.DefaultProjectSpec())
	s.expectReconcile(sha1, synced)
	s.steps.On(source.ResolveRevisionName, source.ResolveInput{RepoURL: repo, Revision: "nope", Hard: true}).
		Return(source.ResolveOutput{}, temporal.NewNonRetryableApplicationError("revision nope not found", "RevisionNotFound", nil)).Once()
	s.at(time.Second, func() { s.env.SignalWorkflow(SignalSync, SyncRequest{Revision: "nope", Initiator: "ops"}) })
	s.expectReconcile(sha1, synced) // the pass after the signal
	var view AppView
	s.at(time.Minute, func() { view = s.status(); s.env.CancelWorkflow() })
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(false)})
	s.Empty(view.History)
	s.Require().NotEmpty(view.Status.Events)
	s.Equal("SyncRefused", view.Status.Events[0].Reason)
	s.Contains(view.Status.Events[0].Message, "revision nope not found")
}

// A refresh that carries an event (the API's write to a resource)
// records it, and the pass it starts shows the write's effect.
func (s *appSuite) TestRefreshRecordsEvent() {
	s.expectProject(appspec.DefaultProjectSpec())
	s.expectReconcile(sha1, synced)
	s.expectReconcile(sha1, synced) // the pass after the signal
	ev := &Event{Type: EventNormal, Reason: "ResourceDeleted", Message: "/Pod:default/web-1 deleted by alice"}
	s.at(time.Second, func() { s.env.SignalWorkflow(SignalRefresh, RefreshRequest{Live: true, Event: ev}) })
	var view AppView
	s.at(time.Minute, func() { view = s.status(); s.env.CancelWorkflow() })
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(false)})
	s.Require().NotEmpty(view.Status.Events)
	got := view.Status.Events[0]
	s.Equal([3]string{ev.Type, ev.Reason, ev.Message}, [3]string{got.Type, got.Reason, got.Message})
	s.False(got.Time.IsZero())
}

// A sync whose revision cannot be resolved because the Kubernetes API
// (the repository credentials) does not answer is refused as Unavailable,
// not as a missing revision.
func (s *appSuite) TestSyncRefusedAsUnavailable() {
	s.expectProject(appspec.DefaultProjectSpec())
	s.expectReconcile(sha1, synced)
	s.steps.On(source.ResolveRevisionName, source.ResolveInput{RepoURL: repo, Revision: "main", Hard: true}).
		Return(source.ResolveOutput{}, temporal.NewApplicationError("resolve main: the Kubernetes API is unreachable", failure.TypeUnreachable))
	var sync *updateOutcome
	s.at(time.Second, func() { sync = s.update(UpdateSync, SyncRequest{Initiator: "alice"}) })
	s.cancelAt(time.Minute)
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(false)})
	var app *temporal.ApplicationError
	s.Require().ErrorAs(sync.err, &app)
	s.Equal(ErrTypeUnavailable, app.Type())
	s.Contains(app.Message(), "the Kubernetes API is unreachable")
}

// A non-automated app stays OutOfSync; a bad revision makes it Unknown
// with the reason, and the workflow keeps running.
func (s *appSuite) TestUnknownOnResolveError() {
	s.expectProject(appspec.DefaultProjectSpec())
	// The quick pass stops at the error, and the pass's own step meets it
	// again (not retried: non-retryable) and reports it.
	s.steps.On(source.ResolveRevisionName, source.ResolveInput{RepoURL: repo, Revision: "main"}).
		Return(source.ResolveOutput{}, temporal.NewNonRetryableApplicationError("revision not found", "RevisionNotFound", nil)).Twice()
	var view AppView
	s.at(time.Minute, func() { view = s.status(); s.env.CancelWorkflow() })
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(false)})
	s.Equal(appspec.SyncUnknown, view.Status.Sync)
	s.Contains(view.Status.Message, "revision not found")
	s.Empty(view.History)
}

// A destination outside the project makes the app Unknown and not
// permitted; setSpec with such a destination is refused.
func (s *appSuite) TestProjectRestrictsDestination() {
	p := appspec.DefaultProjectSpec()
	p.Destinations = []appspec.ProjectDestination{{Server: "*", Namespace: "team-*"}}
	s.expectProject(p)
	var view AppView
	var set *updateOutcome
	s.at(time.Second, func() { set = s.update(UpdateSetSpec, testSpec(true)) })
	s.at(time.Minute, func() { view = s.status(); s.env.CancelWorkflow() })
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(true)})
	s.Equal(appspec.SyncUnknown, view.Status.Sync)
	s.Contains(view.Status.Message, "not permitted")
	s.Require().Error(set.err)
	s.Contains(set.err.Error(), "not permitted")
}

// setSpec validates: a bad spec or a rename is rejected; a good one is
// accepted and triggers a refresh.
func (s *appSuite) TestSetSpecValidation() {
	s.expectProject(appspec.DefaultProjectSpec())
	s.expectReconcile(sha1, synced)
	changed := testSpec(false)
	changed.RefreshSeconds = 60
	s.expectReconcile(sha1, synced)
	var bad, renamed, good *updateOutcome
	s.at(time.Second, func() {
		b := testSpec(false)
		b.Source.Path = "../../etc"
		r := testSpec(false)
		r.Name = "other"
		bad, renamed, good = s.update(UpdateSetSpec, b), s.update(UpdateSetSpec, r), s.update(UpdateSetSpec, changed)
	})
	s.cancelAt(time.Minute)
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(false)})
	s.False(bad.accepted)
	s.ErrorContains(bad.err, "path traversal")
	s.False(renamed.accepted)
	s.ErrorContains(renamed.err, "cannot change")
	s.Require().NoError(good.err)
	if d := cmp.Diff(changed, good.result.(AppView).Spec); d != "" {
		s.Fail("spec (-want +got)", d)
	}
}

// With selfHeal, drift at the synced SHA is synced again, and successive
// self-heals back off: 2 s, then 6 s after the previous one.
func (s *appSuite) TestSelfHealBackoff() {
	s.expectProject(appspec.DefaultProjectSpec())
	s.expectReconcile(sha1, outOfSync)
	s.expectSync(1, sha1, nil)
	s.expectReconcile(sha1, synced)
	// Drift 1: healed at once (attempt 1).
	s.expectReconcileF(sha1, outOfSync, true)
	s.expectSync(2, sha1, nil)
	s.expectReconcile(sha1, synced)
	// Drift 2, right after: attempt 2 must wait 6 s after attempt 1.
	s.expectReconcileF(sha1, outOfSync, true)
	s.expectReconcile(sha1, outOfSync) // woken by the backoff timer
	s.expectSync(3, sha1, nil)
	s.expectReconcile(sha1, synced)
	s.at(10*time.Second, func() { s.env.SignalWorkflow(SignalRefresh, RefreshRequest{Reason: "drift"}) })
	s.at(11*time.Second, func() { s.env.SignalWorkflow(SignalRefresh, RefreshRequest{Reason: "drift"}) })
	var view AppView
	s.at(time.Minute, func() { view = s.status(); s.env.CancelWorkflow() })
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: selfHealSpec()})
	s.Require().Len(view.History, 3)
	heal1, heal2 := view.History[1].StartedAt, view.History[0].StartedAt
	s.GreaterOrEqual(heal2.Sub(heal1), selfHealDelay(2), "second self-heal must back off")
	s.Equal(2, view.History[0].Attempts+1) // each sync ran one attempt
	s.Equal(6*time.Second, selfHealDelay(2))
	s.Equal(5*time.Minute, selfHealDelay(10))
}

// A rollback is refused while automated sync is on, unless forced; it then
// syncs exactly the past sync's sources.
func (s *appSuite) TestRollback() {
	s.expectProject(appspec.DefaultProjectSpec())
	s.expectReconcile(sha1, outOfSync)
	s.expectSync(1, sha1, nil)
	s.expectReconcile(sha1, synced)
	s.expectReconcile(sha2, outOfSync) // a new commit, auto-synced
	s.expectSync(2, sha2, nil)
	s.expectReconcile(sha2, synced)
	s.expectSync(3, sha1, nil) // the forced rollback to sync 1
	s.expectReconcile(sha2, outOfSync)
	var refused, forced *updateOutcome
	s.at(4*time.Minute, func() {
		refused = s.update(UpdateRollback, RollbackRequest{ID: SyncWorkflowID("default", "guestbook", 1)})
		forced = s.update(UpdateRollback, RollbackRequest{ID: SyncWorkflowID("default", "guestbook", 1), Force: true, Initiator: "alice"})
	})
	var view AppView
	s.at(5*time.Minute, func() { view = s.status(); s.env.CancelWorkflow() })
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(true), Config: AppConfig{RefreshSeconds: 180}})
	s.ErrorContains(refused.err, "automated sync is on")
	s.Require().NoError(forced.err)
	s.Equal(SyncAccepted{ID: SyncWorkflowID("default", "guestbook", 3)}, forced.result)
	s.Require().Len(view.History, 3)
	s.Equal(sha1, view.History[0].SHA)
	s.Equal("alice", view.History[0].Initiator)
	// Automated sync holds back: the target is still sha2, which the
	// rollback replaced on purpose.
	s.Equal(appspec.SyncOutOfSync, view.Status.Sync)
}

// A rollback reaches a sync the app no longer keeps when the request
// carries it (the API looks it up by ID); a carried sync of another app,
// or one the app never ran, is refused.
func (s *appSuite) TestRollbackBeyondKeptHistory() {
	s.expectProject(appspec.DefaultProjectSpec())
	s.expectReconcile(sha1, outOfSync)
	s.expectSync(1, sha1, nil)
	s.expectReconcile(sha1, synced)
	s.expectReconcile(sha2, outOfSync)
	s.expectSync(2, sha2, nil)
	s.expectReconcile(sha2, synced)
	s.expectSync(3, sha1, nil) // the rollback to sync 1, no longer kept
	s.expectReconcile(sha2, outOfSync)
	spec := testSpec(true)
	spec.RevisionHistoryLimit = ptr(1)
	id1 := SyncWorkflowID("default", "guestbook", 1)
	var first SyncSummary
	var forgotten, otherApp, unknown, notRun, ok *updateOutcome
	s.at(time.Minute, func() {
		// Sync 1 is the one the app kept before sync 2 pushed it out.
		first = s.status().History[0]
	})
	s.at(4*time.Minute, func() {
		s.Require().Equal(id1, first.ID)
		s.Require().Len(s.status().History, 1)
		forgotten = s.update(UpdateRollback, RollbackRequest{ID: id1, Force: true})
		other := first
		other.ID = SyncWorkflowID("default", "other", 1)
		otherApp = s.update(UpdateRollback, RollbackRequest{ID: other.ID, Force: true, Past: &other})
		unknown = s.update(UpdateRollback, RollbackRequest{ID: id1, Force: true, Past: &SyncSummary{ID: SyncWorkflowID("default", "guestbook", 2)}})
		never := first
		never.ID = SyncWorkflowID("default", "guestbook", 9)
		notRun = s.update(UpdateRollback, RollbackRequest{ID: never.ID, Force: true, Past: &never})
		ok = s.update(UpdateRollback, RollbackRequest{ID: id1, Force: true, Initiator: "alice", Past: &first})
	})
	var view AppView
	s.at(5*time.Minute, func() { view = s.status(); s.env.CancelWorkflow() })
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: spec, Config: AppConfig{RefreshSeconds: 180}})
	for name, o := range map[string]*updateOutcome{"forgotten": forgotten, "other app": otherApp, "mismatched": unknown, "never run": notRun} {
		s.ErrorContains(o.err, "is not in the application's history", name)
	}
	s.Require().NoError(ok.err)
	s.Equal(SyncAccepted{ID: SyncWorkflowID("default", "guestbook", 3)}, ok.result)
	s.Require().Len(view.History, 1)
	s.Equal(sha1, view.History[0].SHA)
	s.Equal("alice", view.History[0].Initiator)
}

// Terminating a sync during a wave cancels the wait, deletes the sync's
// hooks and records Terminated.
func (s *appSuite) TestTerminateDuringWave() {
	op := s.expectManualSyncPlan([]cluster.Step{syncStep})
	wi := cluster.WaveInput{Target: target(), Manifests: ref(sha1), Operation: op, Step: syncStep, SettleMillis: defaultWaveWait.Milliseconds()}
	smoke := cluster.ResourceResult{ResourceKey: appspec.ResourceKey{Group: "batch", Kind: "Job", Namespace: "web", Name: "smoke"}, Action: cluster.ActionCreated, Hook: true}
	s.env.OnActivity(cluster.ApplyWaveName, mock.Anything, wi).Return(cluster.WaveOutput{Resources: []cluster.ResourceResult{smoke}}, nil).Once()
	// A hook that does not complete for 10 minutes.
	wi.HooksOnly = true
	s.env.OnActivity(cluster.WaitWaveName, mock.Anything, wi).After(10*time.Minute).
		Return(cluster.WaveOutput{Health: appspec.HealthProgressing}, temporal.NewCanceledError()).Once()
	cleanup := false
	s.env.OnActivity(cluster.DeleteHooksName, mock.Anything, cluster.HookCleanupInput{Target: target(), SyncID: op.SyncID, Outcome: cluster.OutcomeTerminated}).
		Return(func(context.Context, cluster.HookCleanupInput) error { cleanup = true; return nil }).Once()
	s.expectReconcile(sha1, outOfSync)
	var opView *Operation
	var term *updateOutcome
	s.at(time.Second, func() { s.update(UpdateSync, SyncRequest{Initiator: "alice"}) })
	s.at(30*time.Second, func() {
		v, err := s.env.QueryWorkflow(QueryOperation)
		s.Require().NoError(err)
		s.Require().NoError(v.Get(&opView))
		term = s.update(UpdateTerminate, TerminateRequest{Initiator: "bob", Reason: "stuck"})
	})
	var view AppView
	s.at(20*time.Minute, func() { view = s.status(); s.env.CancelWorkflow() })
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(false), Config: AppConfig{RefreshSeconds: 3600}})
	s.NoError(term.err)
	s.Require().NotNil(opView)
	s.Equal(op.SyncID, opView.SyncID)
	s.True(cleanup, "terminate must clean up the sync's hooks")
	s.Require().Len(view.History, 1)
	s.Equal(PhaseTerminated, view.History[0].Phase)
	s.Nil(view.Status.Operation)
	s.Equal("OperationTerminated", view.Status.Events[0].Reason)
}

// A sync window holds an automated sync back until it opens; a manual sync
// inside it is refused with the reason.
func (s *appSuite) TestSyncWindowDeniesThenAllows() {
	p := appspec.DefaultProjectSpec()
	p.SyncWindows = []appspec.SyncWindow{{Kind: appspec.WindowDeny, Schedule: "0 10 * * *", Duration: "1h", Applications: []string{"*"}}}
	s.expectProject(p)
	start := time.Date(2026, 1, 10, 10, 0, 0, 0, time.UTC)
	opens := start.Add(time.Hour)
	denied := appspec.WindowDecision{Allowed: false, Reason: "sync denied by the deny window", NextChange: opens}
	s.env.OnActivity(project.SyncWindowName, mock.Anything, mock.MatchedBy(func(in project.WindowInput) bool {
		return in.Now.Before(opens)
	})).Return(denied, nil)
	s.env.OnActivity(project.SyncWindowName, mock.Anything, mock.MatchedBy(func(in project.WindowInput) bool {
		return !in.Now.Before(opens) && !in.Manual && in.App == "guestbook"
	})).Return(appspec.WindowDecision{Allowed: true}, nil).Once()
	s.expectReconcile(sha1, outOfSync)
	s.expectReconcile(sha1, outOfSync) // woken when the window opens
	s.expectSync(1, sha1, nil)
	s.expectReconcile(sha1, synced)
	var manual *updateOutcome
	var during AppView
	s.at(time.Minute, func() { manual = s.update(UpdateSync, SyncRequest{Initiator: "alice"}) })
	s.at(2*time.Minute, func() { during = s.status() })
	var view AppView
	s.at(2*time.Hour, func() { view = s.status(); s.env.CancelWorkflow() })
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(true), Config: AppConfig{RefreshSeconds: 3 * 3600}})
	s.ErrorContains(manual.err, "deny window")
	s.Require().NotEmpty(during.Status.Events)
	s.Equal("SyncWindowDenied", during.Status.Events[0].Reason)
	s.Require().Len(view.History, 1)
	s.False(view.History[0].StartedAt.Before(opens), "the sync must wait for the window")
}

// The delete update deletes the app's resources with the cascade policy,
// and the workflow then completes.
func (s *appSuite) TestDelete() {
	s.expectProject(appspec.DefaultProjectSpec())
	s.expectReconcile(sha1, synced)
	r := ref(sha1)
	out := cluster.DeleteAppOutput{Resources: []cluster.ResourceResult{{ResourceKey: service, Action: cluster.ActionDeleted}}}
	s.env.OnActivity(cluster.DeleteAppName, mock.Anything, cluster.DeleteAppInput{Target: target(), Cascade: cluster.CascadeForeground, Manifests: &r}).
		Return(out, nil).Once()
	var bad, del *updateOutcome
	s.at(time.Second, func() {
		bad = s.update(UpdateDelete, DeleteRequest{Cascade: "sideways"})
		del = s.update(UpdateDelete, DeleteRequest{Initiator: "alice"})
	})
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(false)})
	s.True(s.env.IsWorkflowCompleted())
	s.NoError(s.env.GetWorkflowError())
	s.ErrorContains(bad.err, "cascade")
	s.Require().NoError(del.err)
	s.Equal(DeleteResult{Resources: out.Resources}, del.result)
}

// With the drift watch, a deletion first tells the watch the app is gone,
// so that its own deletions cause no refreshes, and the workflow closes
// even while refreshes keep arriving. The delete's result counts what it
// left out of its list.
func (s *appSuite) TestDeleteStopsTheWatchFirst() {
	s.expectProject(appspec.DefaultProjectSpec())
	live := synced
	live.Resources = []appspec.ResourceStatus{{ResourceKey: service, Status: appspec.SyncSynced, Health: appspec.HealthHealthy}}
	s.expectReconcile(sha1, live)
	var (
		mu    sync.Mutex
		order []string
	)
	note := func(what string) { mu.Lock(); order = append(order, what); mu.Unlock() }
	watchID := ClusterWatchWorkflowID(testSpec(false).Destination.Server)
	s.env.OnSignalExternalWorkflow(mock.Anything, watchID, "", SignalWatch, mock.Anything).Return(
		func(_, _, _, _ string, arg any) error {
			if req, _ := arg.(WatchRequest); len(req.Kinds) == 0 {
				note("watch: none")
			} else {
				note("watch: kinds")
			}
			return nil
		})
	r := ref(sha1)
	out := cluster.DeleteAppOutput{Resources: []cluster.ResourceResult{{ResourceKey: service, Action: cluster.ActionDeleted}}, Omitted: 9_999}
	s.env.OnActivity(cluster.DeleteAppName, mock.Anything, cluster.DeleteAppInput{Target: target(), Cascade: cluster.CascadeForeground, Manifests: &r}).
		Return(out, nil).Run(func(mock.Arguments) { note("delete") }).After(time.Minute).Once()
	var del *updateOutcome
	s.at(time.Second, func() { del = s.update(UpdateDelete, DeleteRequest{Initiator: "alice"}) })
	for i := range 5 {
		s.at(time.Duration(10+i*10)*time.Second, func() {
			s.env.SignalWorkflow(SignalRefresh, RefreshRequest{Live: true, Drift: true})
		})
	}
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(false), Config: AppConfig{DriftWatch: true}})
	s.True(s.env.IsWorkflowCompleted())
	s.NoError(s.env.GetWorkflowError())
	s.Require().NoError(del.err)
	s.Equal(DeleteResult{Resources: out.Resources, Omitted: 9_999}, del.result)
	s.Equal([]string{"watch: kinds", "watch: none", "delete"}, order)
}

// The drift watch is told the kinds of the resources the status lists and
// those only the omitted ones have.
func (s *appSuite) TestWatchKindsIncludeOmitted() {
	s.expectProject(appspec.DefaultProjectSpec())
	live := synced
	live.Resources = []appspec.ResourceStatus{{ResourceKey: service, Status: appspec.SyncSynced, Health: appspec.HealthHealthy}}
	live.Omitted, live.OmittedKinds = 700, []appspec.GroupKind{{Group: "apps", Kind: "Deployment"}}
	s.expectReconcile(sha1, live)
	var got []watch.GroupKind
	watchID := ClusterWatchWorkflowID(testSpec(false).Destination.Server)
	s.env.OnSignalExternalWorkflow(mock.Anything, watchID, "", SignalWatch, mock.Anything).Return(
		func(_, _, _, _ string, arg any) error {
			req, _ := arg.(WatchRequest)
			got = req.Kinds
			return nil
		}).Once()
	s.cancelAt(time.Minute)
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(false), Config: AppConfig{DriftWatch: true, RefreshSeconds: 3600}})
	s.ElementsMatch([]watch.GroupKind{{Kind: "Service"}, {Group: "apps", Kind: "Deployment"}}, got)
}

// Resources marked Delete=confirm make the deletion wait: the delete
// update answers with them, approveDeletion lets the deletion go on, and
// the workflow completes after the approved DeleteApp.
func (s *appSuite) TestDeleteWaitsForApproval() {
	s.expectProject(appspec.DefaultProjectSpec())
	s.expectReconcile(sha1, synced)
	r := ref(sha1)
	in := cluster.DeleteAppInput{Target: target(), Cascade: cluster.CascadeBackground, Manifests: &r}
	kept := cluster.ResourceResult{ResourceKey: service, Action: cluster.ActionDeleteSkipped}
	s.env.OnActivity(cluster.DeleteAppName, mock.Anything, in).
		Return(cluster.DeleteAppOutput{Resources: []cluster.ResourceResult{kept}, AwaitingApproval: []appspec.ResourceKey{service}}, nil).Once()
	approved := in
	approved.Approved = true
	deleted := cluster.ResourceResult{ResourceKey: service, Action: cluster.ActionDeleted}
	s.env.OnActivity(cluster.DeleteAppName, mock.Anything, approved).
		Return(cluster.DeleteAppOutput{Resources: []cluster.ResourceResult{deleted}}, nil).Once()
	var early, del, approve *updateOutcome
	var waiting AppView
	s.at(time.Second, func() { early = s.update(UpdateApproveDeletion, ApproveDeletionRequest{Initiator: "alice"}) })
	s.at(2*time.Second, func() { del = s.update(UpdateDelete, DeleteRequest{Cascade: cluster.CascadeBackground}) })
	s.at(time.Minute, func() {
		waiting = s.status()
		approve = s.update(UpdateApproveDeletion, ApproveDeletionRequest{Initiator: "alice"})
	})
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(false)})
	s.True(s.env.IsWorkflowCompleted())
	s.NoError(s.env.GetWorkflowError())
	s.ErrorContains(early.err, "no resource is waiting")
	s.Require().NoError(del.err)
	s.Equal(DeleteResult{AwaitingApproval: []appspec.ResourceKey{service}}, del.result)
	s.Equal([]appspec.ResourceKey{service}, waiting.Status.AwaitingDeletionApproval)
	s.Require().NoError(approve.err)
	s.Equal([]appspec.ResourceKey{service}, approve.result)
}

// Continue-as-new carries the whole state: history, sequence, counters.
func (s *appSuite) TestContinueAsNewKeepsState() {
	s.expectProject(appspec.DefaultProjectSpec())
	s.expectReconcile(sha1, outOfSync)
	s.expectSync(1, sha1, nil)
	s.expectReconcile(sha1, synced)
	s.env.SetCurrentHistoryLength(100)
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(true), Config: AppConfig{HistoryThreshold: 50}})
	var can *workflow.ContinueAsNewError
	s.Require().ErrorAs(s.env.GetWorkflowError(), &can)
	var next AppInput
	s.Require().NoError(converterFor().FromPayloads(can.Input, &next))
	s.Require().NotNil(next.State)
	s.Equal(1, next.State.SyncSeq)
	s.Require().Len(next.State.History, 1)
	s.Equal(sha1, next.State.LastSyncedSHA)
	s.Equal(appspec.SyncSynced, next.State.Status.Sync)
	s.Equal(50, next.Config.HistoryThreshold)
	s.Equal(1, next.State.Runs)
}

// A chart from a Helm repository resolves its version range through the
// chart activity, and the resolved version is rendered.
func (s *appSuite) TestChartSourceResolvesVersion() {
	s.env.RegisterActivityWithOptions(func(context.Context, render.ResolveChartInput) (render.ResolveChartOutput, error) {
		return render.ResolveChartOutput{}, errors.New("unexpected call")
	}, activity.RegisterOptions{Name: render.ResolveChartName})
	s.expectProject(appspec.DefaultProjectSpec())
	spec := testSpec(false)
	spec.Source = appspec.Source{RepoURL: "https://charts.example.com", Chart: "nginx", TargetRevision: "^1.2.0"}
	s.env.OnActivity(render.ResolveChartName, mock.Anything, render.ResolveChartInput{RepoURL: "https://charts.example.com", Chart: "nginx", Version: "^1.2.0"}).
		Return(render.ResolveChartOutput{Version: "1.2.7"}, nil).Once()
	req := render.Request{AppName: "guestbook", Namespace: "web", Sources: []render.SourceRequest{{Source: spec.Source, SHA: "1.2.7"}},
		Scope: render.ScopeOf(appspec.DefaultProjectSpec())}
	r := render.ManifestRef{Key: req.Key(), SHA: "1.2.7", Count: 1, Request: req}
	s.env.OnActivity(render.RenderName, mock.Anything, render.RenderInput{Request: req}).Return(r, nil).Once()
	s.steps.On(cluster.CompareName, cluster.CompareInput{Target: target(), Manifests: r}).Return(synced, nil).Once()
	var view AppView
	s.at(time.Minute, func() { view = s.status(); s.env.CancelWorkflow() })
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: spec})
	s.Equal("1.2.7", view.Status.SHA)
	s.Equal(appspec.SyncSynced, view.Status.Sync)
}

// An app declared by another (spec.managedBy) refreshes its parent when
// its status changes, once per change.
func (s *appSuite) TestChildRefreshesParent() {
	s.expectProject(appspec.DefaultProjectSpec())
	s.expectReconcile(sha1, synced)
	spec := testSpec(false)
	spec.ManagedBy = &appspec.ManagedBy{App: "default/parent"}
	var reasons []string
	s.env.OnSignalExternalWorkflow(mock.Anything, AppWorkflowID("default", "parent"), "", SignalRefresh, mock.Anything).Return(
		func(_, _, _, _ string, arg any) error {
			req, _ := arg.(RefreshRequest)
			reasons = append(reasons, req.Reason)
			return nil
		})
	s.cancelAt(time.Minute)
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: spec, Config: AppConfig{RefreshSeconds: 3600}})
	s.Equal([]string{"child default/" + spec.Name + " is " + string(synced.Sync) + "/" + string(synced.Health)}, reasons)
}
