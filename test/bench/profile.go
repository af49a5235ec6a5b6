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

// profileDuration is how long -profile samples the worker.
const profileDuration = 30 * time.Second

// idleProfile is how long -profile samples the worker from the start of
// B4's window: the default refresh interval and its jitter, so that every
// app's timer fires once in it (the passes come in bursts: a fleet that
// reconciled together fires together).
const idleProfile = 200 * time.Second

// profileNodes is how many functions the printed top lists.
const profileNodes = 15

// profiled is a process the harness profiles: its name in files and
// lines, the host:port that serves its /debug/pprof/, and its binary, for
// pprof's symbols.
type profiled struct {
	name, addr, bin string
}

func (e *env) workerProc() profiled   { return profiled{"worker", e.workerOps, e.bin} }
func (e *env) temporalProc() profiled { return profiled{"temporal", e.temporalDebug, e.fullBin} }

// profileWorker profiles the worker (see profile).
func (e *env) profileWorker(ctx context.Context, dir, label string, d time.Duration) (string, error) {
	return e.profile(ctx, e.workerProc(), dir, label, d)
}

// profile takes a CPU profile of p over d from /debug/pprof/profile (d =
// 0: a heap profile of the live objects, /debug/pprof/heap), writes it to
// dir/<name>-<label>-<UTC time>.pprof, prints the top functions by
// cumulative time, or by live bytes (`go tool pprof -top`), as `# pprof`
// lines, and returns the file's path.
func (e *env) profile(ctx context.Context, p profiled, dir, label string, d time.Duration) (string, error) {
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", p.addr, int(d.Seconds()))
	kind, top := "CPU profile, "+d.String(), []string{"-top", "-cum"}
	if d == 0 {
		url = fmt.Sprintf("http://%s/debug/pprof/heap?gc=1", p.addr)
		kind, top = "heap profile (in use)", []string{"-top", "-sample_index=inuse_space"}
		label += "-heap"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("profile the %s: %w", p.name, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("profile the %s: %w", p.name, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("profile the %s: status %d: %.200s", p.name, resp.StatusCode, data)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	path, err := filepath.Abs(filepath.Join(dir, fmt.Sprintf("%s-%s-%s.pprof", p.name, label, time.Now().UTC().Format("20060102T150405Z"))))
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return "", err
	}
	args := append([]string{"tool", "pprof"}, top...)
	out, err := exec.CommandContext(ctx, "go", append(args, fmt.Sprintf("-nodecount=%d", profileNodes), p.bin, path)...).CombinedOutput()
	var b strings.Builder
	fmt.Fprintf(&b, "# pprof: %s %s, %s: top %d\n", p.name, kind, label, profileNodes)
	for line := range strings.Lines(string(out)) {
		b.WriteString("# pprof " + line)
	}
	if d == 0 {
		b.WriteString(memStats(ctx, p.addr))
	}
	fmt.Print(b.String())
	if err != nil {
		return path, fmt.Errorf("go tool pprof %s: %w", path, err)
	}
	return path, nil
}

// memStats returns, as `# memstats` lines, the runtime's memory
// figures that the heap profile's text form ends with (heap in use, idle
// and released, stacks, the runtime's own), which tell where a resident
// set larger than the live heap goes.
func memStats(ctx context.Context, addr string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s/debug/pprof/heap?debug=1", addr), nil)
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
