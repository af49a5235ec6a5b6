package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/windlass-cd/windlass/test/bench/harness"
)

// b8Prefix names B8's apps: b8-app-0000 … in directories apps/app-<i>.
const b8Prefix = "b8-app-"

// b8PaintSamples is how many cold loads of the list B8 times.
const b8PaintSamples = 5

// benchTenThousand is B8 (issue 33): cfg.b8Apps apps of B1's workload in
// one burst (timed and counted as B1), then cfg.b8Idle at rest at the
// default refresh (as B4), then the list API's first and next page (as
// B6), then the web UI's first paint of the list in Chromium; last, the
// peak RSS of each process and the size of Temporal's store. The apps
// stay until the processes stop.
func benchTenThousand(ctx context.Context, e *env, res *results, cfg config) error {
	n := cfg.b8Apps
	id := fmt.Sprintf("B8.N%d", n)
	repoURL, err := dirPerApp.repo(ctx, e, n)
	if err != nil {
		return err
	}
	f := &fleet{prefix: b8Prefix, names: appNames(b8Prefix, n)}
	slog.Info("B8 burst", "apps", n)
	snap0 := e.snapshot()
	start := time.Now()
	run, err := fleetSyncOnce(ctx, e, dirPerApp, repoURL, f, b1Options{keep: true, histories: cfg.histories})
	if err != nil {
		// What the machine spent until the burst failed, and the peaks.
		fmt.Printf("# %s: the burst failed after %.0f s: %v\n", res.label(id), time.Since(start).Seconds(), err)
		for name, cpu := range e.snapshot().cpuSince(snap0) {
			res.emit(id+".burst_failed."+strings.ReplaceAll(name, "-", "_")+"_cpu", cpu, "s", 1)
		}
		return errors.Join(fmt.Errorf("burst: %w", err), e.emitPeaks(ctx, res, id))
	}
	res.addRun(id+".burst", run)
	printFleetRun(res.label(id)+" burst", run)
	emitFleet(res, id+".burst", []b1Run{run})

	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(cfg.idleSettle):
	}
	idle := b4Run{Apps: n, Reused: true, PrepareSeconds: run.SyncedSeconds, SettleSeconds: cfg.idleSettle.Seconds()}
	if err := e.idleWindow(ctx, res, cfg, id+".idle", f, &idle, cfg.b8Idle); err != nil {
		return fmt.Errorf("idle: %w", err)
	}
	if err := e.timeList(ctx, res, id+".list", cfg.listSamples, &b6Run{Apps: n}); err != nil {
		return fmt.Errorf("list: %w", err)
	}
	if paint, err := e.firstPaint(ctx, b8PaintSamples); err != nil {
		if ctx.Err() != nil {
			return err
		}
		fmt.Println("BENCH " + res.label(id+".ui") + " failed")
		res.note("%s: the UI's first paint: %v", id, err)
	} else {
		res.addRun(id+".ui", map[string]any{"firstPaintMillis": paint, "loadAverage": loadAverage()})
		fmt.Printf("# %s: the list's first page on screen, cold: %v ms\n", res.label(id), paint)
		res.emit(id+".ui_first_paint.p50", median(paint), "ms", len(paint))
	}

	return e.emitPeaks(ctx, res, id)
}

// emitPeaks emits the peak RSS of the worker, the server and Temporal, and
// the size of Temporal's store. Peaks are over the processes' lives: run
// B8 alone (BENCH_ONLY=B8) for them to be B8's.
func (e *env) emitPeaks(ctx context.Context, res *results, id string) error {
	for _, p := range append([]*harness.Proc{e.worker, e.server}, e.temporals...) {
		_, peak := p.RSSMiB()
		res.emit(id+"."+strings.ReplaceAll(p.Name, "-", "_")+"_rss_peak", peak, "MiB", 1)
	}
	size, err := e.temporalDBBytes(ctx)
	if err != nil {
		return err
	}
	res.emit(id+".temporal_db", mib(size), "MiB", 1)
	return nil
}

// errNoBrowser says what the first paint needs that is missing.
var errNoBrowser = errors.New("the first paint needs node, web/node_modules (make ui) and chromium (make deps)")

// firstPaint loads the list in Chromium samples times, each in a new
// context, and returns the times from navigation start to its first page
// on screen (test/bench/firstpaint.mjs, with playwright-core from
// web/node_modules). The server must embed the built UI (make ui).
func (e *env) firstPaint(ctx context.Context, samples int) ([]float64, error) {
	chromium := cmp.Or(os.Getenv("CHROMIUM"), "/usr/bin/chromium")
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, errNoBrowser
	}
	for _, need := range []string{chromium, filepath.Join("web", "node_modules", "playwright-core", "package.json")} {
		if _, err := os.Stat(need); err != nil {
			return nil, fmt.Errorf("%w: %v", errNoBrowser, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("test", "bench", "firstpaint.mjs"))
	cmd.Env = append(os.Environ(), "WINDLASS_URL="+e.api, "WINDLASS_ADMIN_PASSWORD="+e.adminPassword,
		"WINDLASS_SCREENSHOTS="+filepath.Join(e.tmp, "screenshots"), "CHROMIUM="+chromium, "WINDLASS_SAMPLES="+strconv.Itoa(samples))
	out, err := cmd.CombinedOutput()
	for line := range strings.Lines(string(out)) {
		if js, ok := strings.CutPrefix(strings.TrimSpace(line), "RESULT "); ok {
			var r struct {
				FirstPaintMs []float64 `json:"firstPaintMs"`
			}
			if err := json.Unmarshal([]byte(js), &r); err != nil {
				return nil, fmt.Errorf("firstpaint.mjs: %w", err)
			}
			return r.FirstPaintMs, nil
		}
	}
	return nil, fmt.Errorf("firstpaint.mjs (is the UI built? make ui): %v\n%s", err, out)
}
