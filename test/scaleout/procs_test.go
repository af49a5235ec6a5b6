package scaleout

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// proc is a windlass process started by the tests. Its stdout and stderr go
// to one log file.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

// startProc runs the windlass binary with args; the process dies with the
// test binary (Pdeathsig), so a killed test run leaks nothing.
func startProc(name string, args ...string) (*proc, error) {
	logPath := filepath.Join(bed.tmp, "logs", name+".log")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o750); err != nil {
		return nil, err
	}
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bed.bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), "WINDLASS_TOKEN=", "WINDLASS_SERVER=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// kill sends SIGKILL: no graceful shutdown, no heartbeat, as when a node
// dies.
func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop asks the process to end (SIGTERM) and kills it after 15 s.
func (p *proc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		p.kill()
	}
}

// waitLine waits until the log has a line containing marker and returns
// the text after the marker. It fails when the process exits first.
func (p *proc) waitLine(ctx context.Context, marker string) (string, error) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if rest, ok := p.find(marker); ok {
			return rest, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("%s: no %q in its log: %w\n%s", p.name, marker, ctx.Err(), p.tail(30))
		case <-p.done:
			if rest, ok := p.find(marker); ok {
				return rest, nil
			}
			return "", fmt.Errorf("%s exited (%v) before %q:\n%s", p.name, p.err, marker, p.tail(30))
		case <-tick.C:
		}
	}
}

func (p *proc) find(marker string) (string, bool) {
	f, err := os.Open(p.log)
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

// tail is the end of the log, for failure messages.
func (p *proc) tail(lines int) string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}

// logValue returns the value of key=value after marker in the log (slog's
// text format).
func (p *proc) logValue(ctx context.Context, marker, key string) (string, error) {
	rest, err := p.waitLine(ctx, marker)
	if err != nil {
		return "", err
	}
	for f := range strings.FieldsSeq(rest) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return strings.Trim(v, `"`), nil
		}
	}
	return "", errors.New(p.name + ": no " + key + " in " + rest)
}
