package testbed

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	pidsFile    = "pids"
	logsDir     = "logs"
	stopTimeout = 5 * time.Second
)

// process is a server started by this package: detached in its own session,
// with stdout and stderr appended to <dir>/logs/<name>.log.
type process struct {
	name    string // component name, used for the log file
	exe     string // basename of the resolved executable, recorded in the pids file
	pid     int
	logPath string

	done    chan struct{} // closed when the process has been reaped
	mu      sync.Mutex
	waitErr error
}

// startProcess starts bin with args detached (Setsid) so that it outlives the
// calling process, and appends "<exe> <pid>" to <dir>/pids.
func startProcess(dir, name, bin string, args []string) (*process, error) {
	return startProcessAs(dir, name, bin, args, nil)
}

// startProcessAs is startProcess with the process running as cred (nil:
// as the caller).
func startProcessAs(dir, name, bin string, args []string, cred *syscall.Credential) (*process, error) {
	resolved, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return nil, fmt.Errorf("resolve %s binary: %w", name, err)
	}
	if err := os.MkdirAll(filepath.Join(dir, logsDir), 0o755); err != nil {
		return nil, fmt.Errorf("create log dir: %w", err)
	}
	logPath := filepath.Join(dir, logsDir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s log: %w", name, err)
	}
	defer logFile.Close()

	closeInheritedFDs()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout = logFile // an *os.File is handed to the child as is: no copying goroutine
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: cred}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{
		name:    name,
		exe:     filepath.Base(resolved),
		pid:     cmd.Process.Pid,
		logPath: logPath,
		done:    make(chan struct{}),
	}
	// Reap the child if it exits while this process still runs, so that an
	// early exit is noticed and no zombie is left behind.
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		close(p.done)
	}()
	if err := appendPid(dir, p.exe, p.pid); err != nil {
		_ = stopPid(p.exe, p.pid)
		return nil, err
	}
	return p, nil
}

// closeInheritedFDs marks every descriptor above stderr close-on-exec.
// Go opens its own that way, but one inherited from the caller is not: a
// server started under `flock LOCK go test` would hold the lock for as
// long as it runs.
func closeInheritedFDs() {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}

// exited reports whether the process has exited, with its wait error.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.waitErr == nil {
			return true, errors.New("exited with status 0")
		}
		return true, p.waitErr
	default:
		return false, nil
	}
}

func appendPid(dir, exe string, pid int) error {
	f, err := os.OpenFile(filepath.Join(dir, pidsFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("record pid: %w", err)
	}
	_, werr := fmt.Fprintf(f, "%s %d\n", exe, pid)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		return fmt.Errorf("record pid: %w", err)
	}
	return nil
}

type pidEntry struct {
	name string
	pid  int
}

// readPids parses a pids file of "<exe-basename> <pid>" lines.
func readPids(dir string) ([]pidEntry, error) {
	data, err := os.ReadFile(filepath.Join(dir, pidsFile))
	if err != nil {
		return nil, err
	}
	var out []pidEntry
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if len(fields) != 2 {
			return nil, fmt.Errorf("malformed line %q in %s", sc.Text(), filepath.Join(dir, pidsFile))
		}
		pid, err := strconv.Atoi(fields[1])
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("malformed pid in line %q in %s", sc.Text(), filepath.Join(dir, pidsFile))
		}
		out = append(out, pidEntry{name: fields[0], pid: pid})
	}
	return out, sc.Err()
}

// running reports whether pid is alive and its executable's basename is name.
// A zombie has no executable link and therefore counts as not running.
func running(name string, pid int) bool {
	target, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		return false
	}
	target = strings.TrimSuffix(target, " (deleted)") // binary replaced while running
	return filepath.Base(target) == name
}

// stopPid sends SIGTERM to pid if it still runs name, waits up to stopTimeout,
// then sends SIGKILL. PostgreSQL gets SIGINT instead: its SIGTERM waits for
// every client to disconnect, and a SIGKILLed postmaster leaves its
// backends and shared memory behind.
func stopPid(name string, pid int) error {
	if !running(name, pid) {
		return nil
	}
	sig := syscall.SIGTERM
	if name == "postgres" {
		sig = syscall.SIGINT
	}
	if err := syscall.Kill(pid, sig); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return fmt.Errorf("signal %s (pid %d): %w", name, pid, err)
	}
	if waitGone(name, pid, stopTimeout) {
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill %s (pid %d): %w", name, pid, err)
	}
	if !waitGone(name, pid, stopTimeout) {
		return fmt.Errorf("%s (pid %d) still running after SIGKILL", name, pid)
	}
	return nil
}

func waitGone(name string, pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for running(name, pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// StopDir stops the processes recorded in <dir>/pids by StartCluster or
// StartRedis: in reverse start order, SIGTERM then SIGKILL after 5 s, and only
// a PID whose /proc/<pid>/exe basename still matches the recorded name. The
// pids file is removed afterwards; data and logs stay. A missing pids file is
// not an error.
func StopDir(dir string) error {
	entries, err := readPids(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read pids: %w", err)
	}
	var errs []error
	for i := len(entries) - 1; i >= 0; i-- {
		if err := stopPid(entries[i].name, entries[i].pid); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		// Keep the pids file so that a later StopDir can retry.
		return fmt.Errorf("stop processes in %s: %w", dir, errors.Join(errs...))
	}
	if err := os.Remove(filepath.Join(dir, pidsFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove pids file: %w", err)
	}
	return nil
}

// Processes is the executable name and pid of each process recorded in
// <dir>/pids by StartCluster or StartRedis that still runs, in start
// order: for a caller that measures them (the benchmarks read each one's
// CPU time). A missing pids file is no processes.
func Processes(dir string) ([]Process, error) {
	entries, err := readPids(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read pids: %w", err)
	}
	var out []Process
	for _, e := range entries {
		if running(e.name, e.pid) {
			out = append(out, Process{Name: e.name, PID: e.pid})
		}
	}
	return out, nil
}

// Process is a running process of a test bed: its executable's base name
// and pid.
type Process struct {
	Name string
	PID  int
}

// dirState reports how many of the processes recorded in <dir>/pids run.
func dirState(dir string) (alive, total int, err error) {
	entries, err := readPids(dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("read pids: %w", err)
	}
	for _, e := range entries {
		if running(e.name, e.pid) {
			alive++
		}
	}
	return alive, len(entries), nil
}

// prepareDir makes sure no recorded process of a previous run is alive in dir
// and removes a stale pids file.
func prepareDir(dir string) error {
	alive, total, err := dirState(dir)
	if err != nil {
		return err
	}
	if alive > 0 {
		return fmt.Errorf("%d of %d processes recorded in %s still run; stop them first (StopDir or hack/cluster down)",
			alive, total, filepath.Join(dir, pidsFile))
	}
	if err := os.Remove(filepath.Join(dir, pidsFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove stale pids file: %w", err)
	}
	return nil
}

// logTail returns the last lines of a log file, for error messages.
func logTail(path string, lines int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const maxBytes = 16 << 10
	if st, err := f.Stat(); err == nil && st.Size() > maxBytes {
		if _, err := f.Seek(-maxBytes, io.SeekEnd); err != nil {
			return ""
		}
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return ""
	}
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// withLogTail appends the tail of p's log to err.
func withLogTail(err error, p *process) error {
	if p == nil {
		return err
	}
	tail := logTail(p.logPath, 25)
	if tail == "" {
		return fmt.Errorf("%w (log %s is empty)", err, p.logPath)
	}
	return fmt.Errorf("%w\n--- last lines of %s ---\n%s", err, p.logPath, tail)
}
