package api

// This file holds moving an app to another project (a PUT or PATCH that
// changes spec.project), and reading the syncs and health history an app
// left under the projects it moved out of.

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v5"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/windlass-cd/windlass/api/rbac"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/healthlog"
	"github.com/windlass-cd/windlass/workflows"
)

// moveApp moves the app in project from to spec.Project, with spec as its
// new spec. The caller needs update on the app in both projects (as in
// Argo CD), and the new project must permit the app: otherwise 403 and
// nothing changes. The app's workflow hands its state over to its
// workflow in the new project (workflows/app_move.go).
func (s *Server) moveApp(c *echo.Context, from string, spec appspec.Application) error {
	for _, p := range []string{from, spec.Project} {
		if err := s.authorize(c, rbac.ResourceApplications, rbac.ActionUpdate, rbac.AppObject(p, spec.Name)); err != nil {
			return err
		}
	}
	ctx := c.Request().Context()
	if err := s.refuseManaged(ctx, workflows.AppWorkflowID(from, spec.Name)); err != nil {
		return err
	}
	view, err := s.move(ctx, from, spec, initiator(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, view)
}

// MoveApplication moves an app declared by an Application resource whose
// spec.project changed, as a PUT that changes spec.project does.
func (s *Server) MoveApplication(ctx context.Context, from string, spec appspec.Application, initiator string) (workflows.AppView, error) {
	view, err := s.move(ctx, from, spec, initiator)
	if err != nil {
		return view, toProblem(err)
	}
	return view, nil
}

// move checks the new project and runs the move update of the app's
// workflow in project from; it answers the app's view in its new project.
func (s *Server) move(ctx context.Context, from string, spec appspec.Application, initiator string) (workflows.AppView, error) {
	id := workflows.AppWorkflowID(from, spec.Name)
	if _, err := s.status(ctx, id); err != nil {
		return workflows.AppView{}, err
	}
	if err := s.checkProject(ctx, spec); err != nil {
		return workflows.AppView{}, err
	}
	if err := s.checkCycle(ctx, spec); err != nil {
		return workflows.AppView{}, err
	}
	to := workflows.AppWorkflowID(spec.Project, spec.Name)
	d, err := s.c.DescribeWorkflowExecution(ctx, to, "")
	switch {
	case err == nil && d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		pr := problem(http.StatusConflict, fmt.Sprintf("project %s already has an application named %s", spec.Project, spec.Name))
		pr.Field = "project"
		return workflows.AppView{}, pr
	case err != nil && !isNotFound(err):
		return workflows.AppView{}, err
	}
	h, err := s.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateName: workflows.UpdateMove, WaitForStage: client.WorkflowUpdateStageCompleted,
		Args: []any{workflows.MoveRequest{Spec: spec, Initiator: initiator}},
	})
	if err != nil {
		return workflows.AppView{}, err
	}
	var res workflows.MoveResult
	if err := h.Get(ctx, &res); err != nil {
		return workflows.AppView{}, err
	}
	return s.status(ctx, res.ID)
}

// movedAway is the 404 of an app's workflow that handed the app over to
// its workflow in another project.
func movedAway(view workflows.AppView) error {
	pr := problem(http.StatusNotFound, fmt.Sprintf("application %s moved from project %s to %s (use ?project=%s)",
		view.Spec.Name, view.Spec.Project, view.MovedTo, view.MovedTo))
	pr.Field = "project"
	return pr
}

// appMoves are the projects the app moved out of, from its workflow; none
// when it cannot answer.
func (s *Server) appMoves(ctx context.Context, appID string) []workflows.ProjectMove {
	v, err := s.c.QueryWorkflow(ctx, appID, "", workflows.QueryHistory)
	if err != nil {
		return nil
	}
	var h workflows.HistoryView
	if v.Get(&h) != nil {
		return nil
	}
	return h.Moves
}

// syncAppQuery is the visibility query of the app's syncs, in its project
// and in those it moved out of.
func syncAppQuery(proj, name string, moves []workflows.ProjectMove) string {
	aliases := workflows.AppAliases(proj, name, moves)
	terms := make([]string, len(aliases))
	for i, a := range aliases {
		terms[i] = fmt.Sprintf("%s = '%s'", workflows.SearchAttrApp, a)
	}
	return fmt.Sprintf("WorkflowType = '%s' AND (%s)", workflows.SyncWorkflowName, strings.Join(terms, " OR "))
}

// movedHealthHistory is the app's health log with the logs it left under
// the projects it moved out of, newest first, at most limit (0: all).
func (s *Server) movedHealthHistory(ctx context.Context, view workflows.AppView, limit int) ([]healthlog.Transition, error) {
	var out []healthlog.Transition
	for _, app := range workflows.AppAliases(view.Spec.Project, view.Spec.Name, view.Moves) {
		ts, err := s.opts.HealthHistory.History(ctx, app, limit)
		if err != nil {
			return nil, err
		}
		out = append(out, ts...)
	}
	slices.SortStableFunc(out, func(a, b healthlog.Transition) int { return b.Time.Compare(a.Time) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
