package kinds

import (
	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/drill"
)

// Builtin returns the table of every kind koshactl ships: a closed set,
// one file per kind. It allocates on each call, so no package-level work
// is done for commands that do not parse drills.
func Builtin() *drill.Registry {
	return &drill.Registry{
		Steps: []drill.StepKind{
			breakerForceOpenKind,
			breakerClearKind,
			rateLimitDrainKind,
			rateLimitResetKind,
			rateLimitSetKind,
			chaosSignKind,
			httpStepKind,
			waitForKind,
			assertKind,
			sleepKind,
			shellStepKind,
		},
		Conditions: []drill.ConditionKind{
			httpConditionKind,
			breakerConditionKind,
			bucketConditionKind,
			shellConditionKind,
			alarmConditionKind,
		},
	}
}

// decodeFunc checks a kind's value (the node under the kind key),
// recording every problem on d, and returns the spec, or nil.
type decodeFunc func(d *drill.Decoder, n *yaml.Node) drill.Spec

// stepKind describes a step kind (drill.StepKind): the key that selects it,
// what `drill kinds` says of it, its outputs, and its Decode.
type stepKind struct {
	name, summary string
	outputs       []string
	decode        decodeFunc
}

func (k stepKind) Name() string                                     { return k.name }
func (k stepKind) Summary() string                                  { return k.summary }
func (k stepKind) Outputs() []string                                { return k.outputs }
func (k stepKind) Decode(d *drill.Decoder, n *yaml.Node) drill.Spec { return k.decode(d, n) }

// leverKind describes a step kind whose steps move a lever
// (drill.MutatingKind): its specs implement runtime.Mutating.
type leverKind struct {
	stepKind
	lever string
}

func (k leverKind) Lever() string { return k.lever }

// conditionKind describes a condition kind (drill.ConditionKind) as a
// stepKind does a step kind, without outputs.
type conditionKind = stepKind

var (
	_ drill.MutatingKind  = leverKind{}
	_ drill.ConditionKind = conditionKind{}
)
