package children

import (
	"context"
	"errors"
	"fmt"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

// TemporalApps reads and changes app workflows through a Temporal client,
// as the API does.
type TemporalApps struct {
	Client    client.Client
	Namespace string
	TaskQueue string
	// Config is passed to the app workflows it starts.
	Config workflows.AppConfig
}

var _ Apps = (*TemporalApps)(nil)

// View queries a running app's status.
func (t *TemporalApps) View(ctx context.Context, project, name string) (workflows.AppView, bool, error) {
	id := workflows.AppWorkflowID(project, name)
	d, err := t.Client.DescribeWorkflowExecution(ctx, id, "")
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		return workflows.AppView{}, false, nil
	case err != nil:
		return workflows.AppView{}, false, err
	case d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		return workflows.AppView{}, false, nil
	}
	v, err := t.Client.QueryWorkflow(ctx, id, "", workflows.QueryStatus)
	if err != nil {
		return workflows.AppView{}, false, err
	}
	var view workflows.AppView
	return view, true, v.Get(&view)
}

const runningApps = `ExecutionStatus = "Running" AND WorkflowType = "` + workflows.ApplicationWorkflowName + `"`

// quote makes v a visibility query string literal.
func quote(v string) string {
	return `"` + strings.ReplaceAll(strings.ReplaceAll(v, `\`, `\\`), `"`, `\"`) + `"`
}

// list returns the app IDs, "<project>/<name>", matching the query.
func (t *TemporalApps) list(ctx context.Context, q string, limit int) ([]string, error) {
	var out []string
	err := t.each(ctx, q, func(proj, name string, _ *workflowpb.WorkflowExecutionInfo) bool {
		out = append(out, proj+"/"+name)
		return limit <= 0 || len(out) < limit
	})
	return out, err
}

// each calls f for every running app matching the query, page by page,
// until f answers false.
func (t *TemporalApps) each(ctx context.Context, q string, f func(proj, name string, e *workflowpb.WorkflowExecutionInfo) bool) error {
	var token []byte
	for {
		resp, err := t.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: t.Namespace, Query: q + " AND " + runningApps, NextPageToken: token, PageSize: 1000,
		})
		if err != nil {
			return err
		}
		more := true
		for _, e := range resp.GetExecutions() {
			if proj, name, ok := workflows.ParseAppWorkflowID(e.GetExecution().GetWorkflowId()); ok && more {
				more = f(proj, name, e)
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 || !more {
			return nil
		}
	}
}

// ListedApp is what an app's search attributes say of it.
type ListedApp struct {
	Project, Name     string
	Sync, Health, SHA string
	Labels            map[string]string
}

// ChildrenListed lists the running apps whose parent is parent with
// their search attributes, in one list rather than a query of each.
func (t *TemporalApps) ChildrenListed(ctx context.Context, parent string) ([]ListedApp, error) {
	var out []ListedApp
	err := t.each(ctx, workflows.SearchAttrParent+" = "+quote(parent), func(proj, name string, e *workflowpb.WorkflowExecutionInfo) bool {
		sa := e.GetSearchAttributes().GetIndexedFields()
		a := ListedApp{Project: proj, Name: name, Sync: keyword(sa, workflows.SearchAttrSync),
			Health: keyword(sa, workflows.SearchAttrHealth), SHA: keyword(sa, workflows.SearchAttrRev)}
		var entries []string
		if p := sa[workflows.SearchAttrLabels]; p != nil {
			_ = converter.GetDefaultDataConverter().FromPayload(p, &entries)
		}
		for _, en := range entries {
			if k, v, ok := strings.Cut(en, "="); ok {
				if a.Labels == nil {
					a.Labels = map[string]string{}
				}
				a.Labels[k] = v
			}
		}
		out = append(out, a)
		return true
	})
	return out, err
}

// keyword decodes a Keyword search attribute, "" when absent.
func keyword(sa map[string]*commonpb.Payload, key string) string {
	var v string
	if p := sa[key]; p != nil {
		_ = converter.GetDefaultDataConverter().FromPayload(p, &v)
	}
	return v
}

// Find lists the projects of the running apps with this name.
func (t *TemporalApps) Find(ctx context.Context, name string) ([]string, error) {
	ids, err := t.list(ctx, workflows.SearchAttrName+" = "+quote(name), 0)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		proj, _, _ := cut(id)
		out = append(out, proj)
	}
	return out, nil
}

// Children lists the running apps whose parent is parent.
func (t *TemporalApps) Children(ctx context.Context, parent string) ([]string, error) {
	return t.list(ctx, workflows.SearchAttrParent+" = "+quote(parent), 0)
}

// UsesProject says whether a running app is in the project.
func (t *TemporalApps) UsesProject(ctx context.Context, project string) (bool, error) {
	ids, err := t.list(ctx, workflows.SearchAttrProject+" = "+quote(project), 1)
	return len(ids) > 0, err
}

// Upsert is the API's Update-With-Start of setSpec; a new app carries its
// parent's search attribute from its start.
func (t *TemporalApps) Upsert(ctx context.Context, spec appspec.Application) error {
	id := workflows.AppWorkflowID(spec.Project, spec.Name)
	opts := client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                t.TaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
	}
	if spec.ManagedBy != nil {
		opts.TypedSearchAttributes = temporal.NewSearchAttributes(temporal.NewSearchAttributeKeyKeyword(workflows.SearchAttrParent).ValueSet(spec.ManagedBy.App))
	}
	start := t.Client.NewWithStartWorkflowOperation(opts, workflows.ApplicationWorkflowName, workflows.AppInput{Spec: spec, Config: t.Config})
	h, err := t.Client.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: start,
		UpdateOptions: client.UpdateWorkflowOptions{
			WorkflowID: id, UpdateName: workflows.UpdateSetSpec, Args: []any{spec},
			WaitForStage: client.WorkflowUpdateStageCompleted,
		},
	})
	if err != nil {
		return fmt.Errorf("set spec of %s: %w", id, err)
	}
	if err := h.Get(ctx, nil); err != nil {
		return fmt.Errorf("set spec of %s: %w", id, err)
	}
	return nil
}

// Move runs the app's move update and waits until its workflow in the
// new project has started.
func (t *TemporalApps) Move(ctx context.Context, from string, spec appspec.Application, initiator string) error {
	id := workflows.AppWorkflowID(from, spec.Name)
	h, err := t.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateName: workflows.UpdateMove,
		Args:         []any{workflows.MoveRequest{Spec: spec, Initiator: initiator}},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return fmt.Errorf("move %s: %w", id, err)
	}
	if err := h.Get(ctx, nil); err != nil {
		return fmt.Errorf("move %s: %w", id, err)
	}
	return nil
}

// Delete runs the app's delete update and waits for it.
func (t *TemporalApps) Delete(ctx context.Context, project, name, cascade, initiator string) error {
	h, err := t.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: workflows.AppWorkflowID(project, name), UpdateName: workflows.UpdateDelete,
		Args:         []any{workflows.DeleteRequest{Cascade: cascade, Initiator: initiator}},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return err
	}
	return h.Get(ctx, nil)
}

// Sync starts a sync of the app (accepted, not awaited).
func (t *TemporalApps) Sync(ctx context.Context, project, name, initiator string) error {
	_, err := t.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: workflows.AppWorkflowID(project, name), UpdateName: workflows.UpdateSync,
		Args:         []any{workflows.SyncRequest{Initiator: initiator}},
		WaitForStage: client.WorkflowUpdateStageAccepted,
	})
	return err
}

// Refresh signals a refresh.
func (t *TemporalApps) Refresh(ctx context.Context, project, name, reason string) error {
	return t.Client.SignalWorkflow(ctx, workflows.AppWorkflowID(project, name), "", workflows.SignalRefresh, workflows.RefreshRequest{Reason: reason})
}
