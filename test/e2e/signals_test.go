package e2e

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/activities/placement"
	"github.com/windlass-cd/windlass/activities/project"
	"github.com/windlass-cd/windlass/activities/reconcile"
	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/activities/source"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

// signalsQueue is the task queue of TestTenThousandRefreshes's stub worker.
const signalsQueue = "e2e-signals"

// 10,000 refresh signals through one app: none is lost across the
// continue-as-new runs, and every run's history stays bounded. The
// activities are stubs on a task queue of their own: this is about the
// workflow and the real Temporal server, not Git or the cluster.
func TestTenThousandRefreshes(t *testing.T) {
	const (
		signals   = 10000
		threshold = 1500
		queue     = signalsQueue
		// passSlack bounds the commands a run records once its history
		// reaches the threshold: those of the rest of the pass it was in
		// and of the next one, which continues as new (a pass records 2
		// to 8: markers, a timer started and cancelled, upserts).
		passSlack = 30
	)
	w := sdkworker.New(bed.temporal, queue, sdkworker.Options{})
	workflows.Register(w)
	w.RegisterActivityWithOptions(func(context.Context, project.GetInput) (appspec.Project, error) {
		return appspec.DefaultProjectSpec(), nil
	}, activity.RegisterOptions{Name: project.GetName})
	w.RegisterActivityWithOptions(func(context.Context, source.ResolveInput) (source.ResolveOutput, error) {
		return source.ResolveOutput{SHA: "1111111111111111111111111111111111111111"}, nil
	}, activity.RegisterOptions{Name: source.ResolveRevisionName})
	w.RegisterActivityWithOptions(func(_ context.Context, in render.RenderInput) (render.ManifestRef, error) {
		return render.ManifestRef{Key: in.Request.Key(), SHA: "1111111111111111111111111111111111111111", Count: 1, Request: in.Request}, nil
	}, activity.RegisterOptions{Name: render.RenderName})
	w.RegisterActivityWithOptions(func(context.Context, cluster.CompareInput) (cluster.CompareOutput, error) {
		return cluster.CompareOutput{Sync: appspec.SyncSynced, Health: appspec.HealthHealthy}, nil
	}, activity.RegisterOptions{Name: cluster.CompareName})
	w.RegisterActivityWithOptions(func(_ context.Context, in reconcile.QuickInput) (reconcile.Pass, error) {
		var p reconcile.Pass
		_ = reconcile.Run(quietSteps{compare: in.Compare}, in.Input, &p)
		return p, nil
	}, activity.RegisterOptions{Name: reconcile.QuickPassName})
	w.RegisterActivityWithOptions(func(context.Context, placement.Input) (placement.Output, error) {
		return placement.Output{}, nil
	}, activity.RegisterOptions{Name: placement.TaskQueueName})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	name := uniq("signals")
	spec := appspec.Application{Name: name, Project: "default", Source: appspec.Source{RepoURL: "http://unused.test/r.git", Path: "."},
		Destination: appspec.Destination{Namespace: "x"}}.Defaulted()
	id := workflows.AppWorkflowID("default", name)
	_, err := bed.temporal.ExecuteWorkflow(t.Context(), client.StartWorkflowOptions{ID: id, TaskQueue: queue},
		workflows.ApplicationWorkflowName, workflows.AppInput{Spec: spec, Config: workflows.AppConfig{RefreshSeconds: 3600, HistoryThreshold: threshold}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = bed.temporal.TerminateWorkflow(context.Background(), id, "", "test done") }()

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < signals; i += 8 {
				if err := bed.temporal.SignalWorkflow(t.Context(), id, "", workflows.SignalRefresh, workflows.RefreshRequest{Reason: fmt.Sprint(i)}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var view workflows.AppView
	eventually(t, 3*time.Minute, "every refresh counted", func() (bool, string) {
		v, err := bed.temporal.QueryWorkflow(t.Context(), id, "", workflows.QueryStatus)
		if err != nil {
			return false, err.Error()
		}
		if err := v.Get(&view); err != nil {
			return false, err.Error()
		}
		return view.Refreshes == signals, fmt.Sprintf("%d refreshes, %d runs", view.Refreshes, view.Runs)
	})
	if view.Runs < 2 {
		t.Fatalf("the app never continued as new (%d run)", view.Runs)
	}
	resp, err := bed.temporal.ListWorkflow(t.Context(), &workflowservice.ListWorkflowExecutionsRequest{Query: fmt.Sprintf("WorkflowId = %q", id)})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range resp.Executions {
		run := e.GetExecution().GetRunId()
		if n, commands, all := commandsPastThreshold(t, id, run, threshold); n > passSlack {
			t.Fatalf("run %s recorded %d commands after its history reached %d events; it should have continued as new within a pass (%d): %v; every event after it: %v", run, n, threshold, passSlack, commands, all)
		}
	}
	t.Logf("%d signals, %d runs, %d executions listed", signals, view.Runs, len(resp.Executions))
}

// commandsPastThreshold counts the events of one run after its history
// reached threshold events that the workflow's commands recorded, them by
// type, and every event after it by type. The rest depend on the machine's speed, not on the
// workflow: the signals that arrive while a pass runs (8 senders can
// deliver more than a threshold's worth during one workflow task on a slow
// machine) and the workflow tasks, which the server fails and schedules
// again as long as signals keep arriving while the one that continues as
// new runs.
func commandsPastThreshold(t *testing.T, id, run string, threshold int) (int, map[string]int, map[string]int) {
	t.Helper()
	it := bed.temporal.GetWorkflowHistory(t.Context(), id, run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	n, commands := 0, 0
	types, all := map[string]int{}, map[string]int{}
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatalf("history of run %s: %v", run, err)
		}
		n++
		if n <= threshold {
			continue
		}
		all[ev.GetEventType().String()]++
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
			enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED, enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
			enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED, enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
		default:
			commands++
			types[ev.GetEventType().String()]++
		}
	}
	return commands, types, all
}

// quietSteps are the steps of a quick pass over an app that never
// changes: the manifests last rendered, and Synced when it may compare.
type quietSteps struct{ compare bool }

func (quietSteps) Project(string) (appspec.Project, error) { return appspec.DefaultProjectSpec(), nil }

func (quietSteps) Resolve(appspec.Source, string, bool) (string, error) {
	return "1111111111111111111111111111111111111111", nil
}

func (quietSteps) Render(render.Request, bool) (render.ManifestRef, error) {
	return render.ManifestRef{}, errors.New("not cached")
}

func (q quietSteps) Compare(cluster.CompareInput) (cluster.CompareOutput, error) {
	if !q.compare {
		return cluster.CompareOutput{}, errors.New("not here")
	}
	return cluster.CompareOutput{Sync: appspec.SyncSynced, Health: appspec.HealthHealthy}, nil
}
