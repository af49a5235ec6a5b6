package workflows

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/workflow"

	"github.com/windlass-cd/windlass/activities/depends"
	"github.com/windlass-cd/windlass/internal/appspec"
)

var (
	dbRef      = appspec.DependencyRef{Project: "default", Name: "db"}
	netRef     = appspec.DependencyRef{Project: "infra", Name: "net"}
	dbWaiting  = depends.Waiting{App: dbRef, Reason: "is Synced and Progressing; waits for Synced and Healthy"}
	netMissing = depends.Waiting{App: netRef, Reason: "does not exist"}
)

func dependentSpec(automated bool, deps ...string) appspec.Application {
	a := testSpec(automated)
	a.DependsOn = deps
	return a
}

// expectDependencies answers the dependency checks of deps: the first
// notReady calls (all of them when notReady < 0) wait for waiting, the
// rest find every dependency ready. It returns the count of calls.
func (s *appSuite) expectDependencies(deps []appspec.DependencyRef, notReady int, waiting ...depends.Waiting) *atomic.Int32 {
	var calls atomic.Int32
	s.env.OnActivity(depends.CheckName, mock.Anything, depends.CheckInput{Dependencies: deps}).
		Return(func(context.Context, depends.CheckInput) (depends.CheckOutput, error) {
			if n := calls.Add(1); notReady < 0 || int(n) <= notReady {
				return depends.CheckOutput{Waiting: waiting}, nil
			}
			return depends.CheckOutput{}, nil
		})
	return &calls
}

// A manual sync of an app with dependencies is accepted at once, says
// what it waits for, and starts its SyncWorkflow only once they are ready.
func (s *appSuite) TestSyncWaitsForDependencies() {
	s.expectProject(appspec.DefaultProjectSpec())
	s.expectReconcile(sha1, outOfSync)
	s.expectResolve(sha1, true)
	calls := s.expectDependencies([]appspec.DependencyRef{dbRef, netRef}, 2, dbWaiting, netMissing)
	s.expectSync(1, sha1, nil)
	s.expectReconcile(sha1, synced)
	var sync *updateOutcome
	s.at(time.Second, func() { sync = s.update(UpdateSync, SyncRequest{Initiator: "alice"}) })
	var during, view AppView
	s.at(3*time.Second, func() { during = s.status() })
	s.at(time.Minute, func() { view = s.status(); s.env.CancelWorkflow() })
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: dependentSpec(false, "db", "infra/net")})
	s.Require().NoError(sync.err)
	id := SyncWorkflowID("default", "guestbook", 1)
	s.Equal(SyncAccepted{ID: id, WaitingFor: []depends.Waiting{dbWaiting, netMissing}}, sync.result)
	s.Require().NotNil(during.Status.Operation)
	s.Equal(PhasePending, during.Status.Operation.Phase)
	s.Equal([]depends.Waiting{dbWaiting, netMissing}, during.Status.Operation.WaitingFor)
	s.Equal("WaitingForDependencies", during.Status.Events[0].Reason)
	s.Equal("sync "+id+" waits for db, infra/net", during.Status.Events[0].Message)
	s.EqualValues(3, calls.Load())
	s.Require().Len(view.History, 1)
	s.Equal(PhaseSucceeded, view.History[0].Phase)
	// Asked at 1 s, the dependencies are ready at the third look, after
	// waits of 2 s and 4 s: the sync starts no earlier.
	start := time.Date(2026, 1, 10, 10, 0, 0, 0, time.UTC)
	s.False(view.History[0].StartedAt.Before(start.Add(7*time.Second)), "sync started at %s", view.History[0].StartedAt)
	s.Nil(view.Status.Operation)
}

// An automated sync waits as a manual one does.
func (s *appSuite) TestAutoSyncWaitsForDependencies() {
	s.expectProject(appspec.DefaultProjectSpec())
	s.expectReconcile(sha1, outOfSync)
	s.expectDependencies([]appspec.DependencyRef{dbRef}, 1, dbWaiting)
	s.expectSync(1, sha1, nil)
	s.expectReconcile(sha1, synced)
	var view AppView
	s.at(time.Minute, func() { view = s.status(); s.env.CancelWorkflow() })
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: dependentSpec(true, "db")})
	s.Require().Len(view.History, 1)
	s.Equal(PhaseSucceeded, view.History[0].Phase)
	s.Equal(InitiatorAutomated, view.History[0].Initiator)
	start := time.Date(2026, 1, 10, 10, 0, 0, 0, time.UTC)
	s.False(view.History[0].StartedAt.Before(start.Add(2*time.Second)), "sync started at %s", view.History[0].StartedAt)
}

// Terminating a sync that waits for a dependency ends it as Terminated,
// naming what it waited for last; no SyncWorkflow starts.
func (s *appSuite) TestTerminateWhileWaitingForDependencies() {
	s.expectProject(appspec.DefaultProjectSpec())
	s.expectReconcile(sha1, outOfSync)
	s.expectResolve(sha1, true)
	var calls atomic.Int32
	s.env.OnActivity(depends.CheckName, mock.Anything, depends.CheckInput{Dependencies: []appspec.DependencyRef{dbRef, netRef}}).
		Return(func(context.Context, depends.CheckInput) (depends.CheckOutput, error) {
			if calls.Add(1) == 1 {
				return depends.CheckOutput{Waiting: []depends.Waiting{dbWaiting, netMissing}}, nil
			}
			return depends.CheckOutput{Waiting: []depends.Waiting{netMissing}}, nil // db became ready
		})
	s.expectReconcile(sha1, outOfSync)
	var term *updateOutcome
	s.at(time.Second, func() { s.update(UpdateSync, SyncRequest{Initiator: "alice"}) })
	s.at(time.Minute, func() { term = s.update(UpdateTerminate, TerminateRequest{Initiator: "bob"}) })
	var view AppView
	s.at(2*time.Minute, func() { view = s.status(); s.env.CancelWorkflow() })
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: dependentSpec(false, "db", "infra/net")})
	s.NoError(term.err)
	s.Require().Len(view.History, 1)
	s.Equal(PhaseTerminated, view.History[0].Phase)
	s.Equal("terminated while waiting for dependencies (infra/net)", view.History[0].Message)
	s.Nil(view.Status.Operation)
}

// Removing a dependency from the spec lets a waiting sync start.
func (s *appSuite) TestDependsOnEditEndsTheWait() {
	s.expectProject(appspec.DefaultProjectSpec())
	s.expectReconcile(sha1, outOfSync)
	s.expectResolve(sha1, true)
	s.expectDependencies([]appspec.DependencyRef{netRef}, -1, netMissing)
	s.expectSync(1, sha1, nil)
	s.expectReconcile(sha1, synced)
	s.at(time.Second, func() { s.update(UpdateSync, SyncRequest{Initiator: "alice"}) })
	var set *updateOutcome
	s.at(time.Minute, func() { set = s.update(UpdateSetSpec, testSpec(false)) })
	var view AppView
	s.at(2*time.Minute, func() { view = s.status(); s.env.CancelWorkflow() })
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: dependentSpec(false, "infra/net")})
	s.NoError(set.err)
	s.Require().Len(view.History, 1)
	s.Equal(PhaseSucceeded, view.History[0].Phase)
	start := time.Date(2026, 1, 10, 10, 0, 0, 0, time.UTC)
	s.False(view.History[0].StartedAt.Before(start.Add(time.Minute)), "sync started at %s", view.History[0].StartedAt)
}

// A wait that fills the run's history ends, and the manual sync is asked
// for again by the next run.
func (s *appSuite) TestDependsWaitCarriesOverAtHistoryLimit() {
	s.expectProject(appspec.DefaultProjectSpec())
	s.expectReconcile(sha1, outOfSync)
	s.expectResolve(sha1, true)
	s.expectDependencies([]appspec.DependencyRef{netRef}, -1, netMissing)
	s.expectReconcile(sha1, outOfSync)
	s.at(time.Second, func() { s.update(UpdateSync, SyncRequest{Initiator: "alice"}) })
	s.at(30*time.Second, func() { s.env.SetCurrentHistoryLength(100) })
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: dependentSpec(false, "infra/net"), Config: AppConfig{HistoryThreshold: 50}})
	err := s.env.GetWorkflowError()
	var can *workflow.ContinueAsNewError
	s.Require().ErrorAs(err, &can)
	var next AppInput
	s.Require().NoError(converterFor().FromPayloads(can.Input, &next))
	s.Require().NotNil(next.State)
	s.Equal([]SyncRequest{{Initiator: "alice"}}, next.State.QueuedSyncs)
	s.Require().Len(next.State.History, 1)
	s.Equal(PhaseTerminated, next.State.History[0].Phase)
	s.Contains(next.State.History[0].Message, "history limit")
}

// A run that started before this release's change (changeApp020) syncs
// without waiting.
func (s *appSuite) TestDependsOnOldPath() {
	s.env.OnGetVersion(changeApp020, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	s.expectProject(appspec.DefaultProjectSpec())
	s.expectReconcile(sha1, outOfSync)
	s.expectResolve(sha1, true)
	s.expectSync(1, sha1, nil)
	s.expectReconcile(sha1, synced)
	var sync *updateOutcome
	s.at(time.Second, func() { sync = s.update(UpdateSync, SyncRequest{Initiator: "alice"}) })
	var view AppView
	s.at(time.Minute, func() { view = s.status(); s.env.CancelWorkflow() })
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: dependentSpec(false, "infra/net")})
	s.Require().NoError(sync.err)
	s.Require().Len(view.History, 1)
	s.Equal(PhaseSucceeded, view.History[0].Phase)
}
