package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v5"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	jsonpatch "github.com/evanphx/json-patch/v5"

	"github.com/windlass-cd/windlass/activities/project"
	"github.com/windlass-cd/windlass/api/rbac"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/lastknown"
	"github.com/windlass-cd/windlass/internal/settings"
	"github.com/windlass-cd/windlass/workflows"
)

// projectParam reads ?project=, defaulting to the default project.
func projectParam(c *echo.Context) (string, error) {
	p := c.QueryParam("project")
	if p == "" {
		return appspec.DefaultProject, nil
	}
	return p, appspec.ValidateProjectName(p)
}

func appName(c *echo.Context) (string, error) {
	n := c.Param("name")
	return n, appspec.ValidateAppName(n)
}

// readSpec reads an application from the body: Windlass's own JSON or
// YAML, or an Argo CD Application (converted; unsupported Argo CD fields
// are rejected by name).
func readSpec(c *echo.Context) (appspec.Application, error) {
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return appspec.Application{}, err
	}
	spec, err := appspec.ParseApplication(body)
	if err != nil {
		return spec, err
	}
	for _, w := range appspec.ArgoWarnings(body) {
		c.Response().Header().Add("Warning", warningValue(w))
	}
	return spec, refuseManagedBy(spec)
}

// warningValue is an RFC 9111 Warning header value of code 299, as the
// Kubernetes API server sends them, which kubectl and windlass print.
func warningValue(text string) string {
	return `299 - ` + strconv.Quote(text)
}

// checkProject answers 403 with the reason when the app's project does not
// exist or does not permit its sources and destination.
func (s *Server) checkProject(ctx context.Context, spec appspec.Application) error {
	p, err := s.opts.Settings.Project(ctx, spec.Project)
	if errors.Is(err, project.ErrNotFound) {
		pr := problem(http.StatusForbidden, "project "+spec.Project+" does not exist")
		pr.Field = "project"
		return pr
	}
	if err != nil {
		return err
	}
	if spec.Destination, err = s.resolveDestination(ctx, spec.Destination, http.StatusBadRequest); err != nil {
		return err
	}
	repos, err := s.opts.Settings.Repos(ctx)
	if err != nil {
		return err
	}
	p.ForeignRepos = settings.ForeignRepos(repos, p.Name)
	var fe *appspec.FieldError
	if err := p.CheckApp(spec); errors.As(err, &fe) {
		pr := problem(http.StatusForbidden, fe.Reason)
		pr.Field = fe.Field
		return pr
	} else if err != nil {
		return err
	}
	return nil
}

// createApp creates an application (409 if it exists, unless ?upsert=true,
// which replaces its spec and answers 200).
func (s *Server) createApp(c *echo.Context) error {
	spec, err := readSpec(c)
	if err != nil {
		return err
	}
	if err := s.authorize(c, rbac.ResourceApplications, rbac.ActionCreate, rbac.AppObject(spec.Project, spec.Name)); err != nil {
		return err
	}
	ctx := c.Request().Context()
	if err := s.checkProject(ctx, spec); err != nil {
		return err
	}
	id := workflows.AppWorkflowID(spec.Project, spec.Name)
	d, err := s.c.DescribeWorkflowExecution(ctx, id, "")
	exists := err == nil && d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	switch {
	case err != nil && !isNotFound(err):
		return err
	case exists && c.QueryParam("upsert") != "true":
		return problem(http.StatusConflict, fmt.Sprintf("application %s/%s already exists (use PUT, or ?upsert=true)", spec.Project, spec.Name))
	case exists:
		if err := s.authorize(c, rbac.ResourceApplications, rbac.ActionUpdate, rbac.AppObject(spec.Project, spec.Name)); err != nil {
			return err
		}
		if err := s.refuseManaged(ctx, id); err != nil {
			return err
		}
	}
	view, err := s.upsert(ctx, spec)
	if err != nil {
		return err
	}
	// 200 tells a client that upserts (app create -f) what it replaced.
	if exists {
		return c.JSON(http.StatusOK, view)
	}
	return c.JSON(http.StatusCreated, view)
}

// updateApp replaces the spec of an existing application.
func (s *Server) updateApp(c *echo.Context) error {
	spec, err := readSpec(c)
	if err != nil {
		return err
	}
	if spec.Name != c.Param("name") {
		return &Problem{Type: "about:blank", Title: "Bad Request", Status: http.StatusBadRequest, Detail: "name in the body does not match the URL", Field: "name"}
	}
	// ?project= names the app's project now; a body with another moves it.
	if from := c.QueryParam("project"); from != "" && from != spec.Project {
		if err := appspec.ValidateProjectName(from); err != nil {
			return err
		}
		return s.moveApp(c, from, spec)
	}
	return s.replaceSpec(c, spec)
}

// replaceSpec checks the caller and the project, then sets the spec of
// an existing application.
func (s *Server) replaceSpec(c *echo.Context, spec appspec.Application) error {
	if err := s.authorize(c, rbac.ResourceApplications, rbac.ActionUpdate, rbac.AppObject(spec.Project, spec.Name)); err != nil {
		return err
	}
	ctx := c.Request().Context()
	if err := s.checkProject(ctx, spec); err != nil {
		return err
	}
	if _, err := s.c.DescribeWorkflowExecution(ctx, workflows.AppWorkflowID(spec.Project, spec.Name), ""); err != nil {
		return err
	}
	if err := s.refuseManaged(ctx, workflows.AppWorkflowID(spec.Project, spec.Name)); err != nil {
		return err
	}
	view, err := s.upsert(ctx, spec)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, view)
}

// patchApp applies a JSON merge patch (RFC 7386) to the spec.
func (s *Server) patchApp(c *echo.Context) error {
	id, proj, name, err := s.app(c, rbac.ActionUpdate)
	if err != nil {
		return err
	}
	patch, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return err
	}
	view, err := s.status(c.Request().Context(), id)
	if err != nil {
		return err
	}
	// A parent that is gone leaves its record behind; replaceSpec refuses
	// the patch while the parent exists.
	view.Spec.ManagedBy = nil
	cur, err := json.Marshal(view.Spec)
	if err != nil {
		return err
	}
	merged, err := jsonpatch.MergePatch(cur, patch)
	if err != nil {
		return problem(http.StatusBadRequest, "the body is not a JSON merge patch: "+err.Error())
	}
	spec, err := appspec.ParseApplication(merged)
	if err != nil {
		return err
	}
	if err := refuseManagedBy(spec); err != nil {
		return err
	}
	if spec.Name != name {
		return &Problem{Type: "about:blank", Title: "Bad Request", Status: http.StatusBadRequest, Detail: "a patch cannot rename an application", Field: "name"}
	}
	if spec.Project != proj {
		return s.moveApp(c, proj, spec)
	}
	return s.replaceSpec(c, spec)
}

// upsert does the Update-With-Start of setSpec.
func (s *Server) upsert(ctx context.Context, spec appspec.Application) (workflows.AppView, error) {
	if err := s.checkCycle(ctx, spec); err != nil {
		return workflows.AppView{}, err
	}
	if err := s.checkSubscriptions(ctx, spec.Annotations); err != nil {
		return workflows.AppView{}, err
	}
	id := workflows.AppWorkflowID(spec.Project, spec.Name)
	start := s.c.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                s.opts.TaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		// A new app's labels select it before its first pass publishes.
		TypedSearchAttributes: startLabels(spec.Labels),
	}, workflows.ApplicationWorkflowName, workflows.AppInput{Spec: spec, Config: s.opts.AppConfig})
	h, err := s.c.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: start,
		UpdateOptions: client.UpdateWorkflowOptions{
			WorkflowID: id, UpdateName: workflows.UpdateSetSpec, Args: []any{spec},
			WaitForStage: client.WorkflowUpdateStageCompleted,
		},
	})
	if err != nil {
		return workflows.AppView{}, fmt.Errorf("set spec of %s: %w", id, err)
	}
	var view workflows.AppView
	if err := h.Get(ctx, &view); err != nil {
		return workflows.AppView{}, fmt.Errorf("set spec of %s: %w", id, err)
	}
	return view, nil
}

// app reads the app's name and ?project=, and checks that the caller may
// do action on it.
func (s *Server) app(c *echo.Context, action string) (id, proj, name string, err error) {
	name, err = appName(c)
	if err != nil {
		return "", "", "", err
	}
	proj, err = projectParam(c)
	if err != nil {
		return "", "", "", err
	}
	if err := s.authorize(c, rbac.ResourceApplications, action, rbac.AppObject(proj, name)); err != nil {
		return "", "", "", err
	}
	return workflows.AppWorkflowID(proj, name), proj, name, nil
}

// appID is app for handlers that need only the workflow ID.
func (s *Server) appID(c *echo.Context, action string) (string, error) {
	id, _, _, err := s.app(c, action)
	return id, err
}

func (s *Server) status(ctx context.Context, id string) (workflows.AppView, error) {
	var view workflows.AppView
	v, err := s.c.QueryWorkflow(ctx, id, "", workflows.QueryStatus)
	var notReady *serviceerror.WorkflowNotReady
	if errors.As(err, &notReady) {
		return s.stuckView(ctx, id)
	}
	if err != nil {
		return view, err
	}
	if err := v.Get(&view); err != nil {
		return view, err
	}
	if view.MovedTo != "" {
		return view, movedAway(view)
	}
	return view, nil
}

// stuckView is the view of an app whose workflow cannot answer because
// its workflow task fails: the status it last published, Unknown, with
// the task's failure as the message, so that a wedged app says why
// instead of failing the request.
func (s *Server) stuckView(ctx context.Context, id string) (workflows.AppView, error) {
	proj, name, _ := workflows.ParseAppWorkflowID(id)
	d, err := s.c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return workflows.AppView{}, err
	}
	info := d.GetWorkflowExecutionInfo()
	sa := info.GetSearchAttributes().GetIndexedFields()
	view := workflows.AppView{Spec: appspec.Application{Name: name, Project: proj}}
	view.Spec.Destination.Server = keyword(sa, workflows.SearchAttrCluster, "")
	view.Spec.Destination.Namespace = keyword(sa, workflows.SearchAttrNamespace, "")
	view.Status.Sync, view.Status.Health = appspec.SyncUnknown, appspec.HealthUnknown
	view.Status.SHA = keyword(sa, workflows.SearchAttrRev, "")
	cause := "its workflow task keeps failing"
	if f := s.lastTaskFailure(ctx, id); f != "" {
		cause += ": " + f
	}
	view.Status.Message = "the application's workflow cannot run: " + cause +
		"; fix the repository or the spec, then refresh; the sync history is kept"
	return view, nil
}

// lastTaskFailure is the message of the newest workflow task failure in
// id's history (its first line), or "".
func (s *Server) lastTaskFailure(ctx context.Context, id string) string {
	resp, err := s.c.WorkflowService().GetWorkflowExecutionHistoryReverse(ctx, &workflowservice.GetWorkflowExecutionHistoryReverseRequest{
		Namespace: s.opts.Namespace, Execution: &commonpb.WorkflowExecution{WorkflowId: id}, MaximumPageSize: 100})
	if err != nil {
		return ""
	}
	for _, e := range resp.GetHistory().GetEvents() {
		if a := e.GetWorkflowTaskFailedEventAttributes(); a != nil {
			msg, _, _ := strings.Cut(a.GetFailure().GetMessage(), "\n")
			if len(msg) > 500 {
				msg = msg[:500] + "…"
			}
			return msg
		}
	}
	return ""
}

func (s *Server) getApp(c *echo.Context) error {
	id, proj, name, err := s.app(c, rbac.ActionGet)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	view, stale, err := s.known.views.Get(ctx, id, func(ctx context.Context) (workflows.AppView, error) { return s.status(ctx, id) })
	if err != nil {
		return err
	}
	// The kept view is shared: the resources below are changed in place.
	view.Status.Resources = slices.Clone(view.Status.Resources)
	s.fullResources(ctx, &view, nil)
	s.withHealthTimes(ctx, &view, nil)
	markStale(c, stale)
	out := AppDetail{appView: appView{AppView: view, Stale: stale}}
	// Dependents are read from visibility: none while the engine is down.
	out.Dependents = []string{}
	if stale == nil {
		if out.Dependents, err = s.dependents(c, proj, name); err != nil {
			return err
		}
	}
	return c.JSON(http.StatusOK, out)
}

// syncApp starts a sync. With ?wait=false it answers 202 with the sync's
// ID at once; by default it waits for the sync to end and returns its
// result (200 when it succeeded, 409 with the result when it did not).
func (s *Server) syncApp(c *echo.Context) error {
	id, err := s.appID(c, rbac.ActionSync)
	if err != nil {
		return err
	}
	var body workflows.SyncRequest
	if c.Request().ContentLength != 0 {
		if err := echo.BindBody(c, &body); err != nil {
			return problem(http.StatusBadRequest, "request body is not a valid sync request: "+err.Error())
		}
	}
	body.Initiator = initiator(c)
	return s.runOperation(c, id, workflows.UpdateSync, body)
}

// rollbackBody is the rollback request a caller sends: a RollbackRequest
// without Past, which only the API sets.
type rollbackBody struct {
	ID     string `json:"id"`
	Force  bool   `json:"force,omitempty"`
	Prune  bool   `json:"prune,omitempty"`
	DryRun bool   `json:"dryRun,omitempty"`
	// Initiator is ignored: the server records the caller.
	Initiator string `json:"initiator,omitempty"`
}

// rollbackApp re-syncs a past sync's exact revision and sources: one the
// app keeps, or any other it ran, looked up by ID (rollbackTarget).
func (s *Server) rollbackApp(c *echo.Context) error {
	id, proj, name, err := s.app(c, rbac.ActionRollback)
	if err != nil {
		return err
	}
	var in rollbackBody
	if err := echo.BindBody(c, &in); err != nil || in.ID == "" {
		return problem(http.StatusBadRequest, "request body must name the sync to roll back to: {\"id\": \"sync/<project>/<app>/<n>\"}")
	}
	body := workflows.RollbackRequest{ID: in.ID, Force: in.Force, Prune: in.Prune, DryRun: in.DryRun, Initiator: initiator(c)}
	moves := s.appMoves(c.Request().Context(), id)
	// A sync named in the app's project by its number ran where SyncIDOf says.
	if n, ok := workflows.ParseSyncSeq(body.ID, proj, name); ok && len(moves) > 0 {
		body.ID = workflows.SyncIDOf(proj, name, moves, n)
	}
	if body.Past, err = s.rollbackTarget(c.Request().Context(), id, proj, name, body.ID, moves); err != nil {
		return err
	}
	return s.runOperation(c, id, workflows.UpdateRollback, body)
}

func (s *Server) runOperation(c *echo.Context, id, update string, arg any) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), s.opts.SyncTimeout)
	defer cancel()
	h, err := s.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateName: update, Args: []any{arg}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return err
	}
	var acc workflows.SyncAccepted
	if err := h.Get(ctx, &acc); err != nil {
		return err
	}
	if c.QueryParam("wait") == "false" {
		return c.JSON(http.StatusAccepted, acc)
	}
	if len(acc.WaitingFor) > 0 {
		started, err := s.awaitSyncStart(ctx, id, acc.ID)
		if err != nil {
			return err
		}
		if !started {
			res, err := s.recordedSync(ctx, id, acc.ID)
			if err != nil {
				return err
			}
			return c.JSON(http.StatusConflict, res)
		}
	}
	res, ok, err := WaitSync(ctx, s.c, acc.ID)
	if err != nil {
		return err
	}
	// Answer once the app has recorded the outcome too, so that the next
	// operation is not refused as "in progress".
	s.awaitRecorded(ctx, id, acc.ID)
	if !ok {
		return c.JSON(http.StatusConflict, res)
	}
	return c.JSON(http.StatusOK, res)
}

// awaitRecorded polls the app's history until it lists syncID (at most a
// few seconds; the sync result is already known, so this only orders the
// answer after the app's bookkeeping).
func (s *Server) awaitRecorded(ctx context.Context, appID, syncID string) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for delay := 20 * time.Millisecond; ; delay = min(2*delay, 500*time.Millisecond) {
		if v, err := s.c.QueryWorkflow(ctx, appID, "", workflows.QueryHistory); err == nil {
			var h workflows.HistoryView
			if v.Get(&h) == nil && len(h.Recent) > 0 && h.Recent[0].ID == syncID {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
	}
}

// WaitSync waits for a SyncWorkflow and returns its result, and whether
// it succeeded.
func WaitSync(ctx context.Context, c client.Client, syncID string) (workflows.SyncResult, bool, error) {
	var res workflows.SyncResult
	err := c.GetWorkflow(ctx, syncID, "").Get(ctx, &res)
	if err == nil {
		return res, true, nil
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) && (app.Type() == workflows.ErrTypeSyncFailed || app.Type() == workflows.ErrTypeSyncTerminated) && app.HasDetails() {
		if derr := app.Details(&res); derr == nil {
			return res, false, nil
		}
	}
	return res, false, err
}

// terminateApp cancels the running operation.
func (s *Server) terminateApp(c *echo.Context) error {
	id, err := s.appID(c, rbac.ActionSync)
	if err != nil {
		return err
	}
	h, err := s.c.UpdateWorkflow(c.Request().Context(), client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateName: workflows.UpdateTerminate, Args: []any{workflows.TerminateRequest{Initiator: initiator(c)}},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return err
	}
	if err := h.Get(c.Request().Context(), nil); err != nil {
		return err
	}
	return c.NoContent(http.StatusAccepted)
}

// deleteApp deletes the app's resources (?cascade=foreground|background|
// orphan, default foreground) and ends its workflow.
func (s *Server) deleteApp(c *echo.Context) error {
	id, err := s.appID(c, rbac.ActionDelete)
	if err != nil {
		return err
	}
	res, err := s.deleteWorkflow(c.Request().Context(), id, workflows.DeleteRequest{Cascade: c.QueryParam("cascade"), Initiator: initiator(c)})
	if err != nil {
		return err
	}
	if len(res.AwaitingApproval) > 0 {
		// Resources marked Delete=confirm wait for confirm-deletion.
		return c.JSON(http.StatusAccepted, res)
	}
	return c.JSON(http.StatusOK, res)
}

// deleteWorkflow runs the delete update of the app workflow id and waits
// (up to SyncTimeout) for its result.
func (s *Server) deleteWorkflow(ctx context.Context, id string, req workflows.DeleteRequest) (workflows.DeleteResult, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.SyncTimeout)
	defer cancel()
	h, err := s.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateName: workflows.UpdateDelete, Args: []any{req},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return workflows.DeleteResult{}, err
	}
	var res workflows.DeleteResult
	if err := h.Get(ctx, &res); err != nil {
		return workflows.DeleteResult{}, err
	}
	return res, nil
}

// ApprovedDeletion answers confirm-deletion: the resources whose deletion
// was approved.
type ApprovedDeletion struct {
	Resources []appspec.ResourceKey `json:"resources"`
}

// confirmDeletion approves the deletion of the resources marked
// Prune=confirm (the running sync waits) or Delete=confirm (the app's
// deletion waits), as Argo CD's "confirm deletion".
func (s *Server) confirmDeletion(c *echo.Context) error {
	id, err := s.appID(c, rbac.ActionDelete)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	h, err := s.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateName: workflows.UpdateApproveDeletion,
		Args:         []any{workflows.ApproveDeletionRequest{Initiator: initiator(c)}},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return err
	}
	var out ApprovedDeletion
	if err := h.Get(ctx, &out.Resources); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// queryApp answers a read-only query of the app workflow.
func (s *Server) queryApp(name string, into func() any) echo.HandlerFunc {
	return func(c *echo.Context) error {
		id, err := s.appID(c, rbac.ActionGet)
		if err != nil {
			return err
		}
		v, err := s.c.QueryWorkflow(c.Request().Context(), id, "", name)
		if err != nil {
			return err
		}
		out := into()
		if err := v.Get(out); err != nil {
			return err
		}
		return c.JSON(http.StatusOK, out)
	}
}

func (s *Server) refreshApp(c *echo.Context) error {
	id, err := s.appID(c, rbac.ActionGet)
	if err != nil {
		return err
	}
	hard, _ := strconv.ParseBool(c.QueryParam("hard"))
	err = s.c.SignalWorkflow(c.Request().Context(), id, "", workflows.SignalRefresh, workflows.RefreshRequest{Hard: hard, Reason: "api: " + initiator(c)})
	if err != nil {
		return err
	}
	return c.NoContent(http.StatusAccepted)
}

// page reads ?limit= (1–1000, default 100) and ?cursor=.
func page(c *echo.Context) (int, []byte, error) {
	limit := 100
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return 0, nil, &Problem{Type: "about:blank", Title: "Bad Request", Status: http.StatusBadRequest, Detail: "limit must be a number from 1 to 1000", Field: "limit"}
		}
		limit = n
	}
	token, err := base64.RawURLEncoding.DecodeString(c.QueryParam("cursor"))
	if err != nil {
		return 0, nil, &Problem{Type: "about:blank", Title: "Bad Request", Status: http.StatusBadRequest, Detail: "cursor is not valid", Field: "cursor"}
	}
	return limit, token, nil
}

// AppSummary is one row of the application list, read from visibility.
type AppSummary struct {
	Name      string   `json:"name"`
	Project   string   `json:"project"`
	Sync      string   `json:"sync"`
	Health    string   `json:"health"`
	Revision  string   `json:"revision,omitempty"`
	Cluster   string   `json:"cluster,omitempty"`
	Namespace string   `json:"namespace,omitempty"`
	Repos     []string `json:"repos,omitempty"`
	// Labels are the app's labels.
	Labels map[string]string `json:"labels,omitempty"`
	// RevisionMessage is the subject of Revision's commit, when known.
	RevisionMessage string `json:"revisionMessage,omitempty"`
	// LastSyncedAt and LastSyncPhase describe the app's latest sync.
	LastSyncedAt  time.Time `json:"lastSyncedAt,omitzero"`
	LastSyncPhase string    `json:"lastSyncPhase,omitempty"`
}

// AppList is a page of applications.
type AppList struct {
	Items []AppSummary `json:"items"`
	// Next is the cursor of the next page, empty on the last page.
	Next string `json:"next,omitempty"`
	// Stale is set when the workflow engine does not answer and the page
	// is the last one this server read.
	Stale *lastknown.Stale `json:"stale,omitempty"`
}

// listFilters map query parameters onto search attributes.
var listFilters = []struct{ param, attr string }{
	{"project", workflows.SearchAttrProject},
	{"sync", workflows.SearchAttrSync},
	{"health", workflows.SearchAttrHealth},
	{"cluster", workflows.SearchAttrCluster},
	{"namespace", workflows.SearchAttrNamespace},
}

// visibilityValue quotes a value for a visibility query; values with
// quotes or backslashes are refused rather than escaped.
func visibilityValue(param, v string) (string, error) {
	if strings.ContainsAny(v, "'\\\"\n") || len(v) > 512 {
		return "", &Problem{Type: "about:blank", Title: "Bad Request", Status: http.StatusBadRequest, Detail: param + " contains characters that cannot be searched for", Field: param}
	}
	return "'" + v + "'", nil
}

// listQuery builds the visibility query of the list's filters.
func listQuery(c *echo.Context) (string, error) {
	q := fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running'", workflows.ApplicationWorkflowName)
	add := func(param, attr, op, v string) error {
		qv, err := visibilityValue(param, v)
		if err != nil {
			return err
		}
		q += " AND " + attr + " " + op + " " + qv
		return nil
	}
	for _, f := range listFilters {
		if v := c.QueryParam(f.param); v != "" {
			if err := add(f.param, f.attr, "=", v); err != nil {
				return "", err
			}
		}
	}
	if v := c.QueryParam("repo"); v != "" {
		if err := add("repo", workflows.SearchAttrRepo, "=", appspec.NormalizeRepoURL(v)); err != nil {
			return "", err
		}
	}
	if v := c.QueryParam("search"); v != "" {
		if err := add("search", workflows.SearchAttrName, "STARTS_WITH", v); err != nil {
			return "", err
		}
	}
	sel, err := labelSelector(c)
	if err != nil || sel == nil {
		return q, err
	}
	sq, err := selectorQuery(sel)
	if err != nil || sq == "" {
		return q, err
	}
	return q + " AND " + sq, nil
}

// listApps lists applications from the visibility index, filtered, a page
// at a time, keeping only those the caller may get.
func (s *Server) listApps(c *echo.Context) error {
	limit, token, err := page(c)
	if err != nil {
		return err
	}
	q, err := listQuery(c)
	if err != nil {
		return err
	}
	order, err := listSort(c, sortOrders)
	if err != nil {
		return err
	}
	if order != sortNewest {
		return s.sortedList(c, q, order, limit, token)
	}
	resp, stale, err := s.appPage(c.Request().Context(), q, limit, token)
	if err != nil {
		return err
	}
	out := AppList{Items: s.summaries(c, resp.Executions), Stale: stale}
	if len(resp.NextPageToken) > 0 {
		out.Next = base64.RawURLEncoding.EncodeToString(resp.NextPageToken)
	}
	markStale(c, stale)
	return c.JSON(http.StatusOK, out)
}

// summaries turns visibility rows into list rows the caller may get.
func (s *Server) summaries(c *echo.Context, executions []*workflowpb.WorkflowExecutionInfo) []AppSummary {
	out := make([]AppSummary, 0, len(executions))
	for _, e := range executions {
		if row, ok := s.summary(c, e); ok {
			out = append(out, row)
		}
	}
	sel, _ := labelSelector(c) // listQuery has checked it
	return selected(out, sel)
}

// summary is the list row of one app's visibility row; false when it is
// not an app or the caller may not get it. It does not apply the label
// selector.
func (s *Server) summary(c *echo.Context, e *workflowpb.WorkflowExecutionInfo) (AppSummary, bool) {
	proj, name, ok := workflows.ParseAppWorkflowID(e.GetExecution().GetWorkflowId())
	if !ok || !s.allowed(c, rbac.ResourceApplications, rbac.ActionGet, rbac.AppObject(proj, name)) {
		return AppSummary{}, false
	}
	sa := e.GetSearchAttributes().GetIndexedFields()
	row := AppSummary{
		Name: name, Project: proj,
		Sync:      keyword(sa, workflows.SearchAttrSync, string(appspec.SyncUnknown)),
		Health:    keyword(sa, workflows.SearchAttrHealth, string(appspec.HealthUnknown)),
		Revision:  keyword(sa, workflows.SearchAttrRev, ""),
		Cluster:   keyword(sa, workflows.SearchAttrCluster, ""),
		Namespace: keyword(sa, workflows.SearchAttrNamespace, ""),
		Repos:     keywords(sa, workflows.SearchAttrRepo),
		Labels:    labelsOf(keywords(sa, workflows.SearchAttrLabels)),
	}
	memo := e.GetMemo().GetFields()
	fromPayload(memo[workflows.MemoLastSyncedAt], &row.LastSyncedAt)
	fromPayload(memo[workflows.MemoLastSyncPhase], &row.LastSyncPhase)
	fromPayload(memo[workflows.MemoRevisionMessage], &row.RevisionMessage)
	return row, true
}

// fromPayload decodes p into v when p is set; a value that does not
// decode leaves v as it was.
func fromPayload(p *commonpb.Payload, v any) {
	if p != nil {
		_ = converter.GetDefaultDataConverter().FromPayload(p, v)
	}
}

func keywords(sa map[string]*commonpb.Payload, key string) []string {
	p, ok := sa[key]
	if !ok {
		return nil
	}
	var v []string
	if err := converter.GetDefaultDataConverter().FromPayload(p, &v); err != nil {
		return nil
	}
	return v
}

func keyword(sa map[string]*commonpb.Payload, key, def string) string {
	p, ok := sa[key]
	if !ok {
		return def
	}
	var v string
	if err := converter.GetDefaultDataConverter().FromPayload(p, &v); err != nil || v == "" {
		return def
	}
	return strings.TrimSpace(v)
}

func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}
