package handoff_test

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/cmd/handoff"
	"github.com/kosha-platform/koshactl/internal/testutil/koshabin"
)

// run runs bin with args in an environment of its own (a local context in
// dir), and returns its exit code and output.
func run(t *testing.T, dir, bin string, extraEnv []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, args...) //nolint:gosec // G204: the binary under test
	cmd.Env = append(os.Environ(), append([]string{"KOSHACTL_CONFIG=" + filepath.Join(dir, "config.yaml"),
		"KOSHACTL_STATE_DIR=" + filepath.Join(dir, "state"), "KOSHACTL_CONTEXT="}, extraEnv...)...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if exit, ok := err.(*exec.ExitError); ok {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %v: %v", bin, args, err)
	}
	return code, out.String(), errOut.String()
}

// The two programs as installed: koshactl serves what it links, and hands
// the rest to koshactl-full beside it (found through a link to koshactl on
// another directory too); without it, it says what to install; the full
// program refuses a front of another build.
func TestTheFrontAndTheFullProgram(t *testing.T) {
	t.Parallel()
	bin := koshabin.Path(t)
	dir := t.TempDir()

	// Served by the front, handed over: a local context's store, --jq, a
	// group the front does not link (its help).
	if code, out, errOut := run(t, dir, bin, nil, "version"); code != 0 || !strings.HasPrefix(out, "koshactl ") {
		t.Errorf("version: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := run(t, dir, bin, nil, "breaker", "list"); code != 0 || !strings.Contains(out, "No breaker overrides") {
		t.Errorf("breaker list on the local context: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := run(t, dir, bin, nil, "version", "-o", "json", "--jq", ".go_version"); code != 0 || !strings.HasPrefix(out, "go1.") {
		t.Errorf("version --jq: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := run(t, dir, bin, nil, "mcp", "--help"); code != 0 || !strings.Contains(out, "koshactl mcp") {
		t.Errorf("mcp --help: exit %d\n%s%s", code, out, errOut)
	}
	if runtime.GOOS != "windows" {
		links := t.TempDir()
		link := filepath.Join(links, "koshactl")
		if err := os.Symlink(bin, link); err != nil {
			t.Fatal(err)
		}
		if code, out, errOut := run(t, dir, link, nil, "breaker", "list"); code != 0 || !strings.Contains(out, "No breaker overrides") {
			t.Errorf("breaker list through a link: exit %d\n%s%s", code, out, errOut)
		}
	}

	// A config file others may write is warned about once, by the front
	// that read it before handing the run over.
	if runtime.GOOS != "windows" {
		loose := t.TempDir()
		cfg := filepath.Join(loose, "config.yaml")
		if err := os.WriteFile(cfg, []byte("current-context: local\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(cfg, 0o666); err != nil { //nolint:gosec // G302: the world-writable config this test must see refused
			t.Fatal(err)
		}
		code, out, errOut := run(t, loose, bin, nil, "breaker", "list")
		if code != 0 || !strings.Contains(out, "No breaker overrides") || strings.Count(errOut, "chmod 600") != 1 {
			t.Errorf("breaker list with a loose config file: exit %d\n%s%s\nwant the warning once", code, out, errOut)
		}
	}

	// The front alone.
	alone := filepath.Join(t.TempDir(), "koshactl")
	copyFile(t, bin, alone)
	if code, out, errOut := run(t, dir, alone, nil, "version"); code != 0 || !strings.HasPrefix(out, "koshactl ") {
		t.Errorf("version without the full program: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := run(t, dir, alone, nil, "mcp")
	if code != 5 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "koshactl mcp needs "+handoff.Full) ||
		!strings.Contains(errOut, "install both programs") {
		t.Errorf("mcp without the full program: exit %d, stdout %q, stderr %q; want exit 5 and one line saying what to install", code, out, errOut)
	}

	// A front of another build.
	full := filepath.Join(filepath.Dir(bin), handoff.Full)
	code, _, errOut = run(t, dir, full, []string{handoff.EnvFrontVersion + "=v0.0.1 0000000"}, "version")
	if code != 5 || !strings.Contains(errOut, "install both programs from one release") {
		t.Errorf("the full program under a front of another build: exit %d, stderr %q", code, errOut)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755) //nolint:gosec // G302: a program the test runs must be executable
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
