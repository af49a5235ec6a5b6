//go:build !unix

package render

import (
	"os"
	"time"
)

// Without rlimits, the sandbox's Go memory and stack limits and the
// worker's wall-time limit still hold.
func limitMemory(int64)      {}
func limitCPU(time.Duration) {}
func onCPULimit(fn func())   {}

func peakRSS(*os.ProcessState) int64 { return 0 }
