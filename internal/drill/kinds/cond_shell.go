package kinds

import (
	"context"
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
)

// shellConditionKind is the shell condition: it holds when a command exits
// with the expected code (default 0). Same fields as the shell step.
var shellConditionKind = conditionKind{name: "shell", summary: "holds when a shell command exits with the expected code (default 0)",
	decode: decodeShellCondition}

func decodeShellCondition(d *drill.Decoder, n *yaml.Node) drill.Spec {
	s := decodeShell(d, n, "shell")
	if s == nil {
		return nil
	}
	return &shellCondition{spec: s}
}

type shellCondition struct{ spec *shellSpec }

func (c *shellCondition) Describe(rc *runtime.RunContext) string { return c.spec.describe(rc) }

func (c *shellCondition) Check(ctx context.Context, rc *runtime.RunContext) (runtime.Observation, error) {
	r, err := c.spec.exec(ctx, rc)
	if err != nil {
		return runtime.Observation{}, err
	}
	if r.exitCode != c.spec.exitCode {
		return runtime.Observation{Detail: r.failure(c.spec.exitCode)}, nil
	}
	return runtime.Observation{Holds: true, Detail: fmt.Sprintf("exit code %d", r.exitCode)}, nil
}
