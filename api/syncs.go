package api

// This file holds the full sync history of an app: the syncs Temporal
// still retains and those only its archive has, in one list, each sync's
// event history, and the lookup that lets a rollback reach any of them.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v5"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/windlass-cd/windlass/api/rbac"
	"github.com/windlass-cd/windlass/workflows"
)

// Where a sync was read from.
const (
	// SourceRetained: Temporal still has the sync (within retention).
	SourceRetained = "retained"
	// SourceArchived: retention deleted the sync; its archive has it.
	SourceArchived = "archived"
)

// maxArchiveLookups bounds the archive lookups of one page, in pages'
// worth: sequence numbers the archive lacks still end a request.
const maxArchiveLookups = 2

// SyncRecord is one sync of the full history.
type SyncRecord struct {
	ID       string    `json:"id"`
	Status   string    `json:"status"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`
	// Source says where the record was read from: retained or archived.
	Source string `json:"source"`
	// RunID is the sync's Temporal run.
	RunID string `json:"runID,omitempty"`
	// TemporalURL is the sync's page in the Temporal UI, for retained
	// syncs only: the Temporal UI cannot show an archived run, whose
	// events EventsURL serves.
	TemporalURL string `json:"temporalURL,omitempty"`
	// EventsURL is the API path of the sync's full event history.
	EventsURL string `json:"eventsURL"`
	// Initiator, Revision, SHA and RevisionMessage (the commit's subject)
	// come from the sync's memo.
	Initiator       string `json:"initiator,omitempty"`
	Revision        string `json:"revision,omitempty"`
	SHA             string `json:"sha,omitempty"`
	RevisionMessage string `json:"revisionMessage,omitempty"`
}

// SyncList is a page of the full sync history, newest first: the retained
// syncs, then the archived ones.
type SyncList struct {
	Items []SyncRecord `json:"items"`
	Next  string       `json:"next,omitempty"`
}

// SyncEvents is a sync's full Temporal event history.
type SyncEvents struct {
	ID     string `json:"id"`
	RunID  string `json:"runID"`
	Source string `json:"source"`
	// Events are Temporal's history events in their JSON form.
	Events []json.RawMessage `json:"events"`
}

// syncCursor is the position in the merged list: a visibility page token
// while retained syncs last, then the next sequence number to look up in
// the archive, counting down.
type syncCursor struct {
	Token    []byte `json:"t,omitempty"`
	Archived bool   `json:"a,omitempty"`
	Next     int    `json:"n,omitempty"`
	// Lowest is the lowest sequence number listed as retained: the archive
	// is read below it, so a sync both retained and archived shows once.
	Lowest int `json:"l,omitempty"`
}

// syncHistory lists every sync of the app: retained ones through
// visibility, then archived ones, beyond the recent syncs the app
// workflow keeps.
func (s *Server) syncHistory(c *echo.Context) error {
	id, proj, name, err := s.app(c, rbac.ActionGet)
	if err != nil {
		return err
	}
	limit, token, err := page(c)
	if err != nil {
		return err
	}
	var cur syncCursor
	if len(token) > 0 && json.Unmarshal(token, &cur) != nil {
		return &Problem{Type: "about:blank", Title: "Bad Request", Status: http.StatusBadRequest, Detail: "cursor is not valid", Field: "cursor"}
	}
	ctx := c.Request().Context()
	moves := s.appMoves(ctx, id)
	out := SyncList{Items: []SyncRecord{}}
	if !cur.Archived {
		q := syncAppQuery(proj, name, moves)
		resp, err := s.executionPage(ctx, q, limit, cur.Token)
		if err != nil {
			return err
		}
		for _, e := range resp.Executions {
			out.Items = append(out.Items, s.syncRecord(c, e, SourceRetained))
			if n, ok := workflows.ParseSyncSeqMoved(e.GetExecution().GetWorkflowId(), proj, name, moves); ok && (cur.Lowest == 0 || n < cur.Lowest) {
				cur.Lowest = n
			}
		}
		cur.Token = resp.NextPageToken
		if len(cur.Token) == 0 {
			cur.Archived = true
			cur.Next = cur.Lowest - 1
			if cur.Lowest == 0 {
				cur.Next = s.latestSyncSeq(ctx, id, proj, name, moves)
			}
		}
	}
	if cur.Archived && len(out.Items) < limit {
		recs, next, err := s.archivedSyncs(c, proj, name, moves, cur.Next, limit-len(out.Items), limit*maxArchiveLookups)
		if err != nil {
			return err
		}
		out.Items = append(out.Items, recs...)
		cur.Next = next
	}
	if !cur.Archived || cur.Next > 0 {
		b, err := json.Marshal(cur)
		if err != nil {
			return err
		}
		out.Next = base64.RawURLEncoding.EncodeToString(b)
	}
	return c.JSON(http.StatusOK, out)
}

// latestSyncSeq is the sequence number of the app's latest sync, from the
// recent syncs its workflow keeps; 0 when it has none.
func (s *Server) latestSyncSeq(ctx context.Context, appID, proj, name string, moves []workflows.ProjectMove) int {
	v, err := s.c.QueryWorkflow(ctx, appID, "", workflows.QueryHistory)
	if err != nil {
		return 0
	}
	var h workflows.HistoryView
	if v.Get(&h) != nil || len(h.Recent) == 0 {
		return 0
	}
	n, _ := workflows.ParseSyncSeqMoved(h.Recent[0].ID, proj, name, moves)
	return n
}

// archivedSyncs looks up syncs from sequence number from down in the
// archive, until it found want of them or made max lookups, and returns
// them with the next number to look up (0 at the end). Without a
// visibility archive there is nothing to find.
func (s *Server) archivedSyncs(c *echo.Context, proj, name string, moves []workflows.ProjectMove, from, want, max int) ([]SyncRecord, int, error) {
	var out []SyncRecord
	n := from
	for ; n > 0 && len(out) < want && max > 0; n, max = n-1, max-1 {
		e, err := s.archivedExecution(c.Request().Context(), workflows.SyncIDOf(proj, name, moves, n))
		switch {
		case errors.Is(err, errNoArchive):
			return out, 0, nil
		case err != nil:
			return nil, 0, err
		case e != nil:
			out = append(out, s.syncRecord(c, e, SourceArchived))
		}
	}
	return out, n, nil
}

// errNoArchive: the namespace has no visibility archive to read.
var errNoArchive = errors.New("no visibility archive")

// archivedExecution is the archived visibility record of the latest run
// of workflow id, or nil when the archive has none.
func (s *Server) archivedExecution(ctx context.Context, id string) (*workflowpb.WorkflowExecutionInfo, error) {
	resp, err := s.c.ListArchivedWorkflow(ctx, &workflowservice.ListArchivedWorkflowExecutionsRequest{
		Namespace: s.opts.Namespace, PageSize: 1, Query: "WorkflowId = '" + id + "'",
	})
	if err != nil {
		// The frontend answers InvalidArgument when neither the cluster nor
		// the namespace archives visibility.
		if _, ok := errors.AsType[*serviceerror.InvalidArgument](err); ok {
			return nil, errNoArchive
		}
		return nil, fmt.Errorf("read archive for %s: %w", id, err)
	}
	if len(resp.GetExecutions()) == 0 {
		return nil, nil
	}
	return resp.GetExecutions()[0], nil
}

// syncRecord turns a visibility record into a list row.
func (s *Server) syncRecord(c *echo.Context, e *workflowpb.WorkflowExecutionInfo, source string) SyncRecord {
	id, run := e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId()
	r := SyncRecord{ID: id, RunID: run, Status: e.GetStatus().String(), Started: e.GetStartTime().AsTime(), Source: source}
	if e.GetCloseTime() != nil {
		r.Finished = e.GetCloseTime().AsTime()
	}
	memo := e.GetMemo().GetFields()
	fromPayload(memo[workflows.MemoInitiator], &r.Initiator)
	fromPayload(memo[workflows.MemoRevision], &r.Revision)
	fromPayload(memo[workflows.MemoSHA], &r.SHA)
	fromPayload(memo[workflows.MemoRevisionMessage], &r.RevisionMessage)
	if base := strings.TrimSuffix(s.opts.TemporalUIURL, "/"); base != "" && source == SourceRetained {
		r.TemporalURL = base + "/namespaces/" + url.PathEscape(s.opts.Namespace) + "/workflows/" +
			url.PathEscape(id) + "/" + url.PathEscape(run) + "/history"
	}
	if i := strings.LastIndexByte(id, '/'); i >= 0 {
		r.EventsURL = "/api/v1/applications/" + url.PathEscape(c.Param("name")) + "/syncs/" + id[i+1:] + "/events"
		if p := c.QueryParam("project"); p != "" {
			r.EventsURL += "?project=" + url.QueryEscape(p)
		}
	}
	return r
}

// syncSeqParam reads the :seq of a sync route as the app's sync ID, in
// the project that ran it.
func syncSeqParam(c *echo.Context, proj, name string, moves []workflows.ProjectMove) (string, error) {
	n, err := strconv.Atoi(c.Param("seq"))
	if err != nil || n < 1 {
		return "", &Problem{Type: "about:blank", Title: "Bad Request", Status: http.StatusBadRequest, Detail: "a sync is named by its sequence number, 1 or more", Field: "seq"}
	}
	return workflows.SyncIDOf(proj, name, moves, n), nil
}

// syncEvents serves a sync's full event history, from Temporal while it
// retains the sync and from the archive after.
func (s *Server) syncEvents(c *echo.Context) error {
	appID, proj, name, err := s.app(c, rbac.ActionGet)
	if err != nil {
		return err
	}
	id, err := syncSeqParam(c, proj, name, s.appMoves(c.Request().Context(), appID))
	if err != nil {
		return err
	}
	run, source, events, err := s.pastSyncEvents(c.Request().Context(), id)
	if err != nil {
		return err
	}
	out := SyncEvents{ID: id, RunID: run, Source: source, Events: make([]json.RawMessage, 0, len(events))}
	for _, ev := range events {
		b, err := protojson.Marshal(ev)
		if err != nil {
			return err
		}
		out.Events = append(out.Events, b)
	}
	return c.JSON(http.StatusOK, out)
}

// pastSyncEvents reads the event history of sync id: the retained run, or
// else the latest archived one. A sync in neither is a NotFound.
func (s *Server) pastSyncEvents(ctx context.Context, id string) (run, source string, events []*historypb.HistoryEvent, err error) {
	source = SourceRetained
	d, err := s.c.DescribeWorkflowExecution(ctx, id, "")
	switch _, notFound := errors.AsType[*serviceerror.NotFound](err); {
	case err == nil:
		run = d.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	case notFound:
		e, aerr := s.archivedExecution(ctx, id)
		if errors.Is(aerr, errNoArchive) || (aerr == nil && e == nil) {
			return "", "", nil, serviceerror.NewNotFound("sync " + id + " is neither retained by Temporal nor in its archive")
		}
		if aerr != nil {
			return "", "", nil, aerr
		}
		run, source = e.GetExecution().GetRunId(), SourceArchived
	default:
		return "", "", nil, err
	}
	it := s.c.GetWorkflowHistory(ctx, id, run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return "", "", nil, fmt.Errorf("read the history of %s: %w", id, err)
		}
		events = append(events, ev)
	}
	return run, source, events, nil
}

// pastSync looks sync id up by its events: the summary its result
// recorded, or, for a sync that ended without one, its input's revision,
// SHA, sources and parameters.
func (s *Server) pastSync(ctx context.Context, id string) (workflows.SyncSummary, error) {
	_, _, events, err := s.pastSyncEvents(ctx, id)
	if err != nil {
		return workflows.SyncSummary{}, err
	}
	var (
		in  workflows.SyncInput
		res workflows.SyncResult
	)
	for _, ev := range events {
		if a := ev.GetWorkflowExecutionStartedEventAttributes(); a != nil {
			firstPayload(a.GetInput(), &in)
		}
		if a := ev.GetWorkflowExecutionCompletedEventAttributes(); a != nil {
			firstPayload(a.GetResult(), &res)
		}
	}
	if res.ID == id && len(res.Sources) > 0 {
		return res.SyncSummary, nil
	}
	if in.ID != id {
		return workflows.SyncSummary{}, serviceerror.NewNotFound("sync " + id + " has no readable input")
	}
	return workflows.SyncSummary{ID: id, Revision: in.Revision, SHA: in.SHA, Sources: in.Sources,
		Prune: in.Operation.Prune, Initiator: in.Initiator, Phase: res.Phase}, nil
}

func firstPayload(p *commonpb.Payloads, v any) {
	if ps := p.GetPayloads(); len(ps) > 0 {
		fromPayload(ps[0], v)
	}
}

// rollbackTarget is the past sync a rollback to syncID carries to the app
// workflow: nil when the app keeps it among its recent syncs (or syncID is
// not one of the app's, which the workflow refuses), else the sync looked
// up in Temporal or its archive. A caller's own Past is never passed on.
func (s *Server) rollbackTarget(ctx context.Context, appID, proj, name, syncID string, moves []workflows.ProjectMove) (*workflows.SyncSummary, error) {
	if _, ok := workflows.ParseSyncSeqMoved(syncID, proj, name, moves); !ok {
		return nil, nil
	}
	if v, err := s.c.QueryWorkflow(ctx, appID, "", workflows.QueryHistory); err == nil {
		var h workflows.HistoryView
		if v.Get(&h) == nil {
			for _, r := range h.Recent {
				if r.ID == syncID {
					return nil, nil
				}
			}
		}
	}
	past, err := s.pastSync(ctx, syncID)
	if _, ok := errors.AsType[*serviceerror.NotFound](err); ok {
		return nil, nil // the workflow refuses it by name
	}
	if err != nil {
		return nil, err
	}
	return &past, nil
}
