package api

import (
	"context"
	"errors"
	"net/http"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/labstack/echo/v5"

	"github.com/windlass-cd/windlass/api/rbac"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

// RolloutFailed is the phase the API reports for a rollout whose
// workflow failed (invalid input) or was terminated.
const RolloutFailed = "Failed"

// RolloutControlRequest is the optional body of pause, resume and abort.
type RolloutControlRequest struct {
	Reason string `json:"reason,omitempty"`
}

func (s *Server) rolloutRoutes(v1 *echo.Group) {
	v1.GET("/applicationsets/:name/rollout", s.getRollout)
	for _, verb := range []string{workflows.UpdateRolloutPause, workflows.UpdateRolloutResume, workflows.UpdateRolloutAbort} {
		v1.POST("/applicationsets/:name/rollout/"+verb, s.controlRollout(verb))
	}
}

func (s *Server) getRollout(c *echo.Context) error {
	st, _, err := s.rollout(c, rbac.ActionGet)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, st)
}

// controlRollout runs the pause, resume or abort update; one that does
// not apply in the rollout's phase is 409.
func (s *Server) controlRollout(verb string) echo.HandlerFunc {
	return func(c *echo.Context) error {
		var body RolloutControlRequest
		if c.Request().ContentLength != 0 {
			if err := echo.BindBody(c, &body); err != nil {
				return problem(http.StatusBadRequest, "request body is not a valid rollout request: "+err.Error())
			}
		}
		st, running, err := s.rollout(c, rbac.ActionUpdate)
		if err != nil {
			return err
		}
		if !running {
			return problem(http.StatusConflict, "cannot "+verb+" a rollout that is "+st.Phase)
		}
		ctx := c.Request().Context()
		h, err := s.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
			WorkflowID: workflows.RolloutWorkflowID(c.Param("name")), UpdateName: verb,
			Args:         []any{workflows.RolloutControl{Initiator: initiator(c), Reason: body.Reason}},
			WaitForStage: client.WorkflowUpdateStageCompleted,
		})
		if err == nil {
			err = h.Get(ctx, &st)
		}
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, st)
	}
}

// rollout reads the :name set's rollout, from its query while it runs
// and from its result once it has ended, and checks that the caller may
// do action on applicationsets <project>/<set>. When the set has no
// rollout, the caller needs action on */<set> to learn that (404).
func (s *Server) rollout(c *echo.Context, action string) (workflows.RolloutStatus, bool, error) {
	name := c.Param("name")
	ctx := c.Request().Context()
	st, running, err := s.readRollout(ctx, name)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		if err := s.authorize(c, rbac.ResourceApplicationSets, action, rbac.AppObject("*", name)); err != nil {
			return st, false, err
		}
		return st, false, problem(http.StatusNotFound, "application set "+name+" has no rollout")
	}
	if err != nil {
		return st, false, err
	}
	project := st.Project
	if project == "" {
		project = appspec.DefaultProject
	}
	if err := s.authorize(c, rbac.ResourceApplicationSets, action, rbac.AppObject(project, name)); err != nil {
		return st, false, err
	}
	return st, running, nil
}

func (s *Server) readRollout(ctx context.Context, set string) (workflows.RolloutStatus, bool, error) {
	id := workflows.RolloutWorkflowID(set)
	d, err := s.c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return workflows.RolloutStatus{}, false, err
	}
	var st workflows.RolloutStatus
	switch d.GetWorkflowExecutionInfo().GetStatus() {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		v, err := s.c.QueryWorkflow(ctx, id, "", workflows.QueryRollout)
		if err != nil {
			return st, false, err
		}
		return st, true, v.Get(&st)
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		return st, false, s.c.GetWorkflow(ctx, id, "").Get(ctx, &st)
	}
	st = workflows.RolloutStatus{Set: set, Phase: RolloutFailed}
	if err := s.c.GetWorkflow(ctx, id, "").Get(ctx, nil); err != nil {
		st.Message = errorText(err)
	}
	return st, false, nil
}

// errorText is the innermost message of a workflow's failure.
func errorText(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}
