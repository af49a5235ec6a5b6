package harness

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestProc(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	p, err := StartProc(t.TempDir(), "/bin/sh", "sh", []string{"BENCH_TEST_VALUE=42"},
		"-c", `echo "starting"; echo "msg=\"ready\" api=127.0.0.1:$BENCH_TEST_VALUE"; exec sleep 60`)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	addr, err := p.LogValue(ctx, `msg="ready"`, "api")
	if err != nil {
		t.Fatal(err)
	}
	if addr != "127.0.0.1:42" {
		t.Errorf("api = %q, want 127.0.0.1:42", addr)
	}
	if _, err := p.LogValue(ctx, "starting", "api"); err == nil {
		t.Error("LogValue found a key the line does not have")
	}
	if cpu := p.CPUSeconds(); cpu < 0 {
		t.Errorf("CPUSeconds = %v", cpu)
	}
	if now, peak := p.RSSMiB(); now <= 0 || peak < now {
		t.Errorf("RSSMiB = %v, %v", now, peak)
	}
	p.Stop()
	short, cancel2 := context.WithTimeout(ctx, time.Second)
	defer cancel2()
	if _, err := p.WaitLine(short, "never printed"); err == nil {
		t.Error("WaitLine of an exited process without the line: no error")
	}
}

func TestStartProcBadBinary(t *testing.T) {
	if _, err := StartProc(t.TempDir(), "/nonexistent/windlass", "x", nil); err == nil {
		t.Fatal("no error for a missing binary")
	}
}

// TestPIDCPUSeconds: a waited-for child's CPU time counts with children
// and not without; a gone process is 0.
func TestPIDCPUSeconds(t *testing.T) {
	self := os.Getpid()
	with0, without0 := PIDCPUSeconds(self, true), PIDCPUSeconds(self, false)
	// A child that spins for about 0.3 s of CPU, then is waited for.
	if out, err := exec.Command("/bin/sh", "-c",
		`end=$(( $(date +%s%N) + 300000000 )); while [ $(date +%s%N) -lt $end ]; do :; done`).CombinedOutput(); err != nil {
		t.Fatalf("child: %v: %s", err, out)
	}
	with1, without1 := PIDCPUSeconds(self, true), PIDCPUSeconds(self, false)
	children := (with1 - without1) - (with0 - without0)
	if children < 0.05 {
		t.Errorf("children's CPU grew by %.2f s, want the child's (about 0.3 s)", children)
	}
	if without1 < without0 {
		t.Errorf("own CPU went back: %.2f → %.2f", without0, without1)
	}
	if got := PIDCPUSeconds(1<<30, true); got != 0 {
		t.Errorf("a pid that does not exist: %v, want 0", got)
	}
}

// TestTreeCPUSeconds: a live grandchild's CPU time counts in its
// ancestor's tree, though the ancestor has not waited for it.
func TestTreeCPUSeconds(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	// A child subshell spins for about 0.3 s of CPU, says so, and stays.
	p, err := StartProc(t.TempDir(), "/bin/sh", "sh", nil, "-c",
		`( end=$(( $(date +%s%N) + 300000000 )); while [ $(date +%s%N) -lt $end ]; do :; done; echo spun; exec sleep 60 ) & wait`)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if _, err := p.WaitLine(ctx, "spun"); err != nil {
		t.Fatal(err)
	}
	own, tree := PIDCPUSeconds(p.PID(), true), TreeCPUSeconds(p.PID())
	if tree-own < 0.05 {
		t.Errorf("tree %.2f s, own with waited children %.2f s: want the live child's 0.3 s in the tree", tree, own)
	}
	if got := TreeCPUSeconds(1 << 30); got != 0 {
		t.Errorf("a pid that does not exist: %v, want 0", got)
	}
}
