// Package harness runs windlass processes for multi-process measurements
// (test/bench and test/scaleout): start one with its log in a
// file, wait for log lines, read its CPU time and memory from /proc, and
// count Temporal actions from workflow histories.
package harness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Proc is a process started by StartProc; stdout and stderr go to one log
// file.
type Proc struct {
	Name string
	// Log is the path of its log file.
	Log  string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// StartProc runs bin with args and env added to the harness's own; the
// process dies with the harness (Pdeathsig).
func StartProc(logDir, bin, name string, env []string, args ...string) (*Proc, error) {
	if err := os.MkdirAll(logDir, 0o750); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(append(os.Environ(), "WINDLASS_TOKEN=", "WINDLASS_SERVER="), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Proc{Name: name, cmd: cmd, Log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	return p, nil
}

// PID is the process ID.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Kill sends SIGKILL: no graceful shutdown, no heartbeat, as when a node
// dies.
func (p *Proc) Kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Stop sends SIGTERM and SIGKILL after 15 s.
func (p *Proc) Stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		p.Kill()
	}
}

// WaitLine waits for a log line containing marker and returns what follows
// the marker.
func (p *Proc) WaitLine(ctx context.Context, marker string) (string, error) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if rest, ok := p.find(marker); ok {
			return rest, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("%s: no %q in its log %s: %w\n%s", p.Name, marker, p.Log, ctx.Err(), p.Tail(30))
		case <-p.done:
			if rest, ok := p.find(marker); ok {
				return rest, nil
			}
			return "", fmt.Errorf("%s exited (%v) before %q; see %s:\n%s", p.Name, p.err, marker, p.Log, p.Tail(30))
		case <-tick.C:
		}
	}
}

func (p *Proc) find(marker string) (string, bool) {
	f, err := os.Open(p.Log)
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if _, rest, ok := strings.Cut(sc.Text(), marker); ok {
			return strings.TrimSpace(rest), true
		}
	}
	return "", false
}

// Tail is the end of the log, for failure messages.
func (p *Proc) Tail(lines int) string {
	b, err := os.ReadFile(p.Log)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}

// LogValue is the value of key=value on the line after marker (slog text).
func (p *Proc) LogValue(ctx context.Context, marker, key string) (string, error) {
	rest, err := p.WaitLine(ctx, marker)
	if err != nil {
		return "", err
	}
	for f := range strings.FieldsSeq(rest) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return strings.Trim(v, `"`), nil
		}
	}
	return "", errors.New(p.Name + ": no " + key + " in " + rest)
}

// CPUSeconds is the process's user+system CPU time so far, from
// /proc/<pid>/stat (clock ticks of 1/100 s).
func (p *Proc) CPUSeconds() float64 { return PIDCPUSeconds(p.PID(), false) }

// PIDCPUSeconds is process pid's user+system CPU time so far, from
// /proc/<pid>/stat (clock ticks of 1/100 s); with children, that of its
// children it has waited for is added (a server's CGI programs). 0 when
// the process is gone.
func PIDCPUSeconds(pid int, children bool) float64 {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 15 {
		return 0
	}
	fields := []int{11, 12} // utime stime (the 14th and 15th fields of stat)
	if children {
		fields = append(fields, 13, 14) // cutime cstime
	}
	var ticks float64
	for _, i := range fields {
		v, _ := strconv.ParseFloat(f[i], 64)
		ticks += v
	}
	return ticks / 100
}

// RSSMiB is the process's resident memory now and at its peak.
func (p *Proc) RSSMiB() (now, peak float64) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.PID()))
	if err != nil {
		return 0, 0
	}
	for line := range strings.Lines(string(status)) {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
		switch k {
		case "VmRSS":
			now = kb / 1024
		case "VmHWM":
			peak = kb / 1024
		}
	}
	return now, peak
}

// MachineCPUSeconds is the CPU time every process of the machine has used
// since boot, from the "cpu" line of /proc/stat: user, nice, system, irq,
// softirq and steal (not idle or iowait), in clock ticks of 1/100 s. The
// difference over a run is what the whole test bed cost.
func MachineCPUSeconds() float64 {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(stat), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	var ticks float64
	for _, i := range []int{1, 2, 3, 6, 7, 8} { // user nice system (idle iowait) irq softirq steal
		v, _ := strconv.ParseFloat(f[i], 64)
		ticks += v
	}
	return ticks / 100
}

// TreeCPUSeconds is the CPU time so far of process pid and of every
// descendant: its own, that of the children it has waited for (exited
// backends), and that of each live descendant, found by walking
// /proc/*/stat's parent links. PostgreSQL's cost is its postmaster's tree.
func TreeCPUSeconds(pid int) float64 {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if parent, ok := parentPID(child); ok {
			children[parent] = append(children[parent], child)
		}
	}
	total := PIDCPUSeconds(pid, true)
	for queue := children[pid]; len(queue) > 0; queue = queue[1:] {
		total += PIDCPUSeconds(queue[0], true)
		queue = append(queue, children[queue[0]]...)
	}
	return total
}

// parentPID is the parent of pid, from /proc/<pid>/stat.
func parentPID(pid int) (int, bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}
