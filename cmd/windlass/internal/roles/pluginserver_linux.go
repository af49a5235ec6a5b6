package roles

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal kills the child when the worker dies, so that no
// plugin server outlives it.
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
