//go:build unix

package kinds

import (
	"os/exec"
	"syscall"
)

// killGroup runs the command in its own process group and makes
// cancellation kill the whole group, so a shell's children (a curl, a
// sleep) do not outlive the step.
func killGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
