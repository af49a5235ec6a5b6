package workflows

import (
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/workflow"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/activities/project"
	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/internal/appspec"
)

// teamProject is a project that permits the test app, and strictProject
// one that refuses its destination namespace.
func teamProject() appspec.Project {
	p := appspec.DefaultProjectSpec()
	p.Name = "team"
	return p
}

func strictProject() appspec.Project {
	p := appspec.DefaultProjectSpec()
	p.Name = "strict"
	p.Destinations = []appspec.ProjectDestination{{Server: "*", Namespace: "team-*"}}
	return p
}

// mockHandover mocks the app workflow a move starts, which has the type
// of the workflow under test: the test's own run (no state) runs the real
// workflow, and the child's input goes to child.
func (s *appSuite) mockHandover(child func(AppInput)) {
	s.env.OnWorkflow(ApplicationWorkflowName, mock.Anything, mock.Anything).Return(func(ctx workflow.Context, in AppInput) error {
		if in.State == nil {
			return ApplicationWorkflow(ctx, in)
		}
		child(in)
		return nil
	})
}

func movedSpec(proj string) appspec.Application {
	spec := testSpec(false)
	spec.Project = proj
	return spec
}

// A move hands the whole state to the app's workflow in the new project
// (started as an abandoned child) and ends the old run with MovedTo set;
// the syncs of the old project are recorded as a move.
func (s *appSuite) TestMoveHandsOver() {
	s.expectProject(appspec.DefaultProjectSpec())
	s.steps.On(project.GetName, project.GetInput{Name: "team"}).Return(teamProject(), nil)
	s.expectReconcile(sha1, outOfSync)
	s.expectResolve(sha1, true)
	s.expectSync(1, sha1, nil)
	s.expectReconcile(sha1, synced)
	var handed *AppInput
	s.mockHandover(func(in AppInput) { handed = &in })
	var synced1, move *updateOutcome
	s.at(time.Second, func() { synced1 = s.update(UpdateSync, SyncRequest{Initiator: "alice"}) })
	s.at(time.Minute, func() { move = s.update(UpdateMove, MoveRequest{Spec: movedSpec("team"), Initiator: "bob"}) })
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(false), Config: AppConfig{RefreshSeconds: 3600}})
	s.True(s.env.IsWorkflowCompleted())
	s.Require().NoError(s.env.GetWorkflowError())
	s.Require().NoError(synced1.err)
	s.Require().NoError(move.err)
	s.Equal(MoveResult{ID: AppWorkflowID("team", "guestbook")}, move.result)
	s.Require().NotNil(handed)
	s.Require().NotNil(handed.State)
	st := handed.State
	s.Equal("team", handed.Spec.Project)
	s.Equal("team", st.Spec.Project)
	s.Equal("default", st.Retrack)
	s.Equal(1, st.SyncSeq)
	s.Require().Len(st.Moves, 1)
	s.Equal(ProjectMove{Project: "default", LastSeq: 1, At: st.Moves[0].At, Initiator: "bob"}, st.Moves[0])
	s.Require().Len(st.History, 1)
	s.Equal(SyncWorkflowID("default", "guestbook", 1), st.History[0].ID)
	s.Empty(st.MovedTo)
	s.Equal(ReasonMoved, st.Status.Events[0].Reason)
	v, err := s.env.QueryWorkflow(QueryStatus)
	s.Require().NoError(err)
	var last AppView
	s.Require().NoError(v.Get(&last))
	s.Equal("team", last.MovedTo)
}

// A move is refused, and nothing changes, when it renames the app, keeps
// its project, names a project that refuses the destination or one that
// does not exist, or while another move runs.
func (s *appSuite) TestMoveRefusals() {
	s.expectProject(appspec.DefaultProjectSpec())
	s.steps.On(project.GetName, project.GetInput{Name: "team"}).Return(teamProject(), nil)
	s.steps.On(project.GetName, project.GetInput{Name: "strict"}).Return(strictProject(), nil)
	s.steps.On(project.GetName, project.GetInput{Name: "nope"}).Return(appspec.Project{}, project.ErrNotFound)
	s.expectReconcile(sha1, synced)
	s.mockHandover(func(AppInput) {})
	renamed := movedSpec("team")
	renamed.Name = "other"
	var same, rename, strict, unknown, first, second *updateOutcome
	s.at(time.Second, func() {
		same, rename = s.update(UpdateMove, MoveRequest{Spec: movedSpec("default")}), s.update(UpdateMove, MoveRequest{Spec: renamed})
		strict = s.update(UpdateMove, MoveRequest{Spec: movedSpec("strict")})
	})
	s.at(2*time.Second, func() { unknown = s.update(UpdateMove, MoveRequest{Spec: movedSpec("nope")}) })
	s.at(time.Minute, func() {
		first, second = s.update(UpdateMove, MoveRequest{Spec: movedSpec("team")}), s.update(UpdateMove, MoveRequest{Spec: movedSpec("team")})
	})
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(false), Config: AppConfig{RefreshSeconds: 3600}})
	s.ErrorContains(same.err, "already in project default")
	s.ErrorContains(rename.err, "cannot rename")
	s.ErrorContains(strict.err, "not permitted")
	s.ErrorContains(unknown.err, "project nope")
	s.Require().NoError(first.err)
	s.ErrorContains(second.err, "moving to project team")
}

// The run a move started retracks the live objects from the old project
// before its first pass, which then runs as the app in its new project.
func (s *appSuite) TestMovedRunRetracksFirst() {
	s.steps.On(project.GetName, project.GetInput{Name: "team"}).Return(teamProject(), nil)
	r := ref(sha1)
	old := target()
	s.env.OnActivity(cluster.RetrackName, mock.Anything, cluster.RetrackInput{Target: old, Project: "team", Manifests: &r}).
		Return(cluster.RetrackOutput{Retracked: 2}, nil).Once()
	s.expectResolve(sha1, false)
	moved := target()
	moved.Project = "team"
	// The render request now carries the new project's scope: one render.
	inTeam := ref(sha1)
	inTeam.Request.Scope = render.ScopeOf(teamProject())
	inTeam.Key = inTeam.Request.Key()
	s.env.OnActivity(render.RenderName, mock.Anything, render.RenderInput{Request: inTeam.Request}).Return(inTeam, nil).Once()
	s.steps.On(cluster.CompareName, cluster.CompareInput{Target: moved, Manifests: inTeam}).Return(synced, nil).Once()
	spec := movedSpec("team")
	st := AppState{Spec: spec, SyncSeq: 2, Manifests: &r, Sources: sources(sha1), Retrack: "default",
		Moves: []ProjectMove{{Project: "default", LastSeq: 2}}}
	var view AppView
	s.at(time.Minute, func() { view = s.status(); s.env.CancelWorkflow() })
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: spec, State: &st, Config: AppConfig{RefreshSeconds: 3600}})
	s.Equal(appspec.SyncSynced, view.Status.Sync)
	s.Equal(ReasonRetracked, view.Status.Events[0].Reason)
	s.Equal([]ProjectMove{{Project: "default", LastSeq: 2}}, view.Moves)
}

// A rollback in the new project reaches a sync the app ran in its old
// one, by the old ID the API carries.
func (s *appSuite) TestRollbackAcrossMove() {
	a := &application{st: AppState{Spec: movedSpec("team"), SyncSeq: 3, Moves: []ProjectMove{{Project: "default", LastSeq: 2}}}}
	past := SyncSummary{ID: SyncWorkflowID("default", "guestbook", 1), Sources: sources(sha1)}
	_, ok := a.findSync(RollbackRequest{ID: past.ID, Past: &past})
	s.True(ok)
	wrong := SyncSummary{ID: SyncWorkflowID("team", "guestbook", 1), Sources: sources(sha1)}
	_, ok = a.findSync(RollbackRequest{ID: wrong.ID, Past: &wrong})
	s.False(ok, "sync 1 ran in project default, not team")
}
