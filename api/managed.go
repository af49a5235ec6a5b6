package api

import (
	"context"
	"fmt"
	"net/http"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

// refuseManagedBy answers 400 when a request body sets managedBy, which
// only the parent app's sync sets.
func refuseManagedBy(spec appspec.Application) error {
	if spec.ManagedBy == nil {
		return nil
	}
	pr := problem(http.StatusBadRequest, "managedBy is set by the sync of the app whose manifests declare this one")
	pr.Field = "managedBy"
	return pr
}

// refuseManaged answers 409, naming the parent, when the app with workflow
// ID id is declared in the manifests of another app that still exists:
// its spec is changed in the parent's Git, not through the API.
func (s *Server) refuseManaged(ctx context.Context, id string) error {
	view, err := s.status(ctx, id)
	if err != nil || view.Spec.ManagedBy == nil {
		return nil // a missing app is not managed; other errors show later
	}
	parent := view.Spec.ManagedBy.App
	proj, name, ok := splitApp(parent)
	if !ok {
		return nil
	}
	d, err := s.c.DescribeWorkflowExecution(ctx, workflows.AppWorkflowID(proj, name), "")
	if err != nil || d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return nil // the parent is gone: the app is the API's again
	}
	return problem(http.StatusConflict, fmt.Sprintf("application %s/%s is managed by application %s (declared in its manifests); change it in Git",
		view.Spec.Project, view.Spec.Name, parent))
}

// splitApp splits "<project>/<name>".
func splitApp(app string) (proj, name string, ok bool) {
	for i := range len(app) {
		if app[i] == '/' {
			return app[:i], app[i+1:], i > 0 && i < len(app)-1
		}
	}
	return "", "", false
}
