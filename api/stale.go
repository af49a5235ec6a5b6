package api

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/labstack/echo/v5"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/windlass-cd/windlass/internal/lastknown"
	"github.com/windlass-cd/windlass/workflows"
)

// The app list and app get keep their last good answers, per API
// replica, and serve them marked stale while the workflow engine does not
// answer. Sizes bound the memory: app views, and visibility pages of up
// to 1000 rows.
const (
	knownViews = 2048
	knownPages = 128
	// knownTimeout bounds a read during an outage when a last answer is
	// kept, so that it comes within seconds.
	knownTimeout = 5 * time.Second
)

// lastKnown holds the last good app views (by workflow ID) and list pages
// (by query, size and token).
type lastKnown struct {
	views *lastknown.Cache[workflows.AppView]
	pages *lastknown.Cache[*workflowservice.ListWorkflowExecutionsResponse]
}

func newLastKnown() lastKnown {
	o := lastknown.NewOutage(engineUnavailable, knownTimeout)
	return lastKnown{
		views: lastknown.New[workflows.AppView](o, knownViews),
		pages: lastknown.New[*workflowservice.ListWorkflowExecutionsResponse](o, knownPages),
	}
}

// appView is GET /applications/{name}'s answer: the view, and whether it
// is the last known one.
type appView struct {
	workflows.AppView
	Stale *lastknown.Stale `json:"stale,omitempty"`
}

// appPage is executionPage for the app list, through the last known pages.
func (s *Server) appPage(ctx context.Context, query string, size int, token []byte) (*workflowservice.ListWorkflowExecutionsResponse, *lastknown.Stale, error) {
	key := fmt.Sprintf("%d\x00%s\x00%x", size, query, token)
	return s.known.pages.Get(ctx, key, func(ctx context.Context) (*workflowservice.ListWorkflowExecutionsResponse, error) {
		return s.executionPage(ctx, query, size, token)
	})
}

// markStale adds a Warning (RFC 9111 code 110, "Response is Stale") to an
// answer served from the last known ones; the CLI prints it.
func markStale(c *echo.Context, st *lastknown.Stale) {
	if st != nil {
		c.Response().Header().Add("Warning", `110 - `+strconv.Quote(staleText(st)))
	}
}

// staleText says what a stale answer is.
func staleText(st *lastknown.Stale) string {
	return fmt.Sprintf("the workflow engine is unavailable since %s; status as of %s",
		st.UnavailableSince.UTC().Format(time.RFC3339), st.AsOf.UTC().Format(time.RFC3339))
}
