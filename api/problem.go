package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v5"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"

	"github.com/windlass-cd/windlass/activities/project"
	"github.com/windlass-cd/windlass/api/auth"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/secretstore"
	"github.com/windlass-cd/windlass/internal/settings"
	"github.com/windlass-cd/windlass/workflows"
)

// Problem is an RFC 9457 problem document.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	// Field names the request field that failed validation.
	Field string `json:"field,omitempty"`
}

// Error implements error so that handlers can return a Problem.
func (p *Problem) Error() string { return p.Title + ": " + p.Detail }

// StatusCode implements echo.HTTPStatusCoder.
func (p *Problem) StatusCode() int { return p.Status }

func problem(status int, detail string) *Problem {
	return &Problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: detail}
}

const msgRequestFailed = "request failed"

// detailEngineUnavailable is the detail of a 503 when Temporal, or the
// database under it, does not answer. Workflows keep their state there, so
// queued syncs resume once it is back.
const detailEngineUnavailable = "the workflow engine is unavailable (Temporal or its database does not answer); applications and queued syncs resume when it is back; try again later"

// toProblem maps any error to a problem document.
func toProblem(err error) *Problem {
	var p *Problem
	if errors.As(err, &p) {
		return p
	}
	var fe *appspec.FieldError
	if errors.As(err, &fe) {
		pr := problem(http.StatusBadRequest, fe.Error())
		pr.Field = fe.Field
		return pr
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		switch app.Type() {
		case workflows.ErrTypeInvalidSpec:
			pr := problem(http.StatusBadRequest, app.Message())
			if app.HasDetails() {
				_ = app.Details(&pr.Field)
			}
			return pr
		case workflows.ErrTypeNotPermitted:
			pr := problem(http.StatusForbidden, app.Message())
			if app.HasDetails() {
				_ = app.Details(&pr.Field)
			}
			return pr
		case workflows.ErrTypeOperationInProgress, workflows.ErrTypeSyncWindow, workflows.ErrTypeRollback,
			workflows.ErrTypeNoOperation, workflows.ErrTypeDeleting, workflows.ErrTypeMoving:
			return problem(http.StatusConflict, app.Message())
		case workflows.ErrTypeAppExists:
			pr := problem(http.StatusConflict, app.Message())
			pr.Field = "project"
			return pr
		case workflows.ErrTypeReconcileSkipped:
			pr := problem(http.StatusConflict, app.Message())
			if app.HasDetails() {
				_ = app.Details(&pr.Field)
			}
			return pr
		case workflows.ErrTypeRevisionNotFound:
			return problem(http.StatusUnprocessableEntity, app.Message())
		case workflows.ErrTypeUnavailable:
			return problem(http.StatusServiceUnavailable, app.Message())
		case workflows.ErrTypeUnknownAction, workflows.ErrTypeResourceNotFound:
			return problem(http.StatusNotFound, app.Message())
		case workflows.ErrTypeActionDisabled, workflows.ErrTypeRolloutState:
			return problem(http.StatusConflict, app.Message())
		case workflows.ErrTypeActionFailed:
			return problem(http.StatusUnprocessableEntity, app.Message())
		}
	}
	switch {
	case errors.Is(err, settings.ErrNotFound), errors.Is(err, project.ErrNotFound):
		return problem(http.StatusNotFound, err.Error())
	case errors.Is(err, settings.ErrReadOnly):
		return problem(http.StatusConflict, err.Error())
	case errors.Is(err, settings.ErrInvalid), errors.Is(err, appspec.ErrInvalid):
		return problem(http.StatusBadRequest, err.Error())
	}
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return problem(http.StatusNotFound, "application not found")
	}
	var notReady *serviceerror.WorkflowNotReady
	if errors.As(err, &notReady) {
		return problem(http.StatusServiceUnavailable, "the application's workflow task keeps failing; GET the application for the cause")
	}
	// An HTTPError's message (auth's 503s) already names what failed. Echo's
	// own wrappers say only the status (the request timeout wraps any
	// context.DeadlineExceeded in a 503): their cause says more.
	var he *echo.HTTPError
	if errors.As(err, &he) {
		if cause := he.Unwrap(); cause != nil && he.Message == http.StatusText(he.Code) {
			return toProblem(cause)
		}
		return problem(he.Code, he.Message)
	}
	// The cause is logged, not shown: it holds the server's address.
	switch {
	case errors.Is(err, secretstore.ErrUnreachable):
		return problem(http.StatusServiceUnavailable, secretstore.ErrUnreachable.Error()+"; try again later")
	case errors.Is(err, auth.ErrRedisUnreachable):
		return problem(http.StatusServiceUnavailable, auth.ErrRedisUnreachable.Error()+"; try again later")
	}
	if engineUnavailable(err) {
		// The cause (an address, a timeout) goes to the log.
		return problem(http.StatusServiceUnavailable, detailEngineUnavailable)
	}
	if code := echo.StatusCode(err); code >= 400 && code < 500 {
		return problem(code, err.Error())
	}
	return problem(http.StatusInternalServerError, err.Error())
}

// engineUnavailable tells whether err says that Temporal, or its
// database, did not answer.
func engineUnavailable(err error) bool {
	var unavailable *serviceerror.Unavailable
	var deadline *serviceerror.DeadlineExceeded
	return errors.As(err, &unavailable) || errors.As(err, &deadline) || errors.Is(err, context.DeadlineExceeded)
}

func errorHandler(log *slog.Logger) echo.HTTPErrorHandler {
	return func(c *echo.Context, err error) {
		if r, uerr := echo.UnwrapResponse(c.Response()); uerr == nil && r.Committed {
			return
		}
		p := toProblem(err)
		if p.Status >= 500 {
			log.Error(msgRequestFailed, "method", c.Request().Method, "path", c.Request().URL.Path, "error", err)
		}
		c.Response().Header().Set(echo.HeaderContentType, "application/problem+json")
		_ = c.JSON(p.Status, p)
	}
}
