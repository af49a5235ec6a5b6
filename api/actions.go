package api

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/labstack/echo/v5"
	"go.temporal.io/sdk/client"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/api/rbac"
	"github.com/windlass-cd/windlass/internal/actions"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

// ActionsView is the answer of GET .../resource/actions.
type ActionsView struct {
	Resource appspec.ResourceKey `json:"resource"`
	Actions  []actions.Action    `json:"actions"`
}

// RunActionRequest is the body of POST .../resource/actions.
type RunActionRequest struct {
	Action string            `json:"action"`
	Params map[string]string `json:"params,omitempty"`
}

// RunActionView is the answer of POST .../resource/actions.
type RunActionView struct {
	Resource appspec.ResourceKey `json:"resource"`
	Action   string              `json:"action"`
	workflows.ActionResult
}

// resourceParam reads the resource of ?group=&kind=&namespace=&name=.
func resourceParam(c *echo.Context) (appspec.ResourceKey, error) {
	k := appspec.ResourceKey{Group: c.QueryParam("group"), Kind: c.QueryParam("kind"), Namespace: c.QueryParam("namespace"), Name: c.QueryParam("name")}
	if k.Kind == "" || k.Name == "" {
		pr := problem(http.StatusBadRequest, "name the resource with ?kind= and ?name= (and ?group= and ?namespace= where it has them)")
		pr.Field = "kind"
		return k, pr
	}
	return k, nil
}

// managedResource reads the app's view and answers 404 unless the app
// tracks key.
func (s *Server) managedResource(ctx context.Context, id string, key appspec.ResourceKey) (workflows.AppView, error) {
	view, err := s.status(ctx, id)
	if err != nil {
		return view, err
	}
	s.fullResources(ctx, &view, nil)
	if !slices.ContainsFunc(view.Status.Resources, func(r appspec.ResourceStatus) bool { return r.ResourceKey == key }) {
		return view, problem(http.StatusNotFound, "the application does not manage "+key.Label())
	}
	return view, nil
}

// listActions answers the actions available for one of the app's
// resources, read live (the caller needs get on the app).
func (s *Server) listActions(c *echo.Context) error {
	id, err := s.appID(c, rbac.ActionGet)
	if err != nil {
		return err
	}
	key, err := resourceParam(c)
	if err != nil {
		return err
	}
	if s.opts.Inspector == nil {
		return problem(http.StatusNotImplemented, "this server has no access to the clusters (no Inspector configured)")
	}
	ctx := c.Request().Context()
	view, err := s.managedResource(ctx, id, key)
	if err != nil {
		return err
	}
	if view.Spec.Destination, err = s.resolveDestination(ctx, view.Spec.Destination, http.StatusConflict); err != nil {
		return err
	}
	list, err := s.opts.Inspector.ListActions(ctx, cluster.ActionInput{Target: cluster.TargetFor(view.Spec), Resource: key})
	switch {
	case errors.Is(err, cluster.ErrResourceNotFound):
		return problem(http.StatusNotFound, err.Error())
	case errors.Is(err, actions.ErrInvalid):
		return problem(http.StatusUnprocessableEntity, err.Error())
	case err != nil:
		return problem(http.StatusServiceUnavailable, "cannot read the resource: "+err.Error())
	}
	if list == nil {
		list = []actions.Action{}
	}
	return c.JSON(http.StatusOK, ActionsView{Resource: key, Actions: list})
}

// runAction runs an action on one of the app's resources. The caller
// needs action/<group>/<Kind>/<action> on the app, as in Argo CD.
func (s *Server) runAction(c *echo.Context) error {
	key, err := resourceParam(c)
	if err != nil {
		return err
	}
	var body RunActionRequest
	if err := echo.BindBody(c, &body); err != nil {
		return problem(http.StatusBadRequest, "request body is not a valid action request: "+err.Error())
	}
	if body.Action == "" {
		pr := problem(http.StatusBadRequest, "the body names no action")
		pr.Field = "action"
		return pr
	}
	id, err := s.appID(c, rbac.ActionAction+"/"+key.Group+"/"+key.Kind+"/"+body.Action)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := s.managedResource(ctx, id, key); err != nil {
		return err
	}
	req := workflows.ActionRequest{Resource: key, Action: body.Action, Params: body.Params, Initiator: initiator(c)}
	h, err := s.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateName: workflows.UpdateRunAction, Args: []any{req}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return err
	}
	var res workflows.ActionResult
	if err := h.Get(ctx, &res); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, RunActionView{Resource: key, Action: body.Action, ActionResult: res})
}
