//go:build !unix

package runner

import (
	"errors"
)

// lockFile is not available here: recovery needs flock's guarantee that a
// held lock means a live process.
func lockFile(string, []byte) (func(), []byte, error) {
	return nil, nil, errors.New("journal locks need a unix system (flock)")
}

func thisProcess(*procInfo) {}

func processState(int, string) (Liveness, error) {
	return LivenessUnknown, errors.New("process liveness is not checked on this system")
}
