package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-cd/windlass/test/bench/harness"
	"github.com/windlass-cd/windlass/workflows"
)

// b1Run is one B1 run's numbers.
type b1Run struct {
	Apps          int     `json:"apps"`
	CreateSeconds float64 `json:"createSeconds"`
	SyncedSeconds float64 `json:"syncedSeconds"`
	AppsPerSecond float64 `json:"appsPerSecond"`
	// CPU-seconds per app over the run, per process; Windlass is server +
	// worker.
	ServerCPUPerApp   float64 `json:"serverCPUSecondsPerApp"`
	WorkerCPUPerApp   float64 `json:"workerCPUSecondsPerApp"`
	WindlassCPUPerApp float64 `json:"windlassCPUSecondsPerApp"`
	TemporalCPUPerApp float64 `json:"temporalCPUSecondsPerApp"`
	WorkerRSSMiB      float64 `json:"workerRSSMiB"`
	TemporalRSSMiB    float64 `json:"temporalRSSMiB"`
	// Per app, counted from the histories of a sample of apps: the app
	// workflow up to its first sync and that sync's workflow.
	Sampled      int             `json:"sampledApps"`
	AppWorkflow  harness.Actions `json:"appWorkflowPerApp"`
	SyncWorkflow harness.Actions `json:"syncWorkflowPerApp"`
	LoadAverage  string          `json:"loadAverage"`
}

// benchFleetSync is B1: n apps created through the API in a burst, timed
// from the first create until the list shows them all Synced and Healthy.
func benchFleetSync(ctx context.Context, e *env, res *results, n, runs int) error {
	repoURL, _, err := e.newRepo(ctx, fmt.Sprintf("b1-%d", n))
	if err != nil {
		return err
	}
	var all []b1Run
	for r := range runs {
		slog.Info("B1", "apps", n, "run", r+1, "of", runs)
		run, err := fleetSyncOnce(ctx, e, repoURL, fmt.Sprintf("b1n%dr%d-", n, r), n)
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			// A fleet that does not converge is a result, not a harness
			// failure: say so and go on with the other benchmarks.
			fmt.Printf("BENCH B1.N%d failed\n", n)
			res.note("B1 N=%d run %d did not converge: %v", n, r+1, err)
			res.addRun(fmt.Sprintf("B1.N%d", n), map[string]any{"failed": err.Error(), "loadAverage": loadAverage()})
			return nil
		}
		res.addRun(fmt.Sprintf("B1.N%d", n), run)
		all = append(all, run)
		fmt.Printf("# B1 N=%d run %d: %.1f s, %.2f apps/s, Windlass %.4f CPU-s/app, Temporal %.4f CPU-s/app, %d steps (%d billable) per first sync, load %s\n",
			n, r+1, run.SyncedSeconds, run.AppsPerSecond, run.WindlassCPUPerApp, run.TemporalCPUPerApp,
			run.AppWorkflow.Steps()+run.SyncWorkflow.Steps(), run.AppWorkflow.Billable()+run.SyncWorkflow.Billable()-1, run.LoadAverage)
	}
	med := func(f func(b1Run) float64) float64 {
		xs := make([]float64, len(all))
		for i, r := range all {
			xs[i] = f(r)
		}
		return median(xs)
	}
	id := fmt.Sprintf("B1.N%d", n)
	res.emit(id+".seconds", med(func(r b1Run) float64 { return r.SyncedSeconds }), "s", runs)
	res.emit(id+".apps_per_s", med(func(r b1Run) float64 { return r.AppsPerSecond }), "apps/s", runs)
	res.emit(id+".windlass_cpu_per_app", med(func(r b1Run) float64 { return r.WindlassCPUPerApp }), "cpu-s/app", runs)
	res.emit(id+".worker_cpu_per_app", med(func(r b1Run) float64 { return r.WorkerCPUPerApp }), "cpu-s/app", runs)
	res.emit(id+".server_cpu_per_app", med(func(r b1Run) float64 { return r.ServerCPUPerApp }), "cpu-s/app", runs)
	res.emit(id+".temporal_cpu_per_app", med(func(r b1Run) float64 { return r.TemporalCPUPerApp }), "cpu-s/app", runs)
	res.emit(id+".actions_per_first_sync", med(func(r b1Run) float64 {
		return float64(r.AppWorkflow.Steps() + r.SyncWorkflow.Steps())
	}), "actions/app", runs)
	// The sync's start is counted in the app workflow's child starts.
	res.emit(id+".billable_actions_per_first_sync", med(func(r b1Run) float64 {
		return float64(r.AppWorkflow.Billable() + r.SyncWorkflow.Billable() - 1)
	}), "actions/app", runs)
	res.emit(id+".history_events_per_first_sync", med(func(r b1Run) float64 {
		return float64(r.AppWorkflow.Events + r.SyncWorkflow.Events)
	}), "events/app", runs)
	res.emit(id+".worker_rss", med(func(r b1Run) float64 { return r.WorkerRSSMiB }), "MiB", runs)
	res.emit(id+".temporal_rss", med(func(r b1Run) float64 { return r.TemporalRSSMiB }), "MiB", runs)
	return nil
}

func fleetSyncOnce(ctx context.Context, e *env, repoURL, prefix string, n int) (b1Run, error) {
	run := b1Run{Apps: n}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s%04d", prefix, i)
	}
	cpu0 := [3]float64{e.server.CPUSeconds(), e.worker.CPUSeconds(), e.temporal.CPUSeconds()}
	start := time.Now()
	if err := e.createAll(ctx, names, repoURL); err != nil {
		return run, err
	}
	run.CreateSeconds = time.Since(start).Seconds()
	interval := time.Duration(min(1000, 100+n)) * time.Millisecond
	err := poll(ctx, 3*time.Minute+time.Duration(n)*time.Second, interval, "every app Synced and Healthy", func() (bool, string, error) {
		c, err := e.countApps(ctx, prefix, "&sync=Synced&health=Healthy")
		if err != nil {
			return false, err.Error(), nil
		}
		return c == n, fmt.Sprintf("%d of %d Synced and Healthy", c, n), nil
	})
	if err != nil {
		e.deleteAll(ctx, names)
		return run, err
	}
	run.SyncedSeconds = time.Since(start).Seconds()
	cpu1 := [3]float64{e.server.CPUSeconds(), e.worker.CPUSeconds(), e.temporal.CPUSeconds()}
	run.LoadAverage = loadAverage()
	run.AppsPerSecond = float64(n) / run.SyncedSeconds
	run.ServerCPUPerApp = (cpu1[0] - cpu0[0]) / float64(n)
	run.WorkerCPUPerApp = (cpu1[1] - cpu0[1]) / float64(n)
	run.WindlassCPUPerApp = run.ServerCPUPerApp + run.WorkerCPUPerApp
	run.TemporalCPUPerApp = (cpu1[2] - cpu0[2]) / float64(n)
	_, run.WorkerRSSMiB = e.worker.RSSMiB()
	_, run.TemporalRSSMiB = e.temporal.RSSMiB()

	// Actions: deterministic per app, so a sample is enough.
	run.Sampled = min(n, 50)
	var app, syn harness.Actions
	for _, name := range names[:run.Sampled] {
		a, err := harness.CountActions(ctx, e.tc, workflows.AppWorkflowID("default", name))
		if err != nil {
			return run, err
		}
		s, err := harness.CountActions(ctx, e.tc, workflows.SyncWorkflowID("default", name, 1))
		if err != nil {
			return run, err
		}
		app, syn = app.Plus(a), syn.Plus(s)
	}
	run.AppWorkflow, run.SyncWorkflow = app.Div(run.Sampled), syn.Div(run.Sampled)
	e.deleteAll(ctx, names)
	return run, nil
}

// createAll creates the apps through the API, 16 requests at a time.
func (e *env) createAll(ctx context.Context, names []string, repoURL string) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	sem := make(chan struct{}, 16)
	for _, name := range names {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if _, err := e.request(ctx, http.MethodPost, "/api/v1/applications", appBody(name, repoURL, false), nil); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}

// deleteAll deletes the apps (their resources in the background), waits
// up to two minutes for them to go, then deletes their namespaces, so that
// the next run starts from an empty fleet.
func (e *env) deleteAll(ctx context.Context, names []string) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for _, name := range names {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if _, err := e.request(ctx, http.MethodDelete, "/api/v1/applications/"+name+"?cascade=background", nil, nil); err != nil {
				slog.Warn("delete app", "app", name, "err", err)
			}
		})
	}
	wg.Wait()
	prefix := names[0][:len(names[0])-4]
	if err := poll(ctx, 2*time.Minute, time.Second, "the apps deleted", func() (bool, string, error) {
		c, err := e.countApps(ctx, prefix, "")
		return err == nil && c == 0, fmt.Sprintf("%d left", c), nil
	}); err != nil {
		slog.Warn("B1 cleanup", "err", err)
	}
	for _, name := range names {
		_ = e.kube.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	}
}
