package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/windlass-cd/windlass/api/rbac"
)

// Server-Sent Events: the stream endpoints poll the app workflow (one
// app) or the visibility index (the list) and send what changed.
const (
	streamPoll      = 500 * time.Millisecond
	streamListPoll  = time.Second
	streamKeepAlive = 15 * time.Second
	// Event names.
	eventApplication = "application"
	eventDeleted     = "deleted"
)

// sse writes Server-Sent Events.
type sse struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	last time.Time
}

func newSSE(c *echo.Context) *sse {
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, "text/event-stream")
	h.Set(echo.HeaderCacheControl, "no-cache")
	h.Set("X-Accel-Buffering", "no")
	c.Response().WriteHeader(http.StatusOK)
	s := &sse{w: c.Response(), rc: http.NewResponseController(c.Response())}
	_ = s.rc.Flush()
	return s
}

func (s *sse) send(event string, data []byte) error {
	if _, err := fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", event, data); err != nil {
		return err
	}
	s.last = time.Now()
	return s.rc.Flush()
}

// keepAlive sends a comment when nothing was sent for a while, so that
// proxies keep the connection open.
func (s *sse) keepAlive() error {
	if time.Since(s.last) < streamKeepAlive {
		return nil
	}
	if _, err := fmt.Fprint(s.w, ": keep-alive\n\n"); err != nil {
		return err
	}
	s.last = time.Now()
	return s.rc.Flush()
}

// streamApp sends the app's view (status, operation, recent history)
// each time it changes, and "deleted" when the app is gone.
func (s *Server) streamApp(c *echo.Context) error {
	id, err := s.appID(c, rbac.ActionGet)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	view, err := s.status(ctx, id)
	if err != nil {
		return err
	}
	out := newSSE(c)
	var (
		last []byte
		list resourceList
		hts  healthTimes
	)
	for {
		s.fullResources(ctx, &view, &list)
		s.withHealthTimes(ctx, &view, &hts)
		b, err := json.Marshal(view)
		if err != nil {
			return err
		}
		if !bytes.Equal(b, last) {
			if err := out.send(eventApplication, b); err != nil {
				return nil // the client went away
			}
			last = b
		} else if err := out.keepAlive(); err != nil {
			return nil
		}
		if !sleep(ctx, streamPoll) {
			return nil
		}
		next, err := s.status(ctx, id)
		switch {
		case isNotFound(err):
			_ = out.send(eventDeleted, []byte(fmt.Sprintf("%q", id)))
			return nil
		case err == nil:
			view = next
		}
		// Otherwise keep the last view: a query can fail while the
		// workflow moves to another worker.
	}
}

// streamApps sends the rows of one page of the list (the list's filters,
// limit and cursor, as GET /applications takes them) as they change, and
// "deleted" for apps that left the page. Each poll reads that page only.
func (s *Server) streamApps(c *echo.Context) error {
	q, err := listQuery(c)
	if err != nil {
		return err
	}
	if _, err := listSort(c, []string{sortNewest}); err != nil {
		return err
	}
	limit, token, err := page(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	rows, err := s.listRows(c, q, limit, token)
	if err != nil {
		return err
	}
	out := newSSE(c)
	last := map[string][]byte{}
	for {
		seen := map[string]bool{}
		for _, r := range rows {
			key := r.Project + "/" + r.Name
			seen[key] = true
			b, err := json.Marshal(r)
			if err != nil {
				return err
			}
			if !bytes.Equal(b, last[key]) {
				if err := out.send(eventApplication, b); err != nil {
					return nil
				}
				last[key] = b
			}
		}
		for key := range last {
			if !seen[key] {
				delete(last, key)
				if err := out.send(eventDeleted, []byte(fmt.Sprintf("%q", key))); err != nil {
					return nil
				}
			}
		}
		if err := out.keepAlive(); err != nil || !sleep(ctx, streamListPoll) {
			return nil
		}
		if rows, err = s.listRows(c, q, limit, token); err != nil {
			return nil
		}
	}
}

// listRows reads the page of limit list rows at token (a visibility page
// token, nil for the first page), keeping those the caller may get.
func (s *Server) listRows(c *echo.Context, q string, limit int, token []byte) ([]AppSummary, error) {
	resp, err := s.executionPage(c.Request().Context(), q, limit, token)
	if err != nil {
		return nil, err
	}
	return s.summaries(c, resp.Executions), nil
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
