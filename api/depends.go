package api

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/labstack/echo/v5"
	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"

	"github.com/windlass-cd/windlass/api/rbac"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

// checkCycle refuses a spec whose dependencies (dependsOn) lead back to
// it through the saved apps, naming the cycle.
func (s *Server) checkCycle(ctx context.Context, spec appspec.Application) error {
	return appspec.CheckCycle(ctx, spec, s.savedDependsOn)
}

// savedDependsOn is the dependsOn of a running app.
func (s *Server) savedDependsOn(ctx context.Context, ref appspec.DependencyRef) ([]string, bool, error) {
	id := workflows.AppWorkflowID(ref.Project, ref.Name)
	d, err := s.c.DescribeWorkflowExecution(ctx, id, "")
	switch {
	case isNotFound(err):
		return nil, false, nil
	case err != nil:
		return nil, false, err
	case d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		return nil, false, nil
	}
	view, err := s.status(ctx, id)
	if err != nil {
		return nil, false, err
	}
	return view.Spec.DependsOn, true, nil
}

// AppDetail answers GET /api/v1/applications/{name}: the app's view and
// the apps that depend on it.
type AppDetail struct {
	appView
	// Dependents are the running apps whose dependsOn names this one,
	// "<project>/<name>", sorted; only those the caller may get.
	Dependents []string `json:"dependents"`
}

// dependents lists the running apps that depend on proj/name (their
// WindlassDependsOn search attribute) that the caller may get.
func (s *Server) dependents(c *echo.Context, proj, name string) ([]string, error) {
	v, err := visibilityValue("name", proj+"/"+name)
	if err != nil {
		return nil, err
	}
	q := fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running' AND %s = %s",
		workflows.ApplicationWorkflowName, workflows.SearchAttrDependsOn, v)
	out := []string{}
	err = s.eachExecution(c.Request().Context(), q, func(e *workflowpb.WorkflowExecutionInfo) error {
		p, n, ok := workflows.ParseAppWorkflowID(e.GetExecution().GetWorkflowId())
		if ok && s.allowed(c, rbac.ResourceApplications, rbac.ActionGet, rbac.AppObject(p, n)) {
			out = append(out, p+"/"+n)
		}
		return nil
	})
	slices.Sort(out)
	return out, err
}

// awaitSyncStart waits while the app's sync syncID waits for its
// dependencies, and says whether its SyncWorkflow started: false when the
// sync ended before it started (terminated while it waited).
func (s *Server) awaitSyncStart(ctx context.Context, appID, syncID string) (bool, error) {
	for delay := 200 * time.Millisecond; ; delay = min(2*delay, 2*time.Second) {
		v, err := s.c.QueryWorkflow(ctx, appID, "", workflows.QueryOperation)
		if err != nil {
			return false, err
		}
		var op *workflows.Operation
		if err := v.Get(&op); err != nil {
			return false, err
		}
		ours := op != nil && op.SyncID == syncID
		if !ours || len(op.WaitingFor) == 0 {
			// The child may be a moment behind the app's operation.
			_, err := s.c.DescribeWorkflowExecution(ctx, syncID, "")
			switch {
			case err == nil:
				return true, nil
			case !isNotFound(err):
				return false, err
			case !ours:
				return false, nil
			}
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(delay):
		}
	}
}

// recordedSync is the app's record of a sync that never started its
// SyncWorkflow.
func (s *Server) recordedSync(ctx context.Context, appID, syncID string) (workflows.SyncResult, error) {
	v, err := s.c.QueryWorkflow(ctx, appID, "", workflows.QueryHistory)
	if err != nil {
		return workflows.SyncResult{}, err
	}
	var h workflows.HistoryView
	if err := v.Get(&h); err != nil {
		return workflows.SyncResult{}, err
	}
	for _, sum := range h.Recent {
		if sum.ID == syncID {
			return workflows.SyncResult{SyncSummary: sum}, nil
		}
	}
	return workflows.SyncResult{}, fmt.Errorf("sync %s ended before it started and is not in the application's history", syncID)
}
