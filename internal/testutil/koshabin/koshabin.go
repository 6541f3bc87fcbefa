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

// Full is the name of the full program beside the binary (the front hands
// it what the front does not link: internal/cmd/handoff).
const Full = "koshactl-full"

// FromEnv returns the binary [Env] names, if it is set: an error when it,
// or the full program beside it, is not an executable regular file.
func FromEnv() (bin string, set bool, err error) {
	bin = os.Getenv(Env)
	if bin == "" {
		return "", false, nil
	}
	for _, p := range []string{bin, filepath.Join(filepath.Dir(bin), Full)} {
		fi, err := os.Stat(p) //nolint:gosec // G703: the path make test gives the tests, checked and never written
		switch {
		case err != nil:
			return "", true, fmt.Errorf("%s=%q: %w: run make test, which builds it, or unset %s", Env, bin, err, Env)
		case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0:
			return "", true, fmt.Errorf("%s=%q: %s is not an executable file: run make test, which builds it, or unset %s", Env, bin, p, Env)
		}
	}
	return bin, true, nil
}

// Build builds koshactl and the full program beside it into dir with the
// go command on PATH (the Makefile exports its toolchain), with -race when
// this test binary has it, and returns koshactl's path.
func Build(ctx context.Context, dir string) (string, error) {
	for _, prog := range []string{"koshactl", Full} {
		args := []string{"build", "-o", filepath.Join(dir, prog)}
		if raceEnabled() {
			args = append(args, "-race")
		}
		args = append(args, "github.com/kosha-platform/koshactl/cmd/"+prog)
		if out, err := exec.CommandContext(ctx, "go", args...).CombinedOutput(); err != nil { //nolint:gosec // G204: builds this module's binaries into the caller's directory
			return "", fmt.Errorf("go %v: %w\n%s", args, err, out)
		}
	}
	return filepath.Join(dir, "koshactl"), nil
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
