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
	// TemporalCPUPerProcess is each Temporal process's share of
	// TemporalCPUPerApp; PostgresCPUPerApp is PostgreSQL's (its
	// postmaster's process tree), 0 on SQLite.
	TemporalCPUPerProcess []float64 `json:"temporalCPUSecondsPerAppPerProcess"`
	PostgresCPUPerApp     float64   `json:"postgresCPUSecondsPerApp"`
	// TemporalDBMiB is the size of Temporal's store after the run, and
	// TemporalDBMiBPer1000 its growth over the run per 1000 apps.
	TemporalDBMiB        float64 `json:"temporalDatabaseMiB"`
	TemporalDBMiBPer1000 float64 `json:"temporalDatabaseMiBPer1000Apps"`
	// SetWorkflow is the set workflow's history (B1-set).
	SetWorkflow *harness.Actions `json:"setWorkflow,omitempty"`
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

// fleet is a set of synced apps that B1 leaves running for B4; set names
// the ApplicationSet that made them (B1-set).
type fleet struct {
	prefix string
	names  []string
	set    string
}

// benchFleetSync is B1 of workload w: n apps created in a burst, timed
// from the first create until the list shows them all Synced and Healthy.
// With keep, the last run's apps are not deleted but returned (for B4),
// when that run converged. With cfg.profile, the first run takes a CPU
// profile of the worker and one of the Temporal server.
func benchFleetSync(ctx context.Context, e *env, res *results, cfg config, w workload, n int, keep bool) (*fleet, error) {
	runs := cfg.runs
	repoURL, err := w.repo(ctx, e, n)
	if err != nil {
		return nil, err
	}
	id := fmt.Sprintf("%s.N%d", w, n)
	var (
		all  []b1Run
		kept *fleet
	)
	for r := range runs {
		slog.Info(w.String(), "apps", n, "run", r+1, "of", runs)
		opts := b1Options{keep: keep && r == runs-1, histories: cfg.histories}
		if cfg.profile && r == 0 {
			opts.profileDir = cfg.profileDir
		}
		f := w.newFleet(n, r)
		run, err := fleetSyncOnce(ctx, e, w, repoURL, f, opts)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			// A fleet that does not converge is a result, not a harness
			// failure: say so and go on with the other benchmarks.
			fmt.Printf("BENCH %s failed\n", res.label(id))
			res.note("%s N=%d run %d did not converge: %v", w, n, r+1, err)
			res.addRun(id, map[string]any{"failed": err.Error(), "loadAverage": loadAverage()})
			return nil, nil
		}
		if opts.keep {
			kept = f
		}
		res.addRun(id, run)
		all = append(all, run)
		printFleetRun(fmt.Sprintf("%s N=%d run %d", res.label(w.String()), n, r+1), run)
	}
	emitFleet(res, id, all)
	return kept, nil
}

// printFleetRun prints one fleet run's breakdown as # lines.
func printFleetRun(what string, run b1Run) {
	fmt.Printf("# %s: %.1f s, %.2f apps/s, Windlass %.4f CPU-s/app, Temporal %.4f CPU-s/app, whole machine %.4f CPU-s/app, %d steps (%d billable) per first sync, load %s\n",
		what, run.SyncedSeconds, run.AppsPerSecond, run.WindlassCPUPerApp, run.TemporalCPUPerApp, run.MachineCPUPerApp,
		run.AppWorkflow.Steps()+run.SyncWorkflow.Steps(), run.AppWorkflow.Billable()+run.SyncWorkflow.Billable()-1, run.LoadAverage)
	fmt.Printf("# %s: test bed %.4f CPU-s/app (%s), PostgreSQL %.4f, everything else %.4f\n", what, run.BedCPUTotal,
		bedBreakdown(run.BedCPUPerApp), run.PostgresCPUPerApp,
		run.MachineCPUPerApp-run.WindlassCPUPerApp-run.TemporalCPUPerApp-run.BedCPUTotal-run.PostgresCPUPerApp)
	fmt.Printf("# %s: Temporal CPU-s/app per process %s; its store %.1f MiB, %.1f MiB per 1000 apps of this run\n",
		what, floats(run.TemporalCPUPerProcess), run.TemporalDBMiB, run.TemporalDBMiBPer1000)
	fmt.Printf("# %s: the API server served %.1f requests/app: %s\n", what, run.APIRequestsTotal, apiBreakdown(run.APIRequests))
	if run.SetWorkflow != nil {
		fmt.Printf("# %s: the set workflow wrote %d history events (%d workflow tasks, %d activities)\n",
			what, run.SetWorkflow.Events, run.SetWorkflow.WorkflowTasks, run.SetWorkflow.Activities+run.SetWorkflow.LocalActs)
	}
}

// floats prints xs with 4 decimals.
func floats(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.4f", x)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// emitFleet emits the medians of the runs of a fleet benchmark under id.
func emitFleet(res *results, id string, all []b1Run) {
	runs := len(all)
	med := func(f func(b1Run) float64) float64 {
		xs := make([]float64, len(all))
		for i, r := range all {
			xs[i] = f(r)
		}
		return median(xs)
	}
	res.emit(id+".seconds", med(func(r b1Run) float64 { return r.SyncedSeconds }), "s", runs)
	res.emit(id+".apps_per_s", med(func(r b1Run) float64 { return r.AppsPerSecond }), "apps/s", runs)
	res.emit(id+".windlass_cpu_per_app", med(func(r b1Run) float64 { return r.WindlassCPUPerApp }), "cpu-s/app", runs)
	res.emit(id+".worker_cpu_per_app", med(func(r b1Run) float64 { return r.WorkerCPUPerApp }), "cpu-s/app", runs)
	res.emit(id+".server_cpu_per_app", med(func(r b1Run) float64 { return r.ServerCPUPerApp }), "cpu-s/app", runs)
	res.emit(id+".temporal_cpu_per_app", med(func(r b1Run) float64 { return r.TemporalCPUPerApp }), "cpu-s/app", runs)
	if len(all) > 0 && len(all[0].TemporalCPUPerProcess) > 1 {
		for i := range all[0].TemporalCPUPerProcess {
			res.emit(fmt.Sprintf("%s.temporal_%d_cpu_per_app", id, i+1), med(func(r b1Run) float64 { return r.TemporalCPUPerProcess[i] }), "cpu-s/app", runs)
		}
	}
	if len(all) > 0 && all[0].PostgresCPUPerApp > 0 {
		res.emit(id+".postgres_cpu_per_app", med(func(r b1Run) float64 { return r.PostgresCPUPerApp }), "cpu-s/app", runs)
	}
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
	if len(all) > 0 && all[0].SetWorkflow != nil {
		res.emit(id+".set_history_events", med(func(r b1Run) float64 { return float64(r.SetWorkflow.Events) }), "events", runs)
	}
	res.emit(id+".worker_rss", med(func(r b1Run) float64 { return r.WorkerRSSMiB }), "MiB", runs)
	res.emit(id+".temporal_rss", med(func(r b1Run) float64 { return r.TemporalRSSMiB }), "MiB", runs)
	res.emit(id+".temporal_db", med(func(r b1Run) float64 { return r.TemporalDBMiB }), "MiB", runs)
	res.emit(id+".temporal_db_per_1000_apps", med(func(r b1Run) float64 { return r.TemporalDBMiBPer1000 }), "MiB", runs)
}

// compareFleets prints the fleet benchmarks of size n side by side, from
// the figures emitted so far under the running variant.
func compareFleets(res *results, n int) {
	value := func(name string) (float64, bool) {
		for _, f := range slices.Backward(res.Figures) {
			if f.Name == res.label(name) {
				return f.Value, true
			}
		}
		return 0, false
	}
	for _, w := range []workload{dirPerApp, sharedDir, appSet} {
		id := fmt.Sprintf("%s.N%d", w, n)
		secs, ok := value(id + ".seconds")
		if !ok {
			continue
		}
		worker, _ := value(id + ".worker_cpu_per_app")
		temporal, _ := value(id + ".temporal_cpu_per_app")
		events, _ := value(id + ".history_events_per_first_sync")
		line := fmt.Sprintf("# compare N=%d: %-9s %7.1f s, worker %.4f, Temporal %.4f CPU-s/app, %3.0f events per first sync",
			n, w, secs, worker, temporal, events)
		if set, ok := value(id + ".set_history_events"); ok {
			line += fmt.Sprintf(", set workflow %.0f events", set)
		}
		fmt.Println(line)
	}
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

func fleetSyncOnce(ctx context.Context, e *env, w workload, repoURL string, f *fleet, opts b1Options) (b1Run, error) {
	e.awaitTeardown(ctx)
	n := len(f.names)
	run := b1Run{Apps: n}
	var profiles [2]chan string
	if opts.profileDir != "" {
		for i, p := range []profiled{e.workerProc(), e.temporalProc()} {
			profiles[i] = make(chan string, 1)
			go func() {
				path, err := e.profile(ctx, p, opts.profileDir, fmt.Sprintf("%s-N%d", w, n), profileDuration)
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
	db0, err := e.temporalDBBytes(ctx)
	if err != nil {
		return run, err
	}
	snap0 := e.snapshot()
	start := time.Now()
	if err := w.create(ctx, e, repoURL, f); err != nil {
		e.dropFleet(ctx, f, opts)
		return run, err
	}
	run.CreateSeconds = time.Since(start).Seconds()
	err = e.waitFleet(ctx, f.prefix, n)
	if profiles[0] != nil {
		run.WorkerProfile, run.TemporalProfile = <-profiles[0], <-profiles[1]
	}
	if err != nil {
		e.dropFleet(ctx, f, opts)
		return run, err
	}
	run.SyncedSeconds = time.Since(start).Seconds()
	e.snapshot().perApp(snap0, n, &run)
	run.LoadAverage = loadAverage()
	run.AppsPerSecond = float64(n) / run.SyncedSeconds
	req1, err := e.apiServerRequests(ctx)
	if err != nil {
		return run, err
	}
	run.APIRequests, run.APIRequestsTotal = req1.perApp(req0, n, 20)
	_, run.WorkerRSSMiB = e.worker.RSSMiB()
	_, run.TemporalRSSMiB = e.temporal.RSSMiB()
	db1, err := e.temporalDBBytes(ctx)
	if err != nil {
		return run, err
	}
	run.TemporalDBMiB, run.TemporalDBMiBPer1000 = mib(db1), mib(db1-db0)/float64(n)*1000

	// Actions: deterministic per app, so a sample is enough.
	run.Sampled = min(n, 50)
	var app, syn harness.Actions
	for _, name := range f.names[:run.Sampled] {
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
	if f.set != "" {
		set, err := harness.CountActions(ctx, e.tc, workflows.AppSetWorkflowID(f.set))
		if err != nil {
			return run, err
		}
		run.SetWorkflow = &set
	}
	if opts.histories != "" {
		if err := writeSampleHistories(ctx, e, opts.histories, f.names[0]); err != nil {
			return run, err
		}
		if f.set != "" {
			path := filepath.Join(opts.histories, f.set+"-set.json")
			if err := harness.WriteHistory(ctx, e.tc, workflows.AppSetWorkflowID(f.set), path); err != nil {
				return run, err
			}
		}
	}
	if !opts.keep {
		e.deleteFleet(ctx, f)
	}
	return run, nil
}

// cpuSnapshot is the CPU time so far of every process a fleet run
// reports, read at once.
type cpuSnapshot struct {
	windlass [3]float64 // server, worker, Temporal
	temporal []float64  // each Temporal process
	postgres float64
	bed      map[string]float64
	machine  float64
}

func (e *env) snapshot() cpuSnapshot {
	return cpuSnapshot{windlass: e.cpuSeconds(), temporal: e.temporalCPUSeconds(), postgres: e.postgresCPUSeconds(),
		bed: e.bedCPUSeconds(), machine: harness.MachineCPUSeconds()}
}

// perApp fills run's CPU-seconds per app from s0 to s over n apps.
func (s cpuSnapshot) perApp(s0 cpuSnapshot, n int, run *b1Run) {
	per := func(a, b float64) float64 { return (b - a) / float64(n) }
	run.MachineCPUPerApp = per(s0.machine, s.machine)
	run.ServerCPUPerApp = per(s0.windlass[0], s.windlass[0])
	run.WorkerCPUPerApp = per(s0.windlass[1], s.windlass[1])
	run.WindlassCPUPerApp = run.ServerCPUPerApp + run.WorkerCPUPerApp
	run.TemporalCPUPerApp = per(s0.windlass[2], s.windlass[2])
	run.TemporalCPUPerProcess = make([]float64, len(s.temporal))
	for i := range s.temporal {
		run.TemporalCPUPerProcess[i] = per(s0.temporal[i], s.temporal[i])
	}
	run.PostgresCPUPerApp = per(s0.postgres, s.postgres)
	run.BedCPUPerApp, run.BedCPUTotal = map[string]float64{}, 0
	for name, v := range s.bed {
		run.BedCPUPerApp[name] = per(s0.bed[name], v)
		run.BedCPUTotal += run.BedCPUPerApp[name]
	}
}

// cpuSince is the CPU-seconds each process spent from s0 to s, by name
// (server, worker, temporal, postgres, the test bed's, machine).
func (s cpuSnapshot) cpuSince(s0 cpuSnapshot) map[string]float64 {
	out := map[string]float64{"server": s.windlass[0] - s0.windlass[0], "worker": s.windlass[1] - s0.windlass[1],
		"temporal": s.windlass[2] - s0.windlass[2], "postgres": s.postgres - s0.postgres, "machine": s.machine - s0.machine}
	for name, v := range s.bed {
		out[name] = v - s0.bed[name]
	}
	return out
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
// time; body is each app's spec (JSON, or an Argo CD manifest as a
// string). Large sets log their progress.
func (e *env) createAll(ctx context.Context, names []string, inFlight int, body func(name string) any) error {
	return e.forAll(ctx, names, inFlight, "created", func(name string) error {
		var err error
		for attempt := 1; attempt <= createAttempts; attempt++ {
			var code int
			if code, err = e.request(ctx, http.MethodPost, "/api/v1/applications", body(name), nil); code < 500 {
				return err
			}
			// A create is an Update-With-Start: asking again is safe, as
			// a client would after a timeout.
			slog.Warn("create failed; asking again", "app", name, "attempt", attempt, "err", err)
		}
		return err
	})
}

// createAttempts is how often a create that the server failed (5xx) is
// made before the run stops.
const createAttempts = 3

// dropFleet deletes a failed run's apps, unless the run keeps them (B8):
// its test bed goes with the processes, and deleting thousands of apps
// from a saturated machine takes longer than the run did.
func (e *env) dropFleet(ctx context.Context, f *fleet, opts b1Options) {
	if opts.keep {
		slog.Info("the run failed; its apps stay until the processes stop", "apps", len(f.names))
		return
	}
	e.deleteFleet(ctx, f)
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

// deleteAll deletes the apps (their resources in the background), then
// clears up after them (clearFleet).
func (e *env) deleteAll(ctx context.Context, names []string) {
	_ = e.forAll(ctx, names, 16, "deleted", func(name string) error {
		if _, err := e.request(ctx, http.MethodDelete, "/api/v1/applications/"+name+"?cascade=background", nil, nil); err != nil {
			slog.Warn("delete app", "app", name, "err", err)
		}
		return nil
	})
	e.clearFleet(ctx, names[0][:len(names[0])-4], names)
}

// deleteFleet deletes f: its set, which deletes its apps, or its apps.
func (e *env) deleteFleet(ctx context.Context, f *fleet) {
	if f.set == "" {
		e.deleteAll(ctx, f.names)
		return
	}
	if _, err := e.request(ctx, http.MethodDelete, "/api/v1/applicationsets/"+f.set, nil, nil); err != nil {
		slog.Warn("delete set", "set", f.set, "err", err)
	}
	e.clearFleet(ctx, f.prefix, f.names)
}

// clearFleet waits up to two minutes for the apps named prefix… to go,
// then deletes their namespaces, so that the next run starts from an
// empty fleet.
func (e *env) clearFleet(ctx context.Context, prefix string, names []string) {
	if err := poll(ctx, 2*time.Minute+time.Duration(len(names))*20*time.Millisecond, time.Second, "the apps deleted", func() (bool, string, error) {
		c, err := e.countApps(ctx, prefix, "")
		return err == nil && c == 0, fmt.Sprintf("%d left", c), nil
	}); err != nil {
		slog.Warn("B1 cleanup", "err", err)
	}
	_ = e.forAll(ctx, names, 16, "namespaces deleted", func(name string) error {
		_ = e.kube.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
		return nil
	})
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
	gone := map[string]bool{}
	for _, name := range e.tearingDown {
		gone[name] = true
	}
	if err := poll(ctx, 5*time.Minute+time.Duration(len(gone))*20*time.Millisecond, time.Second, "the deleted apps' namespaces gone", func() (bool, string, error) {
		list, err := e.kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		left := 0
		for _, ns := range list.Items {
			if gone[ns.Name] {
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
