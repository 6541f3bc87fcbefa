package drill

import (
	"context"
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

// Mutating is implemented by actions that change the system. The runner
// calls Prepare before Run and registers the rollback it returns before
// Run acts; a nil Rollback means there is nothing new to restore (the
// lever already has its rollback from an earlier step). If Prepare fails
// the step fails and Run is not called.
type Mutating interface {
	Prepare(ctx context.Context, rc *RunContext) (Rollback, error)
}

// MutatingKind is implemented by step kinds whose actions implement
// [Mutating], so listings can say which kinds roll back on their own.
type MutatingKind interface {
	StepKind
	// Mutates reports that steps of this kind register a rollback.
	Mutates() bool
}

// Mutates reports whether steps of kind k register their own rollback.
func Mutates(k StepKind) bool {
	m, ok := k.(MutatingKind)
	return ok && m.Mutates()
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
}

// Expiring is implemented by rollbacks whose lever also lapses on its own;
// the journal lists when, so an operator knows the worst case after a kill.
type Expiring interface {
	// ExpiresAt returns when the lever lapses by itself (zero: not known
	// yet, or never).
	ExpiresAt() time.Time
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

// Registry holds the step and condition kinds a parser accepts. Build it
// with [NewRegistry] and register kinds explicitly, or use [Builtin].
type Registry struct {
	steps      map[string]StepKind
	conditions map[string]ConditionKind
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{steps: map[string]StepKind{}, conditions: map[string]ConditionKind{}}
}

// RegisterStep adds a step kind. Registering a name twice, or a name that
// is also a common step field, is an error.
func (r *Registry) RegisterStep(k StepKind) error {
	name := k.Name()
	if name == "" || slices.Contains(stepFields, name) {
		return fmt.Errorf("register step kind: %q is reserved", name)
	}
	if _, dup := r.steps[name]; dup {
		return fmt.Errorf("register step kind: %q is already registered", name)
	}
	r.steps[name] = k
	return nil
}

// RegisterCondition adds a condition kind.
func (r *Registry) RegisterCondition(k ConditionKind) error {
	name := k.Name()
	if name == "" || slices.Contains(checkFields, name) {
		return fmt.Errorf("register condition kind: %q is reserved", name)
	}
	if _, dup := r.conditions[name]; dup {
		return fmt.Errorf("register condition kind: %q is already registered", name)
	}
	r.conditions[name] = k
	return nil
}

// Step returns the step kind called name.
func (r *Registry) Step(name string) (StepKind, bool) { k, ok := r.steps[name]; return k, ok }

// Condition returns the condition kind called name.
func (r *Registry) Condition(name string) (ConditionKind, bool) {
	k, ok := r.conditions[name]
	return k, ok
}

// StepKinds returns the step kinds sorted by name.
func (r *Registry) StepKinds() []StepKind {
	out := make([]StepKind, 0, len(r.steps))
	for _, k := range r.steps {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b StepKind) int { return strings.Compare(a.Name(), b.Name()) })
	return out
}

// ConditionKinds returns the condition kinds sorted by name.
func (r *Registry) ConditionKinds() []ConditionKind {
	out := make([]ConditionKind, 0, len(r.conditions))
	for _, k := range r.conditions {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b ConditionKind) int { return strings.Compare(a.Name(), b.Name()) })
	return out
}

func (r *Registry) stepNames() []string {
	out := make([]string, 0, len(r.steps))
	for n := range r.steps {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func (r *Registry) conditionNames() []string {
	out := make([]string, 0, len(r.conditions))
	for n := range r.conditions {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Builtin returns a registry with every kind koshactl ships, registered
// explicitly. Each kind lives in its own kind_*.go or cond_*.go file.
func Builtin() *Registry {
	r := NewRegistry()
	for _, k := range []StepKind{
		BreakerForceOpenKind{},
		BreakerClearKind{},
		RateLimitDrainKind{},
		RateLimitResetKind{},
		RateLimitSetKind{},
		ChaosSignKind{},
		HTTPStepKind{},
		WaitForKind{},
		AssertKind{},
		SleepKind{},
		ShellStepKind{},
	} {
		if err := r.RegisterStep(k); err != nil {
			panic(err) // a programming error in this list
		}
	}
	for _, k := range []ConditionKind{
		HTTPConditionKind{},
		BreakerConditionKind{},
		BucketConditionKind{},
		ShellConditionKind{},
		AlarmConditionKind{},
	} {
		if err := r.RegisterCondition(k); err != nil {
			panic(err)
		}
	}
	return r
}
