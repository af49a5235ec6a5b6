//go:build !linux

package roles

import "os/exec"

// setParentDeathSignal has no portable equivalent: the worker stops the
// child itself.
func setParentDeathSignal(*exec.Cmd) {}
