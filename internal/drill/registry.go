package drill

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/metrics"
)

// StepKind is one kind of drill step, selected in a drill file by the key
// Name() (for example breaker.force-open). Implementations are stateless
// descriptors; Decode turns a step's YAML into an [Action].
type StepKind interface {
	// Name is the key that selects the kind.
	Name() string
	// Summary describes the kind in one line (koshactl drill kinds).
	Summary() string
	// Outputs lists the outputs a step of this kind produces, for
	// ${steps.ID.OUTPUT}; a name ending in ".*" stands for a family
	// (json.* covers json.result.degraded).
	Outputs() []string
	// Decode checks the kind's value (the node under the kind key),
	// recording every problem on d, and returns the action, or nil when
	// the value is unusable.
	Decode(d *Decoder, n *yaml.Node) Action
}

// Action is a decoded step, ready to run.
type Action interface {
	// Describe says what the step does, in a few words, with references
	// resolved where they can be ("force openai open for 2m").
	Describe(rc *RunContext) string
	// Run performs the step within ctx, which carries the step's timeout.
	Run(ctx context.Context, rc *RunContext) (*Outputs, error)
}

// MutatingKind is a step kind whose steps change the system: its actions
// implement [Mutating]. Whether a kind mutates is its type's to say; no
// table lists it again.
type MutatingKind interface {
	StepKind
	// Lever is the kind of lever its steps move, as the journal records
	// it ([LeverOverride], [LeverBucket], [LeverChaos]).
	Lever() string
}

// Mutates reports whether steps of kind k change the system and register
// their own rollback.
func Mutates(k StepKind) bool {
	_, ok := k.(MutatingKind)
	return ok
}

// Mutating is implemented by actions that change the system. The runner
// calls Prepare before Run and registers the rollback it returns before
// Run acts; a nil Rollback means there is nothing new to restore (the
// lever already has its rollback from an earlier step). If Prepare fails
// the step fails and Run is not called.
type Mutating interface {
	Prepare(ctx context.Context, rc *RunContext) (Rollback, error)
	// Plan says which lever the step moves, its inverse and its expiry,
	// without acting (koshactl drill plan).
	Plan(rc *RunContext) *PlanLever
}

// PlanLever is a lever a step moves.
type PlanLever struct {
	// Subject is the item: breaker#openai, rl#agent-1, chaos#STEP.
	Subject string `json:"subject"`
	// Inverse is what the rollback does.
	Inverse string `json:"inverse"`
	// ExpiresWithinSeconds bounds how long the lever stays moved if no
	// rollback runs (zero: it does not lapse, see Expiry).
	ExpiresWithinSeconds float64 `json:"expires_within_seconds,omitempty"`
	// Expiry says how the bound is computed.
	Expiry string `json:"expiry"`
}

// Rollback restores what a step changed. Undo must be idempotent: it may
// run after the step failed half-way, or after the step never acted.
type Rollback interface {
	// Subject names what is restored, e.g. breaker#openai or rl#client.
	Subject() string
	// Describe says what Undo will do, e.g. "clear the drill's override".
	Describe() string
	// Undo restores the subject and says what it did ("cleared",
	// "already clear").
	Undo(ctx context.Context, rc *RunContext) (string, error)
	// ExpiresAt returns when the lever also lapses on its own (zero: not
	// known yet, or never); the journal lists it, so an operator knows the
	// worst case after a kill.
	ExpiresAt() time.Time
	// LeverRecord describes the lever for the journal, so `drill recover`
	// can finish the rollback without this process; nil leaves the
	// journal's record as it is.
	LeverRecord() *LeverRecord
}

// ConditionKind is one kind of condition: hypothesis checks, stop
// conditions, wait-for and assert use them. It is selected by the key
// Name() (http, breaker, bucket, shell, alarm).
type ConditionKind interface {
	// Name is the key that selects the kind.
	Name() string
	// Summary describes the kind in one line.
	Summary() string
	// Decode checks the condition's YAML and returns it, or nil.
	Decode(d *Decoder, n *yaml.Node) Condition
}

// Condition is a decoded check.
type Condition interface {
	// Describe says what is checked ("breaker openai is open in the gauges").
	Describe(rc *RunContext) string
	// Check evaluates the condition once. Observation.Holds says whether
	// it holds; an error means it could not be evaluated at all (the
	// endpoint did not answer), which never counts as holding.
	Check(ctx context.Context, rc *RunContext) (Observation, error)
}

// Observation is what one evaluation of a condition saw.
type Observation struct {
	// Holds reports whether the condition holds.
	Holds bool
	// Detail says what was observed, for logs ("2 of 2 instances open").
	Detail string
	// Alarms are the CloudWatch alarms that made an alarm condition hold
	// (name, state, reason, since), for the journal's stop record.
	Alarms []metrics.Alarm
}

// Registry is the closed set of kinds a parser accepts: a plain table,
// built by kinds.Builtin (tests build their own).
type Registry struct {
	// Steps are the step kinds.
	Steps []StepKind
	// Conditions are the condition kinds.
	Conditions []ConditionKind
}

// Check reports what makes the table unusable: a kind name that is empty,
// listed twice or a common field (a step's id, a check's within).
func (r *Registry) Check() error {
	var errs []error
	seen := map[string]bool{}
	for _, k := range r.Steps {
		n := k.Name()
		if n == "" || slices.Contains(stepFields, n) || seen[n] {
			errs = append(errs, fmt.Errorf("step kind %q: empty, reserved or listed twice", n))
		}
		seen[n] = true
	}
	seen = map[string]bool{}
	for _, k := range r.Conditions {
		n := k.Name()
		if n == "" || slices.Contains(checkFields, n) || seen[n] {
			errs = append(errs, fmt.Errorf("condition kind %q: empty, reserved or listed twice", n))
		}
		seen[n] = true
	}
	return errors.Join(errs...)
}

// Step returns the step kind called name.
func (r *Registry) Step(name string) (StepKind, bool) {
	for _, k := range r.Steps {
		if k.Name() == name {
			return k, true
		}
	}
	return nil, false
}

// Condition returns the condition kind called name.
func (r *Registry) Condition(name string) (ConditionKind, bool) {
	for _, k := range r.Conditions {
		if k.Name() == name {
			return k, true
		}
	}
	return nil, false
}

// StepKinds returns the step kinds sorted by name.
func (r *Registry) StepKinds() []StepKind {
	out := slices.Clone(r.Steps)
	slices.SortFunc(out, func(a, b StepKind) int { return strings.Compare(a.Name(), b.Name()) })
	return out
}

// ConditionKinds returns the condition kinds sorted by name.
func (r *Registry) ConditionKinds() []ConditionKind {
	out := slices.Clone(r.Conditions)
	slices.SortFunc(out, func(a, b ConditionKind) int { return strings.Compare(a.Name(), b.Name()) })
	return out
}

func (r *Registry) stepNames() []string {
	out := make([]string, 0, len(r.Steps))
	for _, k := range r.Steps {
		out = append(out, k.Name())
	}
	slices.Sort(out)
	return out
}

func (r *Registry) conditionNames() []string {
	out := make([]string, 0, len(r.Conditions))
	for _, k := range r.Conditions {
		out = append(out, k.Name())
	}
	slices.Sort(out)
	return out
}
