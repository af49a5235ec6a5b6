//go:build unix

package render

import (
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"
)

// limitMemory bounds the process's data segment, where Go's heap lives.
func limitMemory(n int64) {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_DATA, &l) != nil {
		return
	}
	l.Cur = min(uint64(n), l.Max)
	_ = syscall.Setrlimit(syscall.RLIMIT_DATA, &l)
}

// limitCPU gives the next render d of CPU time from now: the soft limit
// is what the process has used so far, plus d.
func limitCPU(d time.Duration) {
	var ru syscall.Rusage
	var l syscall.Rlimit
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil || syscall.Getrlimit(syscall.RLIMIT_CPU, &l) != nil {
		return
	}
	used := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	l.Cur = min(uint64((used+d+time.Second-1)/time.Second), l.Max)
	_ = syscall.Setrlimit(syscall.RLIMIT_CPU, &l)
}

// onCPULimit runs fn when the CPU-time limit is reached (SIGXCPU, which
// Go would otherwise ignore).
func onCPULimit(fn func()) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGXCPU)
	go func() { <-c; fn() }()
}

// peakRSS is the largest resident set of an ended process, in bytes (0:
// unknown).
func peakRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok && ru != nil {
		if runtime.GOOS == "darwin" {
			return ru.Maxrss // bytes there, kilobytes on Linux
		}
		return ru.Maxrss << 10
	}
	return 0
}
