//go:build !unix

package runner

import "errors"

func thisProcess(*procInfo) {}

func processState(int, string) (Liveness, error) {
	return LivenessUnknown, errors.New("process liveness is not checked on this system")
}
