//go:build unix

package kinds

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/kosha-platform/koshactl/internal/drill/drilltest"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

func TestShellStepEnvironmentAndOutputs(t *testing.T) {
	e := drilltest.NewEnv(t)
	e.Deps.Environ = []string{"PATH=" + os.Getenv("PATH"), "BASE=from-koshactl"}
	d := drilltest.Parse(t, Builtin(), `
name: shells
timeout: 1m
vars:
  my-var: hello
steps:
  - id: first
    shell: printf 'one\ntwo\n'; echo warn >&2
  - id: second
    shell:
      run: echo "$DRILL_STEP_FIRST_STDOUT|$DRILL_STEP_FIRST_STDERR|$DRILL_VAR_MY_VAR|$EXTRA|$BASE|$DRILL_NAME|$DRILL_CONTEXT|$(pwd)"
      env: {EXTRA: "${vars.my-var}-${steps.first.exit_code}"}
      dir: /
  - id: third
    shell: {run: "exit 3", exit_code: 3}
  - id: big
    shell: head -c 100000 /dev/zero | tr '\0' x
`)
	steps, _ := e.Steps(context.Background(), e.RunContext(d))
	if len(steps) != 4 || steps[3].Err != nil {
		t.Fatalf("steps %+v", steps)
	}
	if got := steps[0].Outputs.Public(); got["stdout"] != "one\ntwo" || got["stderr"] != "warn" || got["exit_code"] != "0" {
		t.Errorf("first outputs = %q", got)
	}
	if got := steps[1].Outputs.Public()["stdout"]; got != "one\ntwo|warn|hello|hello-0|from-koshactl|shells|test|/" {
		t.Errorf("second stdout = %q", got)
	}
	big := steps[3].Outputs.Public()["stdout"]
	if !strings.HasPrefix(big, strings.Repeat("x", MaxShellOutput)) || !strings.HasSuffix(big, "... ("+strconv.Itoa(100000-MaxShellOutput)+" more bytes not kept)") {
		t.Errorf("big output kept %d bytes: ...%q", len(big), big[max(0, len(big)-60):])
	}
}

// An interrupted shell step kills the command's whole process group, so
// nothing it started outlives the step.
func TestShellStepKillsItsProcessGroupOnInterrupt(t *testing.T) {
	e := drilltest.NewEnv(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	e.Deps.Environ = []string{"PATH=" + os.Getenv("PATH"), "PIDFILE=" + pidFile}
	d := drilltest.Parse(t, Builtin(), `
name: kill
timeout: 1m
steps:
  - id: long
    shell: sleep 300 & echo $! > "$PIDFILE.tmp" && mv "$PIDFILE.tmp" "$PIDFILE"; wait
`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var pid int
	go func() {
		// Off the test's goroutine: a step that ends first ends the wait,
		// and the test then finds pid unset.
		_ = wait.For(ctx, "the shell step's child to write its pid", func() bool {
			b, err := os.ReadFile(pidFile)
			if err != nil {
				return false
			}
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			cancel()
			return true
		})
	}()
	steps, _ := e.Steps(ctx, e.RunContext(d))
	if steps[0].Err == nil || ctx.Err() == nil {
		t.Fatalf("the step ended without the interrupt: %v", steps[0].Err)
	}
	if pid == 0 {
		t.Fatal("the command never started its child")
	}
	// The child (sleep 300) must be gone: poll until the kernel reaped it.
	wait.Until(t, fmt.Sprintf("process %d, started by the shell step, to end after the interrupt", pid), func() bool {
		return syscall.Kill(pid, 0) != nil
	})
}
