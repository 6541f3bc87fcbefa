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
	return errors.Join(checkNames("step", r.Steps, stepFields), checkNames("condition", r.Conditions, checkFields))
}

// named is what a step kind and a condition kind share.
type named interface{ Name() string }

func checkNames[K named](noun string, kinds []K, reserved []string) error {
	var errs []error
	seen := map[string]bool{}
	for _, k := range kinds {
		n := k.Name()
		if n == "" || slices.Contains(reserved, n) || seen[n] {
			errs = append(errs, fmt.Errorf("%s kind %q: empty, reserved or listed twice", noun, n))
		}
		seen[n] = true
	}
	return errors.Join(errs...)
}

// Step returns the step kind called name.
func (r *Registry) Step(name string) (StepKind, bool) { return find(r.Steps, name) }

// Condition returns the condition kind called name.
func (r *Registry) Condition(name string) (ConditionKind, bool) { return find(r.Conditions, name) }

func find[K named](kinds []K, name string) (K, bool) {
	i := slices.IndexFunc(kinds, func(k K) bool { return k.Name() == name })
	if i < 0 {
		var none K
		return none, false
	}
	return kinds[i], true
}

// StepKinds returns the step kinds sorted by name.
func (r *Registry) StepKinds() []StepKind { return byName(r.Steps) }

// ConditionKinds returns the condition kinds sorted by name.
func (r *Registry) ConditionKinds() []ConditionKind { return byName(r.Conditions) }

func byName[K named](kinds []K) []K {
	return slices.SortedFunc(slices.Values(kinds), func(a, b K) int { return strings.Compare(a.Name(), b.Name()) })
}

// names returns the kinds' names, sorted.
func names[K named](kinds []K) []string {
	out := make([]string, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, k.Name())
	}
	slices.Sort(out)
	return out
}
