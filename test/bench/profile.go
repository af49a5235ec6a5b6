package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// profileSeconds is how long -profile samples the worker.
const profileSeconds = 30 * time.Second

// idleProfile is how long -profile samples the worker from the start of
// B4's window: the default refresh interval and its jitter, so that every
// app's timer fires once in it (the passes come in bursts: a fleet that
// reconciled together fires together).
const idleProfile = 200 * time.Second

// profileNodes is how many functions the printed top lists.
const profileNodes = 15

// profileWorker takes a CPU profile of the worker over d from
// /debug/pprof/profile on its metrics listener (d = 0: a heap profile of
// the live objects, /debug/pprof/heap), writes it to
// dir/worker-<label>-<UTC time>.pprof, prints the top functions by
// cumulative time, or by live bytes (`go tool pprof -top`), as `# pprof`
// lines, and returns the file's path.
func (e *env) profileWorker(ctx context.Context, dir, label string, d time.Duration) (string, error) {
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", e.workerOps, int(d.Seconds()))
	kind, top := "CPU profile, "+d.String(), []string{"-top", "-cum"}
	if d == 0 {
		url = fmt.Sprintf("http://%s/debug/pprof/heap?gc=1", e.workerOps)
		kind, top = "heap profile (in use)", []string{"-top", "-sample_index=inuse_space"}
		label += "-heap"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("profile the worker: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("profile the worker: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("profile the worker: status %d: %.200s", resp.StatusCode, data)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	path, err := filepath.Abs(filepath.Join(dir, fmt.Sprintf("worker-%s-%s.pprof", label, time.Now().UTC().Format("20060102T150405Z"))))
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return "", err
	}
	args := append([]string{"tool", "pprof"}, top...)
	out, err := exec.CommandContext(ctx, "go", append(args, fmt.Sprintf("-nodecount=%d", profileNodes), e.bin, path)...).CombinedOutput()
	var b strings.Builder
	fmt.Fprintf(&b, "# pprof: worker %s, %s: top %d\n", kind, label, profileNodes)
	for line := range strings.Lines(string(out)) {
		b.WriteString("# pprof " + line)
	}
	if d == 0 {
		b.WriteString(e.workerMemStats(ctx))
	}
	fmt.Print(b.String())
	if err != nil {
		return path, fmt.Errorf("go tool pprof %s: %w", path, err)
	}
	return path, nil
}

// workerMemStats returns, as `# memstats` lines, the runtime's memory
// figures that the heap profile's text form ends with (heap in use, idle
// and released, stacks, the runtime's own), which tell where a resident
// set larger than the live heap goes.
func (e *env) workerMemStats(ctx context.Context) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s/debug/pprof/heap?debug=1", e.workerOps), nil)
	if err != nil {
		return "# memstats: " + err.Error() + "\n"
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "# memstats: " + err.Error() + "\n"
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return "# memstats: " + err.Error() + "\n"
	}
	var b strings.Builder
	for line := range strings.Lines(string(data)) {
		for _, k := range []string{"# Sys ", "# HeapAlloc ", "# HeapSys ", "# HeapIdle ", "# HeapInuse ", "# HeapReleased ",
			"# Stack ", "# MSpan ", "# GCSys ", "# OtherSys ", "# NextGC ", "# NumGC "} {
			if strings.HasPrefix(line, k) {
				b.WriteString("# memstats " + strings.TrimPrefix(line, "# "))
			}
		}
	}
	return b.String()
}
