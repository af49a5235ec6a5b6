package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v5"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/windlass-cd/windlass/activities/appsets"
	"github.com/windlass-cd/windlass/api/rbac"
	"github.com/windlass-cd/windlass/internal/appset"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

// AppSetSummary is a row of GET /api/v1/applicationsets, read from the
// visibility index (no query per set).
type AppSetSummary struct {
	Name    string `json:"name"`
	Project string `json:"project"`
	// Apps counts the set's apps, Generated those its generators yielded
	// at the last pass that succeeded; Error is the last pass's error.
	Apps      int      `json:"apps"`
	Generated int      `json:"generated"`
	Error     string   `json:"error,omitempty"`
	Repos     []string `json:"repos,omitempty"`
	// Generators names each generator ("git directories envs apps/*"),
	// as the set's last pass recorded them.
	Generators []string `json:"generators,omitempty"`
}

// AppSetList answers GET /api/v1/applicationsets.
type AppSetList struct {
	Items []AppSetSummary `json:"items"`
}

// AppSetChild is one app of a set, with its sync and health.
type AppSetChild struct {
	Project string `json:"project"`
	Name    string `json:"name"`
	Sync    string `json:"sync"`
	Health  string `json:"health"`
}

// AppSetDetail answers GET /api/v1/applicationsets/{name}: the set, its
// status (with the generator output of the last pass) and its apps.
type AppSetDetail struct {
	Set          appset.ApplicationSet  `json:"set"`
	Status       workflows.AppSetStatus `json:"status"`
	Applications []AppSetChild          `json:"applications"`
	// Generators names each of the set's generators, in order.
	Generators []string `json:"generators"`
	// Rollout is the set's RollingSync rollout step by step, nil when
	// the set has none.
	Rollout *workflows.RolloutStatus `json:"rollout,omitempty"`
}

// setsQuery lists the running set workflows.
var setsQuery = fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running'", workflows.ApplicationSetWorkflowName)

// appSetObject is the RBAC object of a set: "<project>/<set>".
func appSetObject(set appset.ApplicationSet) string {
	return rbac.AppObject(workflows.AppSetProject(set), set.Metadata.Name)
}

// readAppSet reads a set from the body (Argo CD YAML or JSON, as it is).
func readAppSet(c *echo.Context) (appset.ApplicationSet, error) {
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return appset.ApplicationSet{}, err
	}
	set, err := appset.Parse(body)
	if err != nil {
		return set, appSetProblem(err)
	}
	if errs := validation.IsDNS1123Subdomain(set.Metadata.Name); len(errs) > 0 {
		pr := problem(http.StatusBadRequest, fmt.Sprintf("metadata.name %q: %s", set.Metadata.Name, strings.Join(errs, "; ")))
		pr.Field = "metadata.name"
		return set, pr
	}
	set.Status = nil
	return set, nil
}

// setProject is the project a running set's workflow published, and
// false when no such set runs.
func (s *Server) setProject(ctx context.Context, name string) (string, bool, error) {
	d, err := s.c.DescribeWorkflowExecution(ctx, workflows.AppSetWorkflowID(name), "")
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		return "", false, nil
	case err != nil:
		return "", false, err
	case d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		return "", false, nil
	}
	sa := d.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()
	return keyword(sa, workflows.SearchAttrProject, appspec.DefaultProject), true, nil
}

// authorizeSet checks action on a running set, by the project it
// published. A set that does not run is 404 to the callers that may do
// action on a set of that name in every project, 403 to the others.
func (s *Server) authorizeSet(c *echo.Context, action string) (string, error) {
	name := c.Param("name")
	proj, ok, err := s.setProject(c.Request().Context(), name)
	if err != nil {
		return "", err
	}
	if !ok {
		if err := s.authorize(c, rbac.ResourceApplicationSets, action, rbac.AppObject("*", name)); err != nil {
			return "", err
		}
		return "", problem(http.StatusNotFound, "applicationset "+name+" not found")
	}
	return name, s.authorize(c, rbac.ResourceApplicationSets, action, rbac.AppObject(proj, name))
}

// authorizeApps checks create on applicationsets for every project the
// set's apps land in, as the preview does.
func (s *Server) authorizeApps(c *echo.Context, set appset.ApplicationSet, action string) error {
	if err := s.authorize(c, rbac.ResourceApplicationSets, action, appSetObject(set)); err != nil {
		return err
	}
	apps, err := s.appSets.Generate(c.Request().Context(), set)
	if err != nil {
		// The set's status says why; nothing is written by a bad set.
		return nil
	}
	checked := []string{workflows.AppSetProject(set)}
	for _, a := range apps {
		if p := a.Application.Project; !slices.Contains(checked, p) {
			if err := s.authorize(c, rbac.ResourceApplicationSets, action, rbac.AppObject(p, set.Metadata.Name)); err != nil {
				return err
			}
			checked = append(checked, p)
		}
	}
	return nil
}

func (s *Server) listAppSets(c *echo.Context) error {
	rows, err := s.appSetRows(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, AppSetList{Items: rows})
}

// appSetRows reads the running sets the caller may get, by name.
func (s *Server) appSetRows(c *echo.Context) ([]AppSetSummary, error) {
	out := []AppSetSummary{}
	if err := s.eachExecution(c.Request().Context(), setsQuery, func(e *workflowpb.WorkflowExecutionInfo) error {
		name, ok := strings.CutPrefix(e.GetExecution().GetWorkflowId(), workflows.AppSetWorkflowID(""))
		sa := e.GetSearchAttributes().GetIndexedFields()
		proj := keyword(sa, workflows.SearchAttrProject, appspec.DefaultProject)
		if !ok || !s.allowed(c, rbac.ResourceApplicationSets, rbac.ActionGet, rbac.AppObject(proj, name)) {
			return nil
		}
		row := AppSetSummary{Name: name, Project: proj, Repos: keywords(sa, workflows.SearchAttrRepo)}
		memo := e.GetMemo().GetFields()
		fromPayload(memo[workflows.MemoAppSetApps], &row.Apps)
		fromPayload(memo[workflows.MemoAppSetGenerated], &row.Generated)
		fromPayload(memo[workflows.MemoAppSetError], &row.Error)
		fromPayload(memo[workflows.MemoAppSetGenerators], &row.Generators)
		out = append(out, row)
		return nil
	}); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b AppSetSummary) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// createAppSet starts a set's workflow; with ?upsert=true an existing set
// takes the new spec, as `argocd appset create --upsert` does.
func (s *Server) createAppSet(c *echo.Context) error {
	set, err := readAppSet(c)
	if err != nil {
		return err
	}
	if err := s.authorizeApps(c, set, rbac.ActionCreate); err != nil {
		return err
	}
	ctx := c.Request().Context()
	id := workflows.AppSetWorkflowID(set.Metadata.Name)
	sa := temporal.NewSearchAttributes(
		temporal.NewSearchAttributeKeyKeyword(workflows.SearchAttrProject).ValueSet(workflows.AppSetProject(set)),
		temporal.NewSearchAttributeKeyKeyword(workflows.SearchAttrName).ValueSet(set.Metadata.Name),
		temporal.NewSearchAttributeKeyKeywordList(workflows.SearchAttrRepo).ValueSet(workflows.AppSetRepos(set)))
	_, err = s.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: id, TaskQueue: s.opts.TaskQueue, TypedSearchAttributes: sa,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
	}, workflows.ApplicationSetWorkflowName, workflows.AppSetInput{Set: set})
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		if c.QueryParam("upsert") != "true" {
			return problem(http.StatusConflict, "applicationset "+set.Metadata.Name+" exists; update it, or create with upsert=true")
		}
		proj, ok, err := s.setProject(ctx, set.Metadata.Name)
		if err != nil {
			return err
		}
		if ok {
			if err := s.authorize(c, rbac.ResourceApplicationSets, rbac.ActionUpdate, rbac.AppObject(proj, set.Metadata.Name)); err != nil {
				return err
			}
		}
		return s.setAppSetSpec(c, set)
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, AppSetDetail{Set: set, Status: workflows.AppSetStatus{Apps: []string{}}, Applications: []AppSetChild{}})
}

func (s *Server) getAppSet(c *echo.Context) error {
	name, err := s.authorizeSet(c, rbac.ActionGet)
	if err != nil {
		return err
	}
	view, err := s.appSetView(c.Request().Context(), name)
	if err != nil {
		return err
	}
	return s.appSetDetail(c, view)
}

// appSetView queries a set's workflow.
func (s *Server) appSetView(ctx context.Context, name string) (workflows.AppSetView, error) {
	var view workflows.AppSetView
	v, err := s.c.QueryWorkflow(ctx, workflows.AppSetWorkflowID(name), "", workflows.QueryStatus)
	if err != nil {
		return view, appSetError(err)
	}
	return view, v.Get(&view)
}

// appSetError maps the errors of a set's workflow.
func appSetError(err error) error {
	var nf *serviceerror.NotFound
	var app *temporal.ApplicationError
	switch {
	case errors.As(err, &nf):
		return problem(http.StatusNotFound, "applicationset not found")
	case errors.As(err, &app) && app.Type() == workflows.ErrTypeInvalidAppSet:
		pr := problem(http.StatusBadRequest, app.Message())
		if app.HasDetails() {
			_ = app.Details(&pr.Field)
		}
		return pr
	}
	return toProblem(err)
}

// appSetDetail answers the view with the set's apps the caller may get.
func (s *Server) appSetDetail(c *echo.Context, view workflows.AppSetView) error {
	out := AppSetDetail{Set: view.Set, Status: view.Status, Applications: []AppSetChild{}, Generators: appset.GeneratorSummaries(view.Set)}
	if out.Status.Apps == nil {
		out.Status.Apps = []string{}
	}
	v, err := visibilityValue("owner", appsets.Owner(view.Set.Metadata.Name))
	if err != nil {
		return err
	}
	q := fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running' AND %s = %s",
		workflows.ApplicationWorkflowName, workflows.SearchAttrParent, v)
	if err := s.eachExecution(c.Request().Context(), q, func(e *workflowpb.WorkflowExecutionInfo) error {
		proj, name, ok := workflows.ParseAppWorkflowID(e.GetExecution().GetWorkflowId())
		if !ok || !s.allowed(c, rbac.ResourceApplications, rbac.ActionGet, rbac.AppObject(proj, name)) {
			return nil
		}
		sa := e.GetSearchAttributes().GetIndexedFields()
		out.Applications = append(out.Applications, AppSetChild{Project: proj, Name: name,
			Sync:   keyword(sa, workflows.SearchAttrSync, string(appspec.SyncUnknown)),
			Health: keyword(sa, workflows.SearchAttrHealth, string(appspec.HealthUnknown))})
		return nil
	}); err != nil {
		return err
	}
	slices.SortFunc(out.Applications, func(a, b AppSetChild) int { return strings.Compare(a.Project+"/"+a.Name, b.Project+"/"+b.Name) })
	if ro := view.Status.Rollout; ro != nil && ro.Started > 0 {
		st, _, err := s.readRollout(c.Request().Context(), view.Set.Metadata.Name)
		var nf *serviceerror.NotFound
		switch {
		case errors.As(err, &nf):
		case err != nil:
			return err
		default:
			out.Rollout = &st
		}
	}
	return c.JSON(http.StatusOK, out)
}

// updateAppSet replaces a set's spec; the name in the body must be the
// path's.
func (s *Server) updateAppSet(c *echo.Context) error {
	name, err := s.authorizeSet(c, rbac.ActionUpdate)
	if err != nil {
		return err
	}
	set, err := readAppSet(c)
	if err != nil {
		return err
	}
	if set.Metadata.Name != name {
		pr := problem(http.StatusBadRequest, fmt.Sprintf("metadata.name %q is not the set's name %q", set.Metadata.Name, name))
		pr.Field = "metadata.name"
		return pr
	}
	if err := s.authorizeApps(c, set, rbac.ActionUpdate); err != nil {
		return err
	}
	return s.setAppSetSpec(c, set)
}

// setAppSetSpec runs setSpec and answers the set's detail.
func (s *Server) setAppSetSpec(c *echo.Context, set appset.ApplicationSet) error {
	ctx := c.Request().Context()
	h, err := s.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: workflows.AppSetWorkflowID(set.Metadata.Name), UpdateName: workflows.UpdateSetSpec,
		Args: []any{set}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	var view workflows.AppSetView
	if err == nil {
		err = h.Get(ctx, &view)
	}
	if err != nil {
		return appSetError(err)
	}
	// The project may have changed: published for RBAC and the list.
	return s.appSetDetail(c, view)
}

// deleteAppSet deletes a set and, as Argo CD's owner references do, its
// apps (each with the cascade the set gave it: preserveResourcesOnDeletion
// keeps their resources); ?cascade=false keeps the apps.
func (s *Server) deleteAppSet(c *echo.Context) error {
	name, err := s.authorizeSet(c, rbac.ActionDelete)
	if err != nil {
		return err
	}
	req := workflows.AppSetDeleteRequest{Initiator: initiator(c)}
	switch c.QueryParam("cascade") {
	case "", "true":
	case "false", "orphan":
		req.KeepApps = true
	default:
		pr := problem(http.StatusBadRequest, "cascade: want true, false or orphan")
		pr.Field = "cascade"
		return pr
	}
	ctx := c.Request().Context()
	h, err := s.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: workflows.AppSetWorkflowID(name), UpdateName: workflows.UpdateDelete,
		Args: []any{req}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	var res workflows.AppSetDeleteResult
	if err == nil {
		err = h.Get(ctx, &res)
	}
	if err != nil {
		return appSetError(err)
	}
	if res.Deleted == nil {
		res.Deleted = []string{}
	}
	return c.JSON(http.StatusOK, res)
}

// refreshAppSet evaluates the set now and answers its detail after.
func (s *Server) refreshAppSet(c *echo.Context) error {
	name, err := s.authorizeSet(c, rbac.ActionGet)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	h, err := s.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: workflows.AppSetWorkflowID(name), UpdateName: workflows.UpdateEvaluate,
		Args:         []any{workflows.RefreshRequest{Reason: "requested by " + initiator(c)}},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	var view workflows.AppSetView
	if err == nil {
		err = h.Get(ctx, &view)
	}
	if err != nil {
		return appSetError(err)
	}
	return s.appSetDetail(c, view)
}

// Event name of a set's stream.
const eventAppSet = "applicationset"

// streamAppSet sends the set's view each time it changes, and "deleted"
// when the set is gone.
func (s *Server) streamAppSet(c *echo.Context) error {
	name, err := s.authorizeSet(c, rbac.ActionGet)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	view, err := s.appSetView(ctx, name)
	if err != nil {
		return err
	}
	out := newSSE(c)
	var last []byte
	for {
		b, err := json.Marshal(view)
		if err != nil {
			return err
		}
		if !bytes.Equal(b, last) {
			if err := out.send(eventAppSet, b); err != nil {
				return nil
			}
			last = b
		} else if err := out.keepAlive(); err != nil {
			return nil
		}
		if !sleep(ctx, streamListPoll) {
			return nil
		}
		// A deleted set's workflow still answers queries: it is gone
		// once it no longer runs.
		if _, running, err := s.setProject(ctx, name); err == nil && !running {
			_ = out.send(eventDeleted, []byte(fmt.Sprintf("%q", name)))
			return nil
		}
		if next, err := s.appSetView(ctx, name); err == nil {
			view = next
		}
	}
}
