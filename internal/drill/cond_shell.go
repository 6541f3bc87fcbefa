package drill

import (
	"context"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// ShellConditionKind is the shell condition: it holds when a command exits
// with the expected code (default 0). Same fields as the shell step.
type ShellConditionKind struct{}

var _ ConditionKind = ShellConditionKind{}

// Name implements ConditionKind.
func (ShellConditionKind) Name() string { return "shell" }

// Summary implements ConditionKind.
func (ShellConditionKind) Summary() string {
	return "holds when a shell command exits with the expected code (default 0)"
}

// Decode implements ConditionKind.
func (ShellConditionKind) Decode(d *Decoder, n *yaml.Node) Condition {
	s := decodeShell(d, n, "shell")
	if s == nil {
		return nil
	}
	return &shellCondition{spec: s}
}

type shellCondition struct{ spec *shellSpec }

func (c *shellCondition) Describe(rc *RunContext) string { return c.spec.describe(rc) }

func (c *shellCondition) Check(ctx context.Context, rc *RunContext) (Observation, error) {
	r, err := c.spec.exec(ctx, rc)
	if err != nil {
		return Observation{}, err
	}
	if r.exitCode != c.spec.exitCode {
		return Observation{Detail: r.failure(c.spec.exitCode)}, nil
	}
	return Observation{Holds: true, Detail: fmt.Sprintf("exit code %d", r.exitCode)}, nil
}
