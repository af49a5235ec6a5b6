package api

import (
	"context"
	"fmt"

	"go.temporal.io/api/workflowservice/v1"

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
	var token []byte
	for {
		resp, err := f.s.c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: f.s.opts.Namespace, PageSize: 1000, NextPageToken: token, Query: q,
		})
		if err != nil {
			return nil, fmt.Errorf("find apps of %s: %w", normalizedRepoURL, err)
		}
		for _, e := range resp.Executions {
			id := e.GetExecution().GetWorkflowId()
			view, err := f.s.status(ctx, id)
			if err != nil {
				return nil, fmt.Errorf("read app %s: %w", id, err)
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
		}
		if token = resp.NextPageToken; len(token) == 0 {
			return out, nil
		}
	}
}

// Refresh implements webhook.Refresher.
func (f appFinder) Refresh(ctx context.Context, appID, reason string) error {
	return f.s.c.SignalWorkflow(ctx, appID, "", workflows.SignalRefresh, workflows.RefreshRequest{Reason: reason})
}
