package api

import (
	"context"
	"fmt"
	"strings"

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
			break
		}
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
	var token []byte
	for {
		resp, err := f.s.c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: f.s.opts.Namespace, PageSize: 1000, NextPageToken: token, Query: q,
		})
		if err != nil {
			return nil, fmt.Errorf("find applicationsets of %s: %w", normalizedRepoURL, err)
		}
		for _, e := range resp.Executions {
			id := e.GetExecution().GetWorkflowId()
			name, _ := strings.CutPrefix(id, workflows.AppSetWorkflowID(""))
			view, err := f.s.appSetView(ctx, name)
			if err != nil {
				return nil, fmt.Errorf("read applicationset %s: %w", name, err)
			}
			out = append(out, webhook.App{ID: id, TargetRevisions: workflows.AppSetRevisions(view.Set, normalizedRepoURL)})
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
