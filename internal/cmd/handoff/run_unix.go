//go:build unix

package handoff

import (
	"fmt"
	"syscall"
)

// run replaces this process with path (execve): the full program keeps the
// process id, the streams and the terminal, and its exit code is the
// process's.
func run(path string, argv, env []string) error {
	if err := syscall.Exec(path, argv, env); err != nil { //nolint:gosec // G204: the full program installed beside this executable, never a name from input
		return fmt.Errorf("run %s: %w", path, err)
	}
	return nil
}
