// Package handoff runs an invocation of koshactl's front in koshactl-full,
// the program beside it that links what the front does not (the MCP server,
// the dashboard, the sandbox, --jq, local contexts' embedded store): see
// docs/benchmarks/startup.md for why koshactl is two programs.
package handoff

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Full is the full program's name. It is looked for in the directory of the
// running executable, its symbolic links resolved (a package manager's link
// on PATH points into the directory that holds both), never on PATH.
const Full = "koshactl-full"

// Environment the front hands the full program: its version, which the full
// program checks against its own, and whether it printed the config file's
// permission warning already.
const (
	EnvFrontVersion = "KOSHACTL_FRONT_VERSION"
	EnvFrontWarned  = "KOSHACTL_FRONT_WARNED"
)

// ErrMissing reports a front without its full program beside it.
var ErrMissing = errors.New(Full + " is not installed beside koshactl")

// Path returns where the full program of the running executable is.
func Path() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find %s: %w", Full, err)
	}
	if resolved, err := filepath.EvalSymlinks(self); err == nil {
		self = resolved
	}
	return filepath.Join(filepath.Dir(self), exe(Full)), nil
}

// exe is name as an executable of this system.
func exe(name string) string {
	if runtime.GOOS == "windows" {
		return name + ".exe"
	}
	return name
}

// Run runs args in the full program in this process's place, with this
// process's streams and environment plus what env adds (NAME=value), and
// returns only when it could not: the process ends with the full program's
// exit code. Its error says what to install.
func Run(args, env []string) error {
	path, err := Path()
	if err != nil {
		return err
	}
	if fi, err := os.Stat(path); err != nil || fi.IsDir() {
		what := "this command"
		if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
			what = "koshactl " + args[0]
		}
		return fmt.Errorf("%s needs %s: %w (looked for %s): install both programs of the release archive, "+
			"or go install github.com/kosha-platform/koshactl/cmd/...@VERSION", what, Full, ErrMissing, path)
	}
	return run(path, append([]string{path}, args...), append(os.Environ(), env...))
}
