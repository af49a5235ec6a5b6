package workflows

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/suite"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/activities/source"
	"github.com/windlass-cd/windlass/internal/appspec"
)

type appSuite struct {
	suite.Suite
	testsuite.WorkflowTestSuite
	env *testsuite.TestWorkflowEnvironment
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

func (s *appSuite) SetupTest() {
	s.env = s.NewTestWorkflowEnvironment()
	Register(s.env)
	// Placeholders so that the names resolve; every call is mocked below.
	s.env.RegisterActivityWithOptions(func(context.Context, source.ResolveInput) (source.ResolveOutput, error) {
		return source.ResolveOutput{}, errors.New("unexpected call")
	}, activity.RegisterOptions{Name: source.ResolveRevisionName})
	s.env.RegisterActivityWithOptions(func(context.Context, render.RenderInput) (render.ManifestRef, error) {
		return render.ManifestRef{}, errors.New("unexpected call")
	}, activity.RegisterOptions{Name: render.RenderName})
	s.env.RegisterActivityWithOptions(func(context.Context, cluster.CompareInput) (cluster.CompareOutput, error) {
		return cluster.CompareOutput{}, errors.New("unexpected call")
	}, activity.RegisterOptions{Name: cluster.CompareName})
	s.env.RegisterActivityWithOptions(func(context.Context, cluster.WaitInput) (cluster.CompareOutput, error) {
		return cluster.CompareOutput{}, errors.New("unexpected call")
	}, activity.RegisterOptions{Name: cluster.WaitHealthyName})
	s.env.RegisterActivityWithOptions(func(context.Context, cluster.ApplyInput) (cluster.ApplyOutput, error) {
		return cluster.ApplyOutput{}, errors.New("unexpected call")
	}, activity.RegisterOptions{Name: cluster.ApplyName})
}

func (s *appSuite) AfterTest(_, _ string) { s.env.AssertExpectations(s.T()) }

func ref(sha string) render.ManifestRef {
	req := render.SingleSource("guestbook", "web", appspec.Source{RepoURL: repo, Path: "guestbook", TargetRevision: "main"}, sha)
	return render.ManifestRef{Key: req.Key(), SHA: sha, Count: 2, Digest: "sha256:x", Request: req}
}

func target() cluster.Target {
	return cluster.Target{Project: "default", App: "guestbook", Destination: appspec.Destination{Server: appspec.InClusterServer, Namespace: "web"}}
}

func (s *appSuite) expectReconcile(sha string, out cluster.CompareOutput) {
	s.env.OnActivity(source.ResolveRevisionName, mock.Anything, source.ResolveInput{RepoURL: repo, Revision: "main"}).
		Return(source.ResolveOutput{SHA: sha, Ref: "refs/heads/main"}, nil).Once()
	s.env.OnActivity(render.RenderName, mock.Anything, render.RenderInput{Request: ref(sha).Request}).Return(ref(sha), nil).Once()
	s.env.OnActivity(cluster.CompareName, mock.Anything, cluster.CompareInput{Target: target(), Manifests: ref(sha)}).Return(out, nil).Once()
}

var (
	outOfSync = cluster.CompareOutput{Sync: appspec.SyncOutOfSync, Health: appspec.HealthMissing}
	synced    = cluster.CompareOutput{Sync: appspec.SyncSynced, Health: appspec.HealthHealthy}
)

func (s *appSuite) expectSync(sha string, applyErr error) {
	s.env.OnActivity(source.ResolveRevisionName, mock.Anything, source.ResolveInput{RepoURL: repo, Revision: "main"}).
		Return(source.ResolveOutput{SHA: sha}, nil).Once()
	s.env.OnActivity(render.RenderName, mock.Anything, render.RenderInput{Request: ref(sha).Request}).Return(ref(sha), nil).Once()
	applied := cluster.ApplyOutput{Resources: []cluster.ResourceResult{{ResourceKey: appspec.ResourceKey{Kind: "Service", Namespace: "web", Name: "guestbook"}, Action: cluster.ActionCreated}}}
	s.env.OnActivity(cluster.ApplyName, mock.Anything, cluster.ApplyInput{Target: target(), Manifests: ref(sha)}).Return(applied, applyErr).Once()
	if applyErr == nil {
		s.env.OnActivity(cluster.WaitHealthyName, mock.Anything, cluster.WaitInput{CompareInput: cluster.CompareInput{Target: target(), Manifests: ref(sha)}}).Return(synced, nil).Once()
	}
}

func (s *appSuite) status() AppView {
	v, err := s.env.QueryWorkflow(QueryStatus)
	s.Require().NoError(err)
	var view AppView
	s.Require().NoError(v.Get(&view))
	return view
}

// An automated app that is OutOfSync syncs by itself and ends Synced.
func (s *appSuite) TestAutoSyncOnOutOfSync() {
	s.expectReconcile(sha1, outOfSync)
	s.expectSync(sha1, nil)
	s.expectReconcile(sha1, synced)
	var view AppView
	s.env.RegisterDelayedCallback(func() {
		view = s.status()
		s.env.CancelWorkflow()
	}, time.Minute)
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(true)})
	s.Equal(appspec.SyncSynced, view.Status.Sync)
	s.Equal(appspec.HealthHealthy, view.Status.Health)
	s.Equal(sha1, view.Status.SHA)
	s.Require().Len(view.History, 1)
	s.Equal(SyncWorkflowID("default", "guestbook", 1), view.History[0].ID)
	s.Equal(PhaseSucceeded, view.History[0].Phase)
	s.Equal(InitiatorAutomated, view.History[0].Initiator)
}

// A SHA whose automated sync failed is not synced again; a new SHA is.
func (s *appSuite) TestNoRetryOfFailedSHA() {
	rejected := temporal.NewNonRetryableApplicationError("apply rejected", "ApplyFailed", nil)
	s.expectReconcile(sha1, outOfSync)
	s.expectSync(sha1, rejected)
	s.expectReconcile(sha1, outOfSync) // after the failed sync
	s.expectReconcile(sha1, outOfSync) // timer refresh: same SHA, no sync
	s.expectReconcile(sha2, outOfSync) // new commit: sync again
	s.expectSync(sha2, nil)
	s.expectReconcile(sha2, synced)
	var view AppView
	s.env.RegisterDelayedCallback(func() {
		view = s.status()
		s.env.CancelWorkflow()
	}, 7*time.Minute)
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(true), Config: AppConfig{RefreshSeconds: 180}})
	s.Require().Len(view.History, 2)
	s.Equal(PhaseSucceeded, view.History[0].Phase)
	s.Equal(sha2, view.History[0].SHA)
	s.Equal(PhaseFailed, view.History[1].Phase)
	s.Contains(view.History[1].Message, "apply rejected")
}

// A manual sync through the update returns the result; a second sync
// while one runs is rejected by the validator.
func (s *appSuite) TestManualSyncUpdate() {
	s.expectReconcile(sha1, outOfSync)
	s.expectSync(sha1, nil)
	s.expectReconcile(sha1, synced)
	var got SyncResult
	var second error
	s.env.RegisterDelayedCallback(func() {
		s.env.UpdateWorkflow(UpdateSync, "u1", &testsuite.TestUpdateCallback{
			OnAccept: func() {
				s.env.UpdateWorkflow(UpdateSync, "u2", &testsuite.TestUpdateCallback{
					OnReject: func(err error) { second = err }, OnAccept: func() {}, OnComplete: func(any, error) {},
				}, SyncRequest{Initiator: "bob"})
			},
			OnReject: func(err error) { s.Fail("sync rejected", err.Error()) },
			OnComplete: func(v any, err error) {
				s.Require().NoError(err)
				got = v.(SyncResult)
			},
		}, SyncRequest{Initiator: "alice"})
	}, time.Second)
	s.env.RegisterDelayedCallback(func() { s.env.CancelWorkflow() }, time.Minute)
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(false)})
	s.Equal(PhaseSucceeded, got.Phase)
	s.Equal("alice", got.Initiator)
	s.Equal(SyncWorkflowID("default", "guestbook", 1), got.ID)
	s.Equal([]cluster.ResourceResult{{ResourceKey: appspec.ResourceKey{Kind: "Service", Namespace: "web", Name: "guestbook"}, Action: cluster.ActionCreated}}, got.Resources)
	s.Require().Error(second)
	s.Contains(second.Error(), "already in progress")
}

// A non-automated app stays OutOfSync; a bad revision makes it Unknown
// with the reason, and the workflow keeps running.
func (s *appSuite) TestUnknownOnResolveError() {
	s.env.OnActivity(source.ResolveRevisionName, mock.Anything, source.ResolveInput{RepoURL: repo, Revision: "main"}).
		Return(source.ResolveOutput{}, temporal.NewNonRetryableApplicationError("revision not found", "RevisionNotFound", nil)).Once()
	var view AppView
	s.env.RegisterDelayedCallback(func() {
		view = s.status()
		s.env.CancelWorkflow()
	}, time.Minute)
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(false)})
	s.Equal(appspec.SyncUnknown, view.Status.Sync)
	s.Contains(view.Status.Message, "revision not found")
	s.Empty(view.History)
}

// setSpec validates: a bad spec or a rename is rejected; a good one is
// accepted and triggers a refresh.
func (s *appSuite) TestSetSpecValidation() {
	s.expectReconcile(sha1, synced)
	changed := testSpec(false)
	changed.RefreshSeconds = 60
	s.expectReconcile(sha1, synced)
	var rejected []string
	var accepted AppView
	s.env.RegisterDelayedCallback(func() {
		bad := testSpec(false)
		bad.Source.Path = "../../etc"
		renamed := testSpec(false)
		renamed.Name = "other"
		for _, sp := range []appspec.Application{bad, renamed} {
			s.env.UpdateWorkflow(UpdateSetSpec, "", &testsuite.TestUpdateCallback{
				OnReject: func(err error) { rejected = append(rejected, err.Error()) },
				OnAccept: func() { s.Fail("accepted a bad spec") }, OnComplete: func(any, error) {},
			}, sp)
		}
		s.env.UpdateWorkflow(UpdateSetSpec, "", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { s.Fail("rejected", err.Error()) }, OnAccept: func() {},
			OnComplete: func(v any, err error) { accepted = v.(AppView) },
		}, changed)
	}, time.Second)
	s.env.RegisterDelayedCallback(func() { s.env.CancelWorkflow() }, time.Minute)
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(false)})
	s.Require().Len(rejected, 2)
	s.Contains(rejected[0], "path traversal")
	s.Contains(rejected[1], "cannot change")
	if d := cmp.Diff(changed, accepted.Spec); d != "" {
		s.Fail("spec (-want +got)", d)
	}
}
