package api

import (
	"context"
	"fmt"
	"strings"

	workflowpb "go.temporal.io/api/workflow/v1"

	"github.com/windlass-cd/windlass/api/webhook"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

// appFinder finds the apps of a repository through the WindlassRepo search
// attribute, and refreshes them with the refresh signal.
type appFinder struct{ s *Server }

// AppsForRepo implements webhook.Finder.
func (f appFinder) AppsForRepo(ctx context.Context, normalizedRepoURL string) ([]webhook.App, error) {
	v, err := visibilityValue("repo", normalizedRepoURL)
	if err != nil {
		return nil, err
	}
	q := fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running' AND %s = %s",
		workflows.ApplicationWorkflowName, workflows.SearchAttrRepo, v)
	var out []webhook.App
	err = f.s.eachExecution(ctx, q, func(e *workflowpb.WorkflowExecutionInfo) error {
		id := e.GetExecution().GetWorkflowId()
		view, err := f.s.status(ctx, id)
		if err != nil {
			return fmt.Errorf("read app %s: %w", id, err)
		}
		app := webhook.App{ID: id}
		for _, src := range view.Spec.AllSources() {
			if appspec.NormalizeRepoURL(src.RepoURL) == normalizedRepoURL {
				app.TargetRevisions = append(app.TargetRevisions, src.TargetRevision)
				paths, _ := view.Spec.ManifestPaths(src.Path)
				app.Paths = append(app.Paths, paths...)
			}
		}
		out = append(out, app)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("find apps of %s: %w", normalizedRepoURL, err)
	}
	sets, err := f.setsForRepo(ctx, normalizedRepoURL, v)
	return append(out, sets...), err
}

// setsForRepo finds the ApplicationSets whose Git generators read the
// repository; each refreshes (a pass) on a push to a revision they read.
func (f appFinder) setsForRepo(ctx context.Context, normalizedRepoURL, v string) ([]webhook.App, error) {
	q := fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running' AND %s = %s",
		workflows.ApplicationSetWorkflowName, workflows.SearchAttrRepo, v)
	var out []webhook.App
	err := f.s.eachExecution(ctx, q, func(e *workflowpb.WorkflowExecutionInfo) error {
		name, _ := strings.CutPrefix(e.GetExecution().GetWorkflowId(), workflows.AppSetWorkflowID(""))
		view, err := f.s.appSetView(ctx, name)
		if err != nil {
			return fmt.Errorf("read applicationset %s: %w", name, err)
		}
		out = append(out, webhook.App{ID: e.GetExecution().GetWorkflowId(), TargetRevisions: workflows.AppSetRevisions(view.Set, normalizedRepoURL)})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("find applicationsets of %s: %w", normalizedRepoURL, err)
	}
	return out, nil
}

// Refresh implements webhook.Refresher.
func (f appFinder) Refresh(ctx context.Context, appID, reason string) error {
	return f.s.c.SignalWorkflow(ctx, appID, "", workflows.SignalRefresh, workflows.RefreshRequest{Reason: reason})
}
