//go:build unix && !linux

package runner

import (
	"errors"
	"syscall"
)

// thisProcess records no start token here: only Linux's /proc says when a
// process started, so elsewhere the pid alone is checked (a pid reused
// since reads as alive, and recover refuses rather than steal its lock).
func thisProcess(*procInfo) {}

// processState says whether a process with pid exists (signal 0).
func processState(pid int, _ string) (Liveness, error) {
	err := syscall.Kill(pid, 0)
	switch {
	case err == nil, errors.Is(err, syscall.EPERM):
		return LivenessAlive, nil
	case errors.Is(err, syscall.ESRCH):
		return LivenessGone, nil
	}
	return LivenessUnknown, err
}
