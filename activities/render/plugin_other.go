//go:build !unix

package render

import "os/exec"

// setProcessGroup keeps exec's default: only the command itself is killed.
func setProcessGroup(*exec.Cmd) {}

func killProcessGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil || cmd.ProcessState != nil {
		return nil
	}
	return cmd.Process.Kill()
}
