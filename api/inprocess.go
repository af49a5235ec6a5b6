package api

import (
	"context"
	"fmt"
	"net/http"

	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/client"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

// The methods below serve callers inside the server process that act as
// Windlass itself, such as the Kubernetes front door (api/frontdoor): no
// caller is authorised, but the project checks and the workflow updates
// are the REST API's own. Their errors are *Problem, so that a caller can
// tell a refusal (4xx) from an outage (5xx).

// ApplyApplication creates or updates an app, as POST
// /api/v1/applications?upsert=true does: the project check, then setSpec
// with Update-With-Start. A child of another app (app of apps) is
// refused (409), as the API refuses it.
func (s *Server) ApplyApplication(ctx context.Context, spec appspec.Application) (workflows.AppView, error) {
	if err := refuseManagedBy(spec); err != nil {
		return workflows.AppView{}, toProblem(err)
	}
	if err := s.checkProject(ctx, spec); err != nil {
		return workflows.AppView{}, toProblem(err)
	}
	if err := s.refuseManaged(ctx, workflows.AppWorkflowID(spec.Project, spec.Name)); err != nil {
		return workflows.AppView{}, toProblem(err)
	}
	view, err := s.upsert(ctx, spec)
	if err != nil {
		return workflows.AppView{}, toProblem(err)
	}
	return view, nil
}

// SyncApplication starts a sync as POST /api/v1/applications/{name}/sync
// with ?wait=false does, and returns its ID once it has started.
func (s *Server) SyncApplication(ctx context.Context, project, name string, req workflows.SyncRequest) (workflows.SyncAccepted, error) {
	var acc workflows.SyncAccepted
	h, err := s.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: workflows.AppWorkflowID(project, name), UpdateName: workflows.UpdateSync,
		Args: []any{req}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, &acc)
	}
	if err != nil {
		return acc, toProblem(err)
	}
	return acc, nil
}

// DeleteApplication deletes an app as DELETE /api/v1/applications/{name}
// does, with cascade foreground, background or orphan.
func (s *Server) DeleteApplication(ctx context.Context, project, name, cascade, initiator string) (workflows.DeleteResult, error) {
	res, err := s.deleteWorkflow(ctx, workflows.AppWorkflowID(project, name),
		workflows.DeleteRequest{Cascade: cascade, Initiator: initiator})
	if err != nil {
		return res, toProblem(err)
	}
	return res, nil
}

// Application is an app's view, as GET /api/v1/applications/{name}
// answers it without the full resource list.
// An app whose workflow has ended (a deleted app) is not found.
func (s *Server) Application(ctx context.Context, project, name string) (workflows.AppView, error) {
	id := workflows.AppWorkflowID(project, name)
	d, err := s.c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return workflows.AppView{}, toProblem(err)
	}
	if d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return workflows.AppView{}, problem(http.StatusNotFound, "application not found")
	}
	view, err := s.status(ctx, id)
	if err != nil {
		return view, toProblem(err)
	}
	return view, nil
}

// ApplyProject creates or replaces a project, as POST or PUT
// /api/v1/projects does.
func (s *Server) ApplyProject(ctx context.Context, p appspec.Project) error {
	if err := s.storeProject(ctx, p); err != nil {
		return toProblem(err)
	}
	return nil
}

// Project is a stored project (404 when there is none).
func (s *Server) Project(ctx context.Context, name string) (appspec.Project, error) {
	p, err := s.opts.Settings.Project(ctx, name)
	if err != nil {
		return p, toProblem(err)
	}
	return p, nil
}

// DeleteProject deletes a project, as DELETE /api/v1/projects/{name}
// does: refused (409) while an application uses it.
func (s *Server) DeleteProject(ctx context.Context, name string) error {
	if err := s.removeProject(ctx, name); err != nil {
		return toProblem(err)
	}
	return nil
}

// ApplicationNames lists the running apps as project and name pairs, from
// the visibility index.
func (s *Server) ApplicationNames(ctx context.Context) ([][2]string, error) {
	var out [][2]string
	q := fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running'", workflows.ApplicationWorkflowName)
	err := s.eachExecution(ctx, q, func(e *workflowpb.WorkflowExecutionInfo) error {
		if proj, name, ok := workflows.ParseAppWorkflowID(e.GetExecution().GetWorkflowId()); ok {
			out = append(out, [2]string{proj, name})
		}
		return nil
	})
	if err != nil {
		return nil, toProblem(err)
	}
	return out, nil
}
