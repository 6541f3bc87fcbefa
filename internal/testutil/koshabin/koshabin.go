package koshabin

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// Env names the binary make test built for the end-to-end tests.
const Env = "KOSHACTL_TEST_BINARY"

// Path returns the koshactl binary named by [Env], or one built into the
// test's temporary directory when the variable is unset.
func Path(t testing.TB) string {
	t.Helper()
	if bin, ok, err := FromEnv(); ok {
		if err != nil {
			t.Fatal(err)
		}
		return bin
	}
	bin, err := Build(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// FromEnv returns the binary [Env] names, if it is set: an error when it is
// not an executable regular file.
func FromEnv() (bin string, set bool, err error) {
	bin = os.Getenv(Env)
	if bin == "" {
		return "", false, nil
	}
	fi, err := os.Stat(bin) //nolint:gosec // G703: the path make test gives the tests, checked and never written
	switch {
	case err != nil:
		return "", true, fmt.Errorf("%s=%q: %w: run make test, which builds it, or unset %s", Env, bin, err, Env)
	case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0:
		return "", true, fmt.Errorf("%s=%q is not an executable file: run make test, which builds it, or unset %s", Env, bin, Env)
	}
	return bin, true, nil
}

// Build builds koshactl into dir with the go command on PATH (the Makefile
// exports its toolchain), with -race when this test binary has it, and
// returns its path.
func Build(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "koshactl")
	args := []string{"build", "-o", bin}
	if raceEnabled() {
		args = append(args, "-race")
	}
	args = append(args, "github.com/kosha-platform/koshactl/cmd/koshactl")
	if out, err := exec.CommandContext(ctx, "go", args...).CombinedOutput(); err != nil { //nolint:gosec // G204: builds this module's binary into the caller's directory
		return "", fmt.Errorf("go %v: %w\n%s", args, err, out)
	}
	return bin, nil
}

// raceEnabled reports whether this test binary was built with -race.
func raceEnabled() bool {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, kv := range bi.Settings {
			if kv.Key == "-race" {
				return kv.Value == "true"
			}
		}
	}
	return false
}
