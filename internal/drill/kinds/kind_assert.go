package kinds

import (
	"context"
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
)

// assertKind is the assert step: check a condition once; the step fails
// when it does not hold.
//
//	assert:
//	  bucket: {client: drill-client, admit: false}
//
// Output: detail (what was observed).
var assertKind = stepKind{name: "assert", summary: "check a condition once; fail the step when it does not hold",
	outputs: []string{"detail"}, decode: decodeAssert}

func decodeAssert(d *drill.Decoder, n *yaml.Node) drill.Spec {
	m := d.Map(n, "assert")
	if m == nil {
		return nil
	}
	c := d.NestedCondition(m, "assert")
	if c == nil {
		return nil
	}
	return &assertStep{cond: c.(runtime.Condition)}
}

type assertStep struct{ cond runtime.Condition }

func (a *assertStep) Describe(rc *runtime.RunContext) string {
	return fmt.Sprintf("assert %s", a.cond.Describe(rc))
}

func (a *assertStep) Run(ctx context.Context, rc *runtime.RunContext) (*runtime.Outputs, error) {
	obs, err := a.cond.Check(ctx, rc)
	if err != nil {
		return nil, err
	}
	out := runtime.NewOutputs().Set("detail", rc.Redact(obs.Detail))
	if !obs.Holds {
		return out, fmt.Errorf("%w: %s", runtime.ErrNotMet, rc.Redact(obs.Detail))
	}
	out.Detail = rc.Redact(obs.Detail)
	return out, nil
}
