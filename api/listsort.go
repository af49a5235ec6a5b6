package api

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v5"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/windlass-cd/windlass/internal/lastknown"
	"github.com/windlass-cd/windlass/workflows"
)

// The list's orders (?sort=). Visibility itself lists the newest first;
// the others are sorted here.
const (
	sortNewest = "-created"
	sortOldest = "created"
	sortName   = "name"
	sortNameZA = "-name"
)

var sortOrders = []string{sortNewest, sortOldest, sortName, sortNameZA}

// maxSortedApps bounds how many matching apps a sorted list reads: the
// visibility store (SQL) cannot order by anything but start time, so
// every match is read and sorted in the API. Beyond it, narrow the list
// with filters or use the default order.
const maxSortedApps = 20000

// sortedCursor marks the cursors of sorted lists: the sort key of the
// last row shown follows it (visibility's own tokens are opaque bytes).
var sortedCursor = []byte("windlass-sort:")

// listSort reads ?sort= (default -created) among allowed.
func listSort(c *echo.Context, allowed []string) (string, error) {
	v := c.QueryParam("sort")
	if v == "" {
		return sortNewest, nil
	}
	if !slices.Contains(allowed, v) {
		return "", &Problem{Type: "about:blank", Title: "Bad Request", Status: http.StatusBadRequest,
			Detail: "sort must be one of " + strings.Join(allowed, ", "), Field: "sort"}
	}
	return v, nil
}

// sortedRow is a matching app and its sort key.
type sortedRow struct {
	key string
	row AppSummary
}

// sortedList serves a page of the apps matching q in an order visibility
// cannot give: it reads every match (up to maxSortedApps), keeps those the
// caller may get, sorts them and returns the limit rows after the
// cursor's key. The cursor is a key, not an offset, so apps created or
// deleted between pages neither repeat nor hide others.
func (s *Server) sortedList(c *echo.Context, q, order string, limit int, token []byte) error {
	after, cursored := bytes.CutPrefix(token, sortedCursor)
	if len(token) > 0 && !cursored {
		return &Problem{Type: "about:blank", Title: "Bad Request", Status: http.StatusBadRequest, Detail: "cursor is not valid for this sort", Field: "cursor"}
	}
	sel, _ := labelSelector(c) // listQuery has checked it
	var rows []sortedRow
	tooMany := problem(http.StatusUnprocessableEntity, "more than 20000 applications match: narrow the list with filters to sort it, or use sort=-created")
	// The answer is as stale as its stalest page.
	var stale *lastknown.Stale
	read := func(ctx context.Context, q string, size int, token []byte) (*workflowservice.ListWorkflowExecutionsResponse, error) {
		resp, st, err := s.appPage(ctx, q, size, token)
		stale = lastknown.Older(stale, st)
		return resp, err
	}
	err := walkExecutions(c.Request().Context(), q, read, func(e *workflowpb.WorkflowExecutionInfo) error {
		r, ok := s.summary(c, e)
		if !ok || (sel != nil && !sel.Matches(labels.Set(r.Labels))) {
			return nil
		}
		if rows = append(rows, sortedRow{key: sortKey(order, r, e.GetStartTime().AsTime()), row: r}); len(rows) > maxSortedApps {
			return tooMany
		}
		return nil
	})
	if err != nil {
		return err
	}
	desc := order == sortNameZA
	slices.SortFunc(rows, func(x, y sortedRow) int {
		if desc {
			return cmp.Compare(y.key, x.key)
		}
		return cmp.Compare(x.key, y.key)
	})
	start := 0
	if cursored {
		start, _ = slices.BinarySearchFunc(rows, string(after), func(r sortedRow, k string) int {
			if desc {
				return cmp.Compare(k, r.key)
			}
			return cmp.Compare(r.key, k)
		})
		if start < len(rows) && rows[start].key == string(after) {
			start++
		}
	}
	end := min(start+limit, len(rows))
	out := AppList{Items: make([]AppSummary, 0, end-start), Stale: stale}
	for _, r := range rows[start:end] {
		out.Items = append(out.Items, r.row)
	}
	if end < len(rows) {
		out.Next = base64.RawURLEncoding.EncodeToString(append(slices.Clip(sortedCursor), rows[end-1].key...))
	}
	markStale(c, stale)
	return c.JSON(http.StatusOK, out)
}

// sortKey orders rows: by name (then project), or by start time (then
// workflow ID) for created.
func sortKey(order string, r AppSummary, started time.Time) string {
	if order == sortOldest {
		id := workflows.AppWorkflowID(r.Project, r.Name)
		return started.UTC().Format("2006-01-02T15:04:05.000000000Z") + "\x00" + id
	}
	return r.Name + "\x00" + r.Project
}
