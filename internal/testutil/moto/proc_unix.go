//go:build unix

package moto

import (
	"errors"
	"os"
	"syscall"
)

// killGroup kills the whole process group led by p, so anything the server
// started (a wrapper's or a shim's children) goes too.
func killGroup(p *os.Process) error {
	err := syscall.Kill(-p.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}
