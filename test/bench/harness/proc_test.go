package harness

import (
	"context"
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
