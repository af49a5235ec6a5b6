package api

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/temporal"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/healthlog"
	"github.com/windlass-cd/windlass/workflows"
)

func TestSyncAppQueryNamesFormerProjects(t *testing.T) {
	for _, tc := range []struct {
		moves []workflows.ProjectMove
		want  string
	}{
		{nil, "WorkflowType = 'windlass.SyncWorkflow' AND (WindlassApp = 'b/web')"},
		{[]workflows.ProjectMove{{Project: "a", LastSeq: 2}}, "WorkflowType = 'windlass.SyncWorkflow' AND (WindlassApp = 'b/web' OR WindlassApp = 'a/web')"},
		{[]workflows.ProjectMove{{Project: "b", LastSeq: 2}, {Project: "a", LastSeq: 4}},
			"WorkflowType = 'windlass.SyncWorkflow' AND (WindlassApp = 'b/web' OR WindlassApp = 'a/web')"},
	} {
		if got := syncAppQuery("b", "web", tc.moves); got != tc.want {
			t.Errorf("syncAppQuery(%v) = %s, want %s", tc.moves, got, tc.want)
		}
	}
}

// A move's refusals from the workflow are 409s; a moved app's old name a
// 404 naming its project.
func TestMoveProblems(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		field  string
	}{
		{temporal.NewApplicationError("the application is moving to project b", workflows.ErrTypeMoving), http.StatusConflict, ""},
		{temporal.NewApplicationError("project b already has an application named web", workflows.ErrTypeAppExists), http.StatusConflict, "project"},
		{movedAway(workflows.AppView{Spec: appspec.Application{Name: "web", Project: "a"}, MovedTo: "b"}), http.StatusNotFound, "project"},
	} {
		p := toProblem(tc.err)
		if p.Status != tc.status || p.Field != tc.field {
			t.Errorf("toProblem(%v) = %d on %q, want %d on %q", tc.err, p.Status, p.Field, tc.status, tc.field)
		}
	}
}

// The health history of a moved app holds the transitions recorded under
// its former name too, newest first.
func TestMovedHealthHistory(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: bed.redisAddr})
	t.Cleanup(func() { _ = rdb.Close() })
	store, err := healthlog.New(rdb)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("moved-%d", time.Now().UnixNano()%1e9)
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	for i, rec := range []struct {
		project string
		health  appspec.HealthStatus
	}{{"a", appspec.HealthProgressing}, {"a", appspec.HealthHealthy}, {"b", appspec.HealthDegraded}} {
		if _, err := store.Record(t.Context(), rec.project+"/"+name, rec.health, nil, t0.Add(time.Duration(i)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	s := &Server{opts: Options{HealthHistory: store}}
	view := workflows.AppView{Spec: appspec.Application{Name: name, Project: "b"}, Moves: []workflows.ProjectMove{{Project: "a", LastSeq: 1}}}
	got, err := s.movedHealthHistory(t.Context(), view, 2)
	if err != nil {
		t.Fatal(err)
	}
	var to []appspec.HealthStatus
	for _, tr := range got {
		to = append(to, tr.To)
	}
	if d := cmp.Diff([]appspec.HealthStatus{appspec.HealthDegraded, appspec.HealthHealthy}, to); d != "" {
		t.Fatalf("transitions (-want +got):\n%s", d)
	}
}
