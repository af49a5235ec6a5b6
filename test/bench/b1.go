package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	// MachineCPUPerApp is every process's CPU over the run per app (the
	// test bed's API server, etcd, controllers and kwok, Redis, Git and
	// the harness too): the machine's cores divided by it bound apps/s.
	MachineCPUPerApp float64 `json:"machineCPUSecondsPerApp"`
	// BedCPUPerApp is the CPU-seconds per app of each of the test bed's
	// processes (etcd, kube-apiserver, kube-controller-manager,
	// kube-scheduler, kwok, redis-server) and of the harness with the Git
	// server's CGI programs ("harness"); BedCPUTotal is their sum. The
	// machine's CPU less Windlass, Temporal and these is everything else.
	BedCPUPerApp map[string]float64 `json:"testBedCPUSecondsPerApp"`
	BedCPUTotal  float64            `json:"testBedCPUSecondsPerAppTotal"`
	// APIRequests is what the API server served per app, by verb and
	// resource, from every client (its largest counts), and APIRequestsTotal
	// all of them.
	APIRequests      []apiCount `json:"apiRequestsPerApp,omitempty"`
	APIRequestsTotal float64    `json:"apiRequestsPerAppTotal"`
	WorkerRSSMiB     float64    `json:"workerRSSMiB"`
	TemporalRSSMiB   float64    `json:"temporalRSSMiB"`
	// Per app, counted from the histories of a sample of apps: the app
	// workflow up to its first sync and that sync's workflow.
	Sampled      int             `json:"sampledApps"`
	AppWorkflow  harness.Actions `json:"appWorkflowPerApp"`
	SyncWorkflow harness.Actions `json:"syncWorkflowPerApp"`
	LoadAverage  string          `json:"loadAverage"`
	// WorkerProfile and TemporalProfile are the CPU profiles of the worker
	// and of the Temporal server taken over the same window of the run
	// (-profile).
	WorkerProfile   string `json:"workerProfile,omitempty"`
	TemporalProfile string `json:"temporalProfile,omitempty"`
}

// fleet is a set of synced apps that B1 leaves running for B4.
type fleet struct {
	prefix string
	names  []string
}

// benchFleetSync is B1: n apps created through the API in a burst, timed
// from the first create until the list shows them all Synced and Healthy.
// With keep, the last run's apps are not deleted but returned (for B4),
// when that run converged. With cfg.profile, the first run takes a CPU
// profile of the worker and one of the Temporal server.
func benchFleetSync(ctx context.Context, e *env, res *results, cfg config, n int, keep bool) (*fleet, error) {
	runs := cfg.runs
	repoURL, _, err := e.newRepo(ctx, fmt.Sprintf("b1-%d", n))
	if err != nil {
		return nil, err
	}
	var (
		all  []b1Run
		kept *fleet
	)
	for r := range runs {
		slog.Info("B1", "apps", n, "run", r+1, "of", runs)
		opts := b1Options{keep: keep && r == runs-1, histories: cfg.histories}
		if cfg.profile && r == 0 {
			opts.profileDir = cfg.profileDir
		}
		prefix := fmt.Sprintf("b1n%dr%d-", n, r)
		run, err := fleetSyncOnce(ctx, e, repoURL, prefix, n, opts)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			// A fleet that does not converge is a result, not a harness
			// failure: say so and go on with the other benchmarks.
			fmt.Printf("BENCH B1.N%d failed\n", n)
			res.note("B1 N=%d run %d did not converge: %v", n, r+1, err)
			res.addRun(fmt.Sprintf("B1.N%d", n), map[string]any{"failed": err.Error(), "loadAverage": loadAverage()})
			return nil, nil
		}
		if opts.keep {
			kept = &fleet{prefix: prefix, names: appNames(prefix, n)}
		}
		res.addRun(fmt.Sprintf("B1.N%d", n), run)
		all = append(all, run)
		fmt.Printf("# B1 N=%d run %d: %.1f s, %.2f apps/s, Windlass %.4f CPU-s/app, Temporal %.4f CPU-s/app, whole machine %.4f CPU-s/app, %d steps (%d billable) per first sync, load %s\n",
			n, r+1, run.SyncedSeconds, run.AppsPerSecond, run.WindlassCPUPerApp, run.TemporalCPUPerApp, run.MachineCPUPerApp,
			run.AppWorkflow.Steps()+run.SyncWorkflow.Steps(), run.AppWorkflow.Billable()+run.SyncWorkflow.Billable()-1, run.LoadAverage)
		fmt.Printf("# B1 N=%d run %d: test bed %.4f CPU-s/app (%s), everything else %.4f\n", n, r+1, run.BedCPUTotal,
			bedBreakdown(run.BedCPUPerApp), run.MachineCPUPerApp-run.WindlassCPUPerApp-run.TemporalCPUPerApp-run.BedCPUTotal)
		fmt.Printf("# B1 N=%d run %d: the API server served %.1f requests/app: %s\n", n, r+1, run.APIRequestsTotal, apiBreakdown(run.APIRequests))
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
	res.emit(id+".machine_cpu_per_app", med(func(r b1Run) float64 { return r.MachineCPUPerApp }), "cpu-s/app", runs)
	res.emit(id+".testbed_cpu_per_app", med(func(r b1Run) float64 { return r.BedCPUTotal }), "cpu-s/app", runs)
	if len(all) > 0 {
		for _, name := range slices.Sorted(maps.Keys(all[0].BedCPUPerApp)) {
			res.emit(id+".testbed."+name+"_cpu_per_app", med(func(r b1Run) float64 { return r.BedCPUPerApp[name] }), "cpu-s/app", runs)
		}
	}
	res.emit(id+".api_requests_per_app", med(func(r b1Run) float64 { return r.APIRequestsTotal }), "requests/app", runs)
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
	return kept, nil
}

// appNames are prefix0000, prefix0001 … for n apps.
func appNames(prefix string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s%04d", prefix, i)
	}
	return names
}

// b1Options: keep the apps after the run; profileDir, when set, takes a
// CPU profile of the worker during the run into it.
type b1Options struct {
	keep       bool
	profileDir string
	histories  string
}

func fleetSyncOnce(ctx context.Context, e *env, repoURL, prefix string, n int, opts b1Options) (b1Run, error) {
	e.awaitTeardown(ctx)
	run := b1Run{Apps: n}
	names := appNames(prefix, n)
	var profiles [2]chan string
	if opts.profileDir != "" {
		for i, p := range []profiled{e.workerProc(), e.temporalProc()} {
			profiles[i] = make(chan string, 1)
			go func() {
				path, err := e.profile(ctx, p, opts.profileDir, fmt.Sprintf("B1-N%d", n), profileDuration)
				if err != nil {
					slog.Warn("B1 profile", "process", p.name, "err", err)
				}
				profiles[i] <- path
			}()
		}
	}
	req0, err := e.apiServerRequests(ctx)
	if err != nil {
		return run, err
	}
	cpu0, bed0, machine0 := e.cpuSeconds(), e.bedCPUSeconds(), harness.MachineCPUSeconds()
	start := time.Now()
	if err := e.createAll(ctx, names, 16, func(name string) map[string]any { return appBody(name, repoURL, false) }); err != nil {
		return run, err
	}
	run.CreateSeconds = time.Since(start).Seconds()
	err = e.waitFleet(ctx, prefix, n)
	if profiles[0] != nil {
		run.WorkerProfile, run.TemporalProfile = <-profiles[0], <-profiles[1]
	}
	if err != nil {
		e.deleteAll(ctx, names)
		return run, err
	}
	run.SyncedSeconds = time.Since(start).Seconds()
	cpu1, bed1, machine1 := e.cpuSeconds(), e.bedCPUSeconds(), harness.MachineCPUSeconds()
	run.LoadAverage = loadAverage()
	run.MachineCPUPerApp = (machine1 - machine0) / float64(n)
	run.AppsPerSecond = float64(n) / run.SyncedSeconds
	run.ServerCPUPerApp = (cpu1[0] - cpu0[0]) / float64(n)
	run.WorkerCPUPerApp = (cpu1[1] - cpu0[1]) / float64(n)
	run.WindlassCPUPerApp = run.ServerCPUPerApp + run.WorkerCPUPerApp
	run.TemporalCPUPerApp = (cpu1[2] - cpu0[2]) / float64(n)
	req1, err := e.apiServerRequests(ctx)
	if err != nil {
		return run, err
	}
	run.APIRequests, run.APIRequestsTotal = req1.perApp(req0, n, 20)
	run.BedCPUPerApp = map[string]float64{}
	for name, v := range bed1 {
		run.BedCPUPerApp[name] = (v - bed0[name]) / float64(n)
		run.BedCPUTotal += run.BedCPUPerApp[name]
	}
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
	if opts.histories != "" {
		if err := writeSampleHistories(ctx, e, opts.histories, names[0]); err != nil {
			return run, err
		}
	}
	if !opts.keep {
		e.deleteAll(ctx, names)
	}
	return run, nil
}

// waitFleet waits until the list shows all n apps named prefix… Synced
// and Healthy.
func (e *env) waitFleet(ctx context.Context, prefix string, n int) error {
	interval := time.Duration(min(1000, 100+n)) * time.Millisecond
	return poll(ctx, 3*time.Minute+time.Duration(n)*time.Second, interval, "every app Synced and Healthy", func() (bool, string, error) {
		c, err := e.countApps(ctx, prefix, "&sync=Synced&health=Healthy")
		if err != nil {
			return false, err.Error(), nil
		}
		return c == n, fmt.Sprintf("%d of %d Synced and Healthy", c, n), nil
	})
}

// createAll creates the apps through the API, inFlight requests at a
// time; body is each app's spec. Large sets log their progress.
func (e *env) createAll(ctx context.Context, names []string, inFlight int, body func(name string) map[string]any) error {
	return e.forAll(ctx, names, inFlight, "created", func(name string) error {
		_, err := e.request(ctx, http.MethodPost, "/api/v1/applications", body(name), nil)
		return err
	})
}

// forAll calls do for every name, inFlight at a time, logs the progress
// of large sets (done names what was done), and returns the first error;
// after an error it starts no more calls.
func (e *env) forAll(ctx context.Context, names []string, inFlight int, done string, do func(name string) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		count int
	)
	start := time.Now()
	sem := make(chan struct{}, inFlight)
	for _, name := range names {
		sem <- struct{}{}
		mu.Lock()
		failed := first != nil
		mu.Unlock()
		if failed || ctx.Err() != nil {
			<-sem
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			err := do(name)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				first = cmp.Or(first, err)
				return
			}
			if count++; len(names) >= 2000 && count%1000 == 0 {
				slog.Info("apps "+done, "count", count, "of", len(names), "seconds", int(time.Since(start).Seconds()))
			}
		})
	}
	wg.Wait()
	return cmp.Or(first, ctx.Err())
}

// deleteAll deletes the apps (their resources in the background), waits
// up to two minutes for them to go, then deletes their namespaces, so that
// the next run starts from an empty fleet.
func (e *env) deleteAll(ctx context.Context, names []string) {
	_ = e.forAll(ctx, names, 16, "deleted", func(name string) error {
		if _, err := e.request(ctx, http.MethodDelete, "/api/v1/applications/"+name+"?cascade=background", nil, nil); err != nil {
			slog.Warn("delete app", "app", name, "err", err)
		}
		return nil
	})
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
	// The controllers delete the namespaces' contents (the ReplicaSets
	// and Pods they made) in the background: the next B1 run waits for
	// that first (awaitTeardown), so that it does not pay for this one's.
	e.tearingDown = append(e.tearingDown, names...)
}

// awaitTeardown waits until the namespaces that deleteAll deleted are
// gone.
func (e *env) awaitTeardown(ctx context.Context) {
	if len(e.tearingDown) == 0 {
		return
	}
	if err := poll(ctx, 5*time.Minute, time.Second, "the deleted apps' namespaces gone", func() (bool, string, error) {
		list, err := e.kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		left := 0
		for _, ns := range list.Items {
			if slices.Contains(e.tearingDown, ns.Name) {
				left++
			}
		}
		return left == 0, fmt.Sprintf("%d left", left), nil
	}); err != nil {
		slog.Warn("B1 teardown", "err", err)
	}
	e.tearingDown = nil
}

// writeSampleHistories writes the histories of app name's workflow and of
// its latest sync (the first, for a B1 app) into dir, as
// <name>-app.json and <name>-sync.json.
func writeSampleHistories(ctx context.Context, e *env, dir, name string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	view, err := e.appView(ctx, name)
	if err != nil {
		return err
	}
	ids := map[string]string{"app.json": workflows.AppWorkflowID("default", name)}
	if len(view.History) > 0 {
		ids["sync.json"] = view.History[0].ID
	}
	for file, id := range ids {
		if err := harness.WriteHistory(ctx, e.tc, id, filepath.Join(dir, name+"-"+file)); err != nil {
			return err
		}
	}
	return nil
}

// bedBreakdown prints per-process CPU-seconds per app, largest first.
func bedBreakdown(m map[string]float64) string {
	names := slices.SortedFunc(maps.Keys(m), func(a, b string) int { return cmp.Compare(m[b], m[a]) })
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = fmt.Sprintf("%s %.4f", name, m[name])
	}
	return strings.Join(parts, ", ")
}

// apiBreakdown prints request counts per app.
func apiBreakdown(top []apiCount) string {
	parts := make([]string, len(top))
	for i, c := range top {
		parts[i] = fmt.Sprintf("%s %.2f", c.Request, c.PerApp)
	}
	return strings.Join(parts, ", ")
}
