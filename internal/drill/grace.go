package drill

import (
	"fmt"
	"time"

	"github.com/kosha-platform/koshactl/internal/human"
)

// Defaults and bounds of guard_grace.
const (
	// DefaultGuardGracePolls and DefaultGuardGraceFor: a guard is lost at
	// the first failed evaluation that is at least the 3rd in a row and at
	// least 30 s after the first of them.
	DefaultGuardGracePolls = 3
	DefaultGuardGraceFor   = 30 * time.Second
	// MaxGuardGracePolls bounds guard_grace.polls.
	MaxGuardGracePolls = 1000
)

// GuardGrace is how long a guard may stay unevaluable during a run: it is
// lost at the first failed evaluation that is at least Polls in a row AND
// at least For after the first of them (both must pass, so neither a burst
// of fast polls nor one slow poll ends a drill).
type GuardGrace struct {
	Polls int
	For   time.Duration
}

// DefaultGuardGrace is the grace of a drill that sets no guard_grace.
func DefaultGuardGrace() GuardGrace {
	return GuardGrace{Polls: DefaultGuardGracePolls, For: DefaultGuardGraceFor}
}

// String reads "3 polls and 30s".
func (g GuardGrace) String() string {
	return fmt.Sprintf("%s and %s", human.Count(int64(g.Polls), "poll"), human.Duration(g.For))
}

// What a guard's evaluation error does during the run (on_error).
const (
	// OnErrorStop (the default): an error past the grace loses the guard.
	OnErrorStop = "stop"
	// OnErrorContinue: errors are noticed and the run goes on (the guard
	// is blind meanwhile). The preflight still evaluates it.
	OnErrorContinue = "continue"
)

// Roles of a guard, for messages and the journal.
const (
	RoleStopCondition = "stop condition"
	RoleHypothesis    = "hypothesis check"
	RoleWaitFor       = "wait-for step"
)
