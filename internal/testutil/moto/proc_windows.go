//go:build windows

package moto

import (
	"os"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr { return nil }

// killGroup kills the server process: Windows has no process groups to
// signal.
func killGroup(p *os.Process) error { return p.Kill() }
