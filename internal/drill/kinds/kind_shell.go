package kinds

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// shellStepKind is the shell step: run a command for anything the other
// kinds do not cover (the shell condition, below, runs it the same way).
//
//	shell: ./scripts/check.sh             # or:
//	shell:
//	  run: curl -fsS "$DRILL_VAR_SANDBOX/healthz"
//	  shell: /bin/sh                      # default /bin/sh, run as SHELL -c RUN
//	  env: {EXTRA: "${vars.x}"}
//	  dir: ./scripts
//	  exit_code: 0                        # the exit code that passes (default 0)
//	rollback: {shell: ./scripts/undo.sh}  # a step-level rollback, if it changes things
//
// RUN takes no ${...} references: what a drill reads is data, and spliced
// into a command it would be code. Values reach the command only through
// its environment: DRILL_NAME, DRILL_RUN_ID, DRILL_CONTEXT, DRILL_DEADLINE,
// every variable as DRILL_VAR_NAME, every named output of earlier steps as
// DRILL_STEP_ID_OUTPUT, and env (templated). Stdout and stderr are kept up to
// 64 KiB each (secrets redacted). On interrupt or timeout the command's
// whole process group is killed.
var shellStepKind = stepKind{name: "shell",
	summary: "run a shell command (step outputs in its environment); give it a rollback if it changes things",
	outputs: []string{"stdout", "stderr", "exit_code"}, decode: decodeShellKind}

// shellConditionKind is the shell condition: it holds when a command exits
// with the expected code (default 0). Same fields as the shell step.
var shellConditionKind = conditionKind{name: "shell", summary: "holds when a shell command exits with the expected code (default 0)",
	decode: decodeShellKind}

func decodeShellKind(d *drill.Decoder, n *yaml.Node) drill.Spec {
	s := decodeShell(d, n, "shell")
	if s == nil {
		return nil
	}
	return &shellStep{spec: s}
}

// shellStep is a shell step (Run) or condition (Check): the command, run
// and judged by its exit code alike.
type shellStep struct{ spec *shellSpec }

func (a *shellStep) Describe(rc *runtime.RunContext) string { return a.spec.describe(rc) }

func (a *shellStep) Run(ctx context.Context, rc *runtime.RunContext) (*runtime.Outputs, error) {
	r, err := a.spec.exec(ctx, rc)
	if err != nil {
		if r != nil {
			return shellOutputs(r), err
		}
		return nil, err
	}
	out := shellOutputs(r)
	if r.exitCode != a.spec.exitCode {
		return out, fmt.Errorf("command failed: %s", r.failure(a.spec.exitCode))
	}
	out.Detail = fmt.Sprintf("exit code %d", r.exitCode)
	return out, nil
}

func (a *shellStep) Check(ctx context.Context, rc *runtime.RunContext) (runtime.Observation, error) {
	r, err := a.spec.exec(ctx, rc)
	if err != nil {
		return runtime.Observation{}, err
	}
	if r.exitCode != a.spec.exitCode {
		return runtime.Observation{Detail: r.failure(a.spec.exitCode)}, nil
	}
	return runtime.Observation{Holds: true, Detail: fmt.Sprintf("exit code %d", r.exitCode)}, nil
}

// Shell limits.
const (
	// DefaultShell runs shell commands.
	DefaultShell = "/bin/sh"
	// MaxShellOutput bounds what is kept of a command's stdout and of its
	// stderr; the rest is counted and dropped.
	MaxShellOutput = 64 << 10
	// shellWaitDelay is how long a killed command's pipes may stay open
	// (held by its own children) before koshactl stops waiting for them.
	shellWaitDelay = 2 * time.Second
)

// shellSpec is a command as shell steps and conditions write it.
type shellSpec struct {
	run      drill.Template
	shell    string
	env      []drill.NamedTemplate
	dir      drill.Template
	exitCode int
}

var shellFields = []string{"run", "shell", "env", "dir", "exit_code"}

func decodeShell(d *drill.Decoder, n *yaml.Node, what string) *shellSpec {
	n = d.Resolve(n)
	if n == nil {
		return nil
	}
	s := &shellSpec{shell: DefaultShell}
	if n.Kind == yaml.ScalarNode {
		t, ok := d.Command(n, what)
		if !ok {
			return nil
		}
		s.run = t
		return s
	}
	m := d.Fields(n, what, shellFields...)
	if m == nil {
		return nil
	}
	var ok bool
	s.run, ok = m.Command("run", true)
	if sh, present := m.String("shell", false); present {
		s.shell = sh
	}
	s.env = m.TemplateMap("env")
	for _, e := range s.env {
		if !drill.ValidEnvName(e.Name) {
			d.Errorf(m.KeyNode("env"), "%s: env: %q is not an environment variable name", what, e.Name)
			ok = false
		}
	}
	s.dir, _ = m.Template("dir", false)
	if c, present := m.Int("exit_code", false); present {
		if c < 0 || c > 255 {
			m.Errorf("exit_code", "%d is not an exit code (0-255)", c)
			ok = false
		}
		s.exitCode = c
	}
	if !ok {
		return nil
	}
	return s
}

// environ builds the command's environment: the run's ([RunContext.Environ]),
// then the spec's own env. This is the only way values reach a command
// (its text takes no references). An env: value holding NUL, which the
// environment cannot carry, is an error.
func (s *shellSpec) environ(rc *runtime.RunContext) ([]string, error) {
	env := rc.Environ()
	for _, e := range s.env {
		v, err := rc.Expand(e.Value)
		if err != nil {
			return nil, err
		}
		if !drill.EnvCarries(v) {
			return nil, fmt.Errorf("env %s: the value holds a NUL byte, which an environment variable cannot carry", e.Name)
		}
		env = append(env, e.Name+"="+v)
	}
	return env, nil
}

// capped keeps the first max bytes written and counts the rest.
type capped struct {
	buf     bytes.Buffer
	max     int
	dropped int
}

func (c *capped) Write(p []byte) (int, error) {
	room := c.max - c.buf.Len()
	if room >= len(p) {
		c.buf.Write(p)
		return len(p), nil
	}
	if room > 0 {
		c.buf.Write(p[:room])
	}
	c.dropped += len(p) - max(room, 0)
	return len(p), nil
}

func (c *capped) String() string {
	s := strings.TrimRight(c.buf.String(), "\n")
	if c.dropped > 0 {
		s += fmt.Sprintf("\n... (%d more bytes not kept)", c.dropped)
	}
	return s
}

// shellResult is a finished command.
type shellResult struct {
	stdout, stderr string
	exitCode       int
}

// exec runs the command within ctx; on cancellation the whole process
// group is killed.
func (s *shellSpec) exec(ctx context.Context, rc *runtime.RunContext) (*shellResult, error) {
	// The parser refuses references in a command; a command built in code
	// is held to the same rule here, at the sink.
	script, static := s.run.Static()
	if !static {
		return nil, fmt.Errorf("%s: a shell command takes no ${...} references: pass values in its env", firstLine(s.run.String()))
	}
	env, err := s.environ(rc)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, s.shell, "-c", script) //nolint:gosec // G204: running the drill author's command is the shell step's purpose
	cmd.Env = env
	if !s.dir.IsZero() {
		if cmd.Dir, err = rc.Expand(s.dir); err != nil {
			return nil, err
		}
	}
	stdout, stderr := &capped{max: MaxShellOutput}, &capped{max: MaxShellOutput}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = shellWaitDelay
	killGroup(cmd)
	err = cmd.Run()
	res := &shellResult{stdout: rc.Redact(stdout.String()), stderr: rc.Redact(stderr.String()), exitCode: -1}
	if cmd.ProcessState != nil {
		res.exitCode = cmd.ProcessState.ExitCode()
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return res, fmt.Errorf("run %s: %w", s.shell, err)
	}
	return res, nil
}

func (r *shellResult) failure(want int) string {
	msg := fmt.Sprintf("exit code %d, want %d", r.exitCode, want)
	if r.stderr != "" { // its last three lines
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		msg += ": " + strings.Join(lines[max(len(lines)-3, 0):], " | ")
	}
	return msg
}

// firstLine is a command's first line as a step is described, cut for
// display at 120 characters.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return textsafe.Shorten(line, 120)
}

func (s *shellSpec) describe(rc *runtime.RunContext) string {
	return "run: " + firstLine(rc.Describe(s.run))
}

func shellOutputs(r *shellResult) *runtime.Outputs {
	return runtime.NewOutputs().Set("stdout", r.stdout).Set("stderr", r.stderr).Set("exit_code", strconv.Itoa(r.exitCode))
}
