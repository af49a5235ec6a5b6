package testbed

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

func TestStopDir(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		bin        string
		args       []string
		recordAs   string // overrides the recorded name when set
		wantAlive  bool   // after StopDir
		minElapsed time.Duration
		readyFile  string // written by the process once it is set up
	}{
		{name: "stops a recorded process", bin: sleep, args: []string{"300"}},
		{name: "leaves a process whose executable differs", bin: sleep, args: []string{"300"}, recordAs: "kube-apiserver", wantAlive: true},
		{
			name: "kills a process that ignores SIGTERM", bin: sh,
			args:       []string{"-c", `trap "" TERM; : >trapped; while :; do sleep 0.1; done`},
			minElapsed: stopTimeout,
			readyFile:  "trapped",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p, err := startProcess(dir, "proc", tt.bin, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = syscall.Kill(p.pid, syscall.SIGKILL) })
			if !running(p.exe, p.pid) {
				t.Fatalf("%s (pid %d) not running after start", p.exe, p.pid)
			}
			if tt.readyFile != "" {
				deadline := time.Now().Add(10 * time.Second)
				for {
					if _, err := os.Stat(filepath.Join(dir, tt.readyFile)); err == nil {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s not written", tt.readyFile)
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
			if err := prepareDir(dir); err == nil {
				t.Error("prepareDir accepted a dir with a running process")
			}
			if tt.recordAs != "" {
				line := tt.recordAs + " " + strconv.Itoa(p.pid) + "\n"
				if err := os.WriteFile(filepath.Join(dir, pidsFile), []byte(line), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			begin := time.Now()
			if err := StopDir(dir); err != nil {
				t.Fatal(err)
			}
			if elapsed := time.Since(begin); elapsed < tt.minElapsed {
				t.Errorf("StopDir took %s, want at least %s", elapsed, tt.minElapsed)
			}
			if _, err := os.Stat(filepath.Join(dir, pidsFile)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("pids file still there: %v", err)
			}
			alive := running(p.exe, p.pid)
			if alive != tt.wantAlive {
				t.Errorf("running after StopDir = %v, want %v", alive, tt.wantAlive)
			}
			if !tt.wantAlive {
				select {
				case <-p.done:
				case <-time.After(5 * time.Second):
					t.Error("process not reaped after StopDir")
				}
			}
		})
	}
}

func TestStopDirWithoutPids(t *testing.T) {
	if err := StopDir(t.TempDir()); err != nil {
		t.Fatal(err)
	}
}

func TestStopDirStaleEntry(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	line := "true " + strconv.Itoa(cmd.Process.Pid) + "\n"
	if err := os.WriteFile(filepath.Join(dir, pidsFile), []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := prepareDir(dir); err != nil {
		t.Fatalf("prepareDir refused a dir whose processes are gone: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, pidsFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale pids file kept: %v", err)
	}
}

func TestFreePorts(t *testing.T) {
	ports, err := freePorts(40)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] {
			t.Errorf("port %d handed out twice", p)
		}
		seen[p] = true
		if p < lowestPort || p >= ephemeralLow() {
			t.Errorf("port %d outside [%d, %d)", p, lowestPort, ephemeralLow())
		}
		if !portFree(p) {
			t.Errorf("port %d is not free", p)
		}
	}
}
