package kinds

import (
	"context"
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
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
