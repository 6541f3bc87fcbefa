package runtime

import (
	"context"
	"time"

	"github.com/kosha-platform/koshactl/internal/drill"
)

// Action is a decoded step, ready to run: the spec of a step
// ([drill.Step.Spec]) as its kind decoded it.
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
	// Action and Target are the lever as the table's policy judges it
	// (internal/policy: breaker.force-open and a dependency, ratelimit.drain
	// and a client); Action is empty for a lever no policy names (a chaos
	// header), Target when it comes from a step's output, unknown until the
	// run.
	Action string `json:"action,omitempty"`
	Target string `json:"target,omitempty"`
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
	LeverRecord() *drill.LeverRecord
}

// Condition is a decoded check: the spec of a check
// ([drill.Check.Spec]) or of a condition a step holds.
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
	Alarms []drill.Alarm
}

// DefaultTimeouter is implemented by actions that need more than the
// default step timeout (sleep, wait-for): the runner uses it when the step
// sets no timeout of its own.
type DefaultTimeouter interface {
	DefaultTimeout() time.Duration
}

// ActionOf is step s's behavior: its spec as an [Action].
func ActionOf(s *drill.Step) Action { return s.Spec.(Action) }

// ConditionOf is check c's behavior: its spec as a [Condition].
func ConditionOf(c *drill.Check) Condition { return c.Spec.(Condition) }
