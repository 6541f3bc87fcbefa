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
