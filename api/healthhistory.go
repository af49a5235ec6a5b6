package api

import (
	"context"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v5"

	"github.com/windlass-cd/windlass/api/rbac"
	"github.com/windlass-cd/windlass/internal/healthlog"
	"github.com/windlass-cd/windlass/workflows"
)

// HealthHistory reads the health transitions that the workers' compares
// record (healthlog.Store).
type HealthHistory interface {
	History(ctx context.Context, app string, limit int) ([]healthlog.Transition, error)
	Current(ctx context.Context, app string) (map[string]healthlog.State, error)
}

var _ HealthHistory = (*healthlog.Store)(nil)

const msgHealthTimesUnread = "health transition times unreadable; serving the status without them"

// healthHistoryView is the answer of GET .../health-history.
type healthHistoryView struct {
	// Transitions are the app's and its resources' health changes,
	// newest first.
	Transitions []healthlog.Transition `json:"transitions"`
}

// appHealthHistory answers GET .../health-history[?limit=N]: the app's
// recorded health transitions, newest first.
func (s *Server) appHealthHistory(c *echo.Context) error {
	id, err := s.appID(c, rbac.ActionGet)
	if err != nil {
		return err
	}
	limit := 0
	if v := c.QueryParam("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 {
			return problem(http.StatusBadRequest, "limit must be a positive integer, not "+strconv.Quote(v))
		}
	}
	if s.opts.HealthHistory == nil {
		return problem(http.StatusNotImplemented, "this server keeps no health history (no Redis configured)")
	}
	// The log outlives a deleted app: ask the app, so that one that does
	// not exist is a 404.
	view, err := s.status(c.Request().Context(), id)
	if err != nil {
		return err
	}
	ts, err := s.movedHealthHistory(c.Request().Context(), view, limit)
	if err != nil {
		return problem(http.StatusServiceUnavailable, "reading the health history: "+err.Error())
	}
	if ts == nil {
		ts = []healthlog.Transition{}
	}
	return c.JSON(http.StatusOK, healthHistoryView{Transitions: ts})
}

// healthTimes is the state last read for a stream, which it reads again
// only when the app has been compared since.
type healthTimes struct {
	at    string
	state map[string]healthlog.State
}

// withHealthTimes sets the lastTransitionTime of the app's health and of
// each resource's, where the recorded health is the one the view shows (a
// running sync may show a newer one). A store that fails leaves them out.
// last, when not nil, holds the state read before, and is updated.
func (s *Server) withHealthTimes(ctx context.Context, view *workflows.AppView, last *healthTimes) {
	if s.opts.HealthHistory == nil {
		return
	}
	st := &view.Status
	app := view.Spec.Project + "/" + view.Spec.Name
	at := st.ReconciledAt.String()
	var state map[string]healthlog.State
	if last != nil && last.state != nil && last.at == at {
		state = last.state
	} else {
		var err error
		if state, err = s.opts.HealthHistory.Current(ctx, app); err != nil {
			s.opts.Logger.Warn(msgHealthTimesUnread, "app", app, "error", err)
			return
		}
		if last != nil {
			*last = healthTimes{at: at, state: state}
		}
	}
	if h, ok := state[healthlog.AppField]; ok && h.Health == st.Health {
		t := h.LastTransitionTime
		st.HealthLastTransitionTime = &t
	}
	for i := range st.Resources {
		r := &st.Resources[i]
		if h, ok := state[r.ResourceKey.String()]; ok && h.Health == r.Health {
			t := h.LastTransitionTime
			r.HealthLastTransitionTime = &t
		}
	}
}
