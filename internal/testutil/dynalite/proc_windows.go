//go:build windows

package dynalite

import (
	"os"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr { return nil }

// killGroup kills the server process (Windows has no process groups to
// signal; node does not start children for dynalite).
func killGroup(p *os.Process) error { return p.Kill() }
