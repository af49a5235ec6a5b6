package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/windlass-cd/windlass/test/bench/harness"
)

// b4Run is B4's numbers: one window of idleness.
type b4Run struct {
	Apps int `json:"apps"`
	// Reused: the fleet is B1's last one, its refresh interval patched to
	// the default; otherwise B4 created it, PrepareSeconds either way.
	Reused         bool    `json:"reusedB1Fleet"`
	PrepareSeconds float64 `json:"prepareSeconds"`
	SettleSeconds  float64 `json:"settleSeconds"`
	IdleSeconds    float64 `json:"idleSeconds"`
	// Average CPU over the window, in % of one core (CPU-seconds / wall
	// seconds × 100), from /proc/<pid>/stat; Windlass is worker + server.
	WorkerCPUPct   float64 `json:"workerCPUPercent"`
	ServerCPUPct   float64 `json:"serverCPUPercent"`
	WindlassCPUPct float64 `json:"windlassCPUPercent"`
	TemporalCPUPct float64 `json:"temporalCPUPercent"`
	// PostgresCPUPct is PostgreSQL's (pg1, pg2).
	PostgresCPUPct float64 `json:"postgresCPUPercent,omitempty"`
	// PerSlice is the same per minute of the window.
	PerSlice []b4Slice `json:"perMinute"`
	// RSS at the end of the window, and the worker's largest sample (every
	// 10 s) during it.
	WorkerRSSMiB     float64 `json:"workerRSSMiB"`
	WorkerPeakRSSMiB float64 `json:"workerPeakRSSMiB"`
	ServerRSSMiB     float64 `json:"serverRSSMiB"`
	TemporalRSSMiB   float64 `json:"temporalRSSMiB"`
	// WorkerProfile is a CPU profile of the worker over the window's
	// first 200 s (idleProfile), and WorkerHeapProfile the heap profile
	// taken at its end (-profile).
	WorkerProfile     string `json:"workerProfile,omitempty"`
	WorkerHeapProfile string `json:"workerHeapProfile,omitempty"`
	// Redis INFO memory used_memory at the start and end of the window.
	RedisStartMiB float64 `json:"redisUsedMemoryStartMiB"`
	RedisEndMiB   float64 `json:"redisUsedMemoryMiB"`
	// History: the events written during the window by every execution
	// of the namespace, counted from the histories afterwards.
	History      harness.Actions `json:"historyInWindow"`
	Executions   int             `json:"executionsRead"`
	EventsPerMin float64         `json:"historyEventsPerMinute"`
	// StillSynced is how many apps the list shows Synced and Healthy after
	// the window.
	StillSynced int    `json:"stillSyncedAndHealthy"`
	LoadAverage string `json:"loadAverage"`
}

type b4Slice struct {
	Seconds  float64 `json:"seconds"`
	Worker   float64 `json:"workerCPUPercent"`
	Server   float64 `json:"serverCPUPercent"`
	Temporal float64 `json:"temporalCPUPercent"`
}

// b4Batch is how many apps B4 creates before waiting for them to sync: a
// whole burst of 500 did not converge here (docs/benchmarks.md).
const b4Batch = 100

// benchIdleFleet is B4: cfg.idleApps synced apps at the default refresh
// interval idle for cfg.idleFor after cfg.idleSettle; it measures the
// average CPU of the worker, the server and Temporal, their RSS, Redis's
// memory and the history events written per minute. It takes over kept
// (B1's last fleet) when that has the size and is still all Synced and
// Healthy, and creates its own fleet otherwise. The apps are deleted
// afterwards.
func benchIdleFleet(ctx context.Context, e *env, res *results, cfg config, kept *fleet) error {
	n := cfg.idleApps
	run := b4Run{Apps: n}
	start := time.Now()
	f, reused, err := e.idleFleet(ctx, n, kept)
	if f != nil {
		defer e.deleteAll(ctx, f.names)
	}
	if err != nil {
		return err
	}
	run.Reused, run.PrepareSeconds = reused, time.Since(start).Seconds()
	slog.Info("B4 fleet ready", "apps", n, "reused", reused, "seconds", int(run.PrepareSeconds), "settle", cfg.idleSettle, "idle", cfg.idleFor)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(cfg.idleSettle):
	}
	run.SettleSeconds = cfg.idleSettle.Seconds()
	return e.idleWindow(ctx, res, cfg, fmt.Sprintf("B4.N%d", n), f, &run, cfg.idleFor)
}

// idleWindow measures the synced fleet f at rest for window: the average
// CPU of the worker, the server and Temporal, their RSS, Redis's memory
// and the history events written per minute; it records run and emits
// the figures under id.
func (e *env) idleWindow(ctx context.Context, res *results, cfg config, id string, f *fleet, run *b4Run, window time.Duration) (err error) {
	n := len(f.names)
	label := strings.ReplaceAll(id, ".", "-")
	rdb := redis.NewClient(&redis.Options{Addr: e.redisAddr})
	defer rdb.Close()
	if run.RedisStartMiB, err = redisUsedMiB(ctx, rdb); err != nil {
		return err
	}
	cpu := e.cpuSeconds
	pct := func(a, b [3]float64, secs float64) [3]float64 {
		var p [3]float64
		for i := range p {
			p[i] = (b[i] - a[i]) / secs * 100
		}
		return p
	}
	t0, cpu0, pg0 := time.Now(), cpu(), e.postgresCPUSeconds()
	sliceStart, sliceCPU := t0, cpu0
	var profiled chan string
	if cfg.profile {
		profiled = make(chan string, 1)
		go func() {
			path, err := e.profileWorker(ctx, cfg.profileDir, label, min(idleProfile, window))
			if err != nil {
				slog.Warn("B4 worker profile", "err", err)
			}
			profiled <- path
		}()
	}
	sample := time.NewTicker(10 * time.Second)
	defer sample.Stop()
	end := time.After(window)
idle:
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-end:
			break idle
		case now := <-sample.C:
			if rss, _ := e.worker.RSSMiB(); rss > run.WorkerPeakRSSMiB {
				run.WorkerPeakRSSMiB = rss
			}
			if secs := now.Sub(sliceStart).Seconds(); secs >= 59 {
				c := cpu()
				p := pct(sliceCPU, c, secs)
				run.PerSlice = append(run.PerSlice, b4Slice{Seconds: secs, Server: p[0], Worker: p[1], Temporal: p[2]})
				sliceStart, sliceCPU = now, c
			}
		}
	}
	t1, cpu1 := time.Now(), cpu()
	run.IdleSeconds = t1.Sub(t0).Seconds()
	run.PostgresCPUPct = (e.postgresCPUSeconds() - pg0) / run.IdleSeconds * 100
	p := pct(cpu0, cpu1, run.IdleSeconds)
	run.ServerCPUPct, run.WorkerCPUPct, run.TemporalCPUPct = p[0], p[1], p[2]
	run.WindlassCPUPct = p[0] + p[1]
	run.WorkerRSSMiB, _ = e.worker.RSSMiB()
	run.WorkerPeakRSSMiB = max(run.WorkerPeakRSSMiB, run.WorkerRSSMiB)
	if cfg.profile {
		run.WorkerProfile = <-profiled
		if run.WorkerHeapProfile, err = e.profileWorker(ctx, cfg.profileDir, label, 0); err != nil {
			slog.Warn("B4 worker heap profile", "err", err)
		}
	}
	run.ServerRSSMiB, _ = e.server.RSSMiB()
	run.TemporalRSSMiB, _ = e.temporal.RSSMiB()
	if run.RedisEndMiB, err = redisUsedMiB(ctx, rdb); err != nil {
		return err
	}
	run.LoadAverage = loadAverage()

	// Counted after the window, so the reading does not load it.
	if run.History, run.Executions, err = harness.CountWindow(ctx, e.tc, "default", t0, t1, 4); err != nil {
		return err
	}
	run.EventsPerMin = float64(run.History.Events) / t1.Sub(t0).Minutes()
	if run.StillSynced, err = e.countApps(ctx, f.prefix, "&sync=Synced&health=Healthy"); err != nil {
		return err
	}
	res.addRun(id, run)
	if run.StillSynced != n {
		res.note("%s: %d of %d apps Synced and Healthy after the window", id, run.StillSynced, n)
	}
	mins := t1.Sub(t0).Minutes()
	fmt.Printf("# %s: %.0f s idle (fleet %s in %.0f s), CPU worker %.2f %%, server %.2f %%, Temporal %.2f %% of a core; RSS worker %.0f MiB (peak %.0f), server %.0f, Temporal %.0f; Redis %.1f MiB; %d history events in %d executions (%.0f/min: %.0f workflow tasks, %.0f activities, %.0f timers a minute), load %s\n",
		res.label(id), run.IdleSeconds, map[bool]string{true: "reused from B1", false: "created"}[run.Reused], run.PrepareSeconds,
		run.WorkerCPUPct, run.ServerCPUPct, run.TemporalCPUPct, run.WorkerRSSMiB, run.WorkerPeakRSSMiB, run.ServerRSSMiB, run.TemporalRSSMiB,
		run.RedisEndMiB, run.History.Events, run.Executions, run.EventsPerMin,
		float64(run.History.WorkflowTasks)/mins, float64(run.History.Activities+run.History.LocalActs)/mins, float64(run.History.Timers)/mins, run.LoadAverage)
	res.emit(id+".windlass_cpu_pct", run.WindlassCPUPct, "%core", 1)
	res.emit(id+".worker_cpu_pct", run.WorkerCPUPct, "%core", 1)
	res.emit(id+".server_cpu_pct", run.ServerCPUPct, "%core", 1)
	res.emit(id+".temporal_cpu_pct", run.TemporalCPUPct, "%core", 1)
	if e.postgres != nil {
		res.emit(id+".postgres_cpu_pct", run.PostgresCPUPct, "%core", 1)
	}
	res.emit(id+".worker_rss", run.WorkerRSSMiB, "MiB", 1)
	res.emit(id+".worker_rss_peak", run.WorkerPeakRSSMiB, "MiB", 1)
	res.emit(id+".server_rss", run.ServerRSSMiB, "MiB", 1)
	res.emit(id+".temporal_rss", run.TemporalRSSMiB, "MiB", 1)
	res.emit(id+".redis_used_memory", run.RedisEndMiB, "MiB", 1)
	res.emit(id+".history_events_per_min", run.EventsPerMin, "events/min", 1)
	res.emit(id+".workflow_tasks_per_min", float64(run.History.WorkflowTasks)/mins, "tasks/min", 1)
	res.emit(id+".activities_per_min", float64(run.History.Activities+run.History.LocalActs)/mins, "activities/min", 1)
	// A fleet that reconciled together refreshes in bursts, so a window
	// holds more or fewer passes than its share: per pass (a workflow
	// task each), and at the steady rate of n apps every mean interval.
	if run.History.WorkflowTasks > 0 {
		perPass := run.WindlassCPUPct / 100 * run.IdleSeconds / float64(run.History.WorkflowTasks)
		res.emit(id+".windlass_cpu_ms_per_pass", perPass*1000, "ms", 1)
		res.emit(id+".windlass_cpu_pct_steady", perPass*float64(n)/meanRefresh.Seconds()*100, "%core", 1)
	}
	return nil
}

// meanRefresh is the worker's default refresh interval (180 s) plus its
// mean jitter (up to 10 %).
const meanRefresh = 189 * time.Second

// idleFleet readies n synced apps at the default refresh interval: kept
// when it has n apps, all Synced and Healthy (their refreshSeconds patched
// away), else new ones created b4Batch at a time, each batch synced
// before the next. It returns the fleet (to delete, even with an error)
// and whether it reused kept.
func (e *env) idleFleet(ctx context.Context, n int, kept *fleet) (*fleet, bool, error) {
	if kept != nil {
		err := e.defaultRefresh(ctx, kept, n)
		if err == nil {
			return kept, true, nil
		}
		if ctx.Err() != nil {
			return kept, false, err
		}
		slog.Warn("B4 cannot reuse B1's fleet; creating one", "err", err)
		e.deleteAll(ctx, kept.names)
	}
	repoURL, _, err := e.newRepo(ctx, "b4")
	if err != nil {
		return nil, false, err
	}
	f := &fleet{prefix: "b4-", names: appNames("b4-", n)}
	body := func(name string) any {
		b := appBody(name, repoURL, false)
		delete(b, "refreshSeconds") // the worker's default
		return b
	}
	for i := 0; i < n; i += b4Batch {
		batch := f.names[i:min(i+b4Batch, n)]
		if err := e.createAll(ctx, batch, 16, body); err != nil {
			return f, false, err
		}
		if err := e.waitFleet(ctx, f.prefix, i+len(batch)); err != nil {
			return f, false, err
		}
		slog.Info("B4 fleet", "synced", i+len(batch), "of", n)
	}
	return f, false, nil
}

// defaultRefresh checks that f is n apps, all Synced and Healthy, and
// patches their refresh interval to the worker's default.
func (e *env) defaultRefresh(ctx context.Context, f *fleet, n int) error {
	c, err := e.countApps(ctx, f.prefix, "&sync=Synced&health=Healthy")
	if err != nil {
		return err
	}
	if len(f.names) != n || c != n {
		return fmt.Errorf("B1's fleet %s: %d apps, %d Synced and Healthy, want %d", f.prefix, len(f.names), c, n)
	}
	err = e.forAll(ctx, f.names, 16, "patched", func(name string) error {
		_, err := e.request(ctx, http.MethodPatch, "/api/v1/applications/"+name, map[string]any{"refreshSeconds": nil}, nil)
		return err
	})
	if err != nil {
		return err
	}
	return e.waitFleet(ctx, f.prefix, n)
}

// redisUsedMiB is INFO memory's used_memory.
func redisUsedMiB(ctx context.Context, rdb *redis.Client) (float64, error) {
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		return 0, fmt.Errorf("redis INFO memory: %w", err)
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			b, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, fmt.Errorf("redis used_memory %q: %w", v, err)
			}
			return b / (1 << 20), nil
		}
	}
	return 0, fmt.Errorf("redis INFO memory has no used_memory")
}
