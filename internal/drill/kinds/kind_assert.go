package kinds

import (
	"context"
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/drill"
)

// AssertKind is the assert step: check a condition once; the step fails
// when it does not hold.
//
//	assert:
//	  bucket: {client: drill-client, admit: false}
//
// Output: detail (what was observed).
type AssertKind struct{}

var _ drill.StepKind = AssertKind{}

// Name implements StepKind.
func (AssertKind) Name() string { return "assert" }

// Summary implements StepKind.
func (AssertKind) Summary() string {
	return "check a condition once; fail the step when it does not hold"
}

// Outputs implements StepKind.
func (AssertKind) Outputs() []string { return []string{"detail"} }

// Decode implements StepKind.
func (AssertKind) Decode(d *drill.Decoder, n *yaml.Node) drill.Action {
	m := d.Map(n, "assert")
	if m == nil {
		return nil
	}
	c := d.NestedCondition(m, "assert")
	if c == nil {
		return nil
	}
	return &assertStep{cond: c}
}

type assertStep struct{ cond drill.Condition }

func (a *assertStep) Describe(rc *drill.RunContext) string {
	return fmt.Sprintf("assert %s", a.cond.Describe(rc))
}

func (a *assertStep) Run(ctx context.Context, rc *drill.RunContext) (*drill.Outputs, error) {
	obs, err := a.cond.Check(ctx, rc)
	if err != nil {
		return nil, err
	}
	out := drill.NewOutputs().Set("detail", rc.Redact(obs.Detail))
	if !obs.Holds {
		return out, fmt.Errorf("%w: %s", drill.ErrNotMet, rc.Redact(obs.Detail))
	}
	out.Detail = rc.Redact(obs.Detail)
	return out, nil
}
