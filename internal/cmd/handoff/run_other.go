//go:build !unix

package handoff

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
)

// run starts path with this process's streams and waits for it, then ends
// this process with its exit code: a system without execve. Ctrl-C reaches
// both (one console), and is the full program's to handle.
func run(path string, argv, env []string) error {
	cmd := exec.Command(path, argv[1:]...) //nolint:gosec // G204: the full program beside this one, with the user's own arguments
	cmd.Stdin, cmd.Stdout, cmd.Stderr, cmd.Env = os.Stdin, os.Stdout, os.Stderr, env
	signal.Ignore(os.Interrupt)
	err := cmd.Run() // a failure to start is no exit code: said below
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		os.Exit(exit.ExitCode())
	case err != nil:
		return fmt.Errorf("run %s: %w", path, err)
	}
	os.Exit(0)
	return nil
}
