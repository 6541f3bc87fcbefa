package drill

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// StepKind is one kind of drill step, selected in a drill file by the key
// Name() (for example breaker.force-open). Implementations are stateless
// descriptors; Decode turns a step's YAML into its [Spec].
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
	// recording every problem on d, and returns the step's spec, or nil
	// when the value is unusable.
	Decode(d *Decoder, n *yaml.Node) Spec
}

// Spec is a step's or a condition's decoded kind value, as its kind's
// Decode returned it. The file model holds it without knowing what it
// does; package runtime gives it behavior (runtime.Action,
// runtime.Condition), which every spec of a kind in kinds.Builtin has.
type Spec = any

// MutatingKind is a step kind whose steps change the system: its specs
// implement runtime.Mutating. Whether a kind mutates is its type's to say; no
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

// ConditionKind is one kind of condition: hypothesis checks, stop
// conditions, wait-for and assert use them. It is selected by the key
// Name() (http, breaker, bucket, shell, alarm).
type ConditionKind interface {
	// Name is the key that selects the kind.
	Name() string
	// Summary describes the kind in one line.
	Summary() string
	// Decode checks the condition's YAML and returns its spec, or nil.
	Decode(d *Decoder, n *yaml.Node) Spec
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
