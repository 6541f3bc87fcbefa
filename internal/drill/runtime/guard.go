package runtime

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/store"
)

// A guard is what keeps a drill safe while its levers are pulled: a stop
// condition, a hypothesis check, the condition a wait-for step waits on. A
// guard that cannot be evaluated (its alarm matches nothing, the caller is
// denied, the source is unreachable or throttled past its retries) is never
// taken for "all quiet": before any lever is pulled the run refuses
// (preflight), and during the run a guard that stays unevaluable past its
// grace stops the steps and rolls back ("guard lost"), unless the drill
// says on_error: continue for it (docs/contracts/drill-file.md).

// ErrNoMatch reports a condition whose names match nothing (an alarm name
// or prefix no alarm has): a typo must never disarm a guard.
var ErrNoMatch = exitcode.New(exitcode.NotFound, "the condition matches nothing")

// fixed is an evaluation error that knows its class and its fix.
type fixed struct {
	err   error
	class error
	fix   string
}

func (f *fixed) Error() string { return f.err.Error() }
func (f *fixed) Unwrap() []error {
	if f.class == nil {
		return []error{f.err}
	}
	return []error{f.err, f.class}
}

// WithFix attaches fix (how to make the condition evaluable) and, when not
// nil, a class (such as [ErrNoMatch]) to err. The message stays err's.
func WithFix(err, class error, fix string) error {
	if err == nil {
		return nil
	}
	return &fixed{err: err, class: class, fix: fix}
}

// GuardFix says how to make a guard that failed with err evaluable again:
// the fix the condition or its source attached, else one by the error's
// class.
func GuardFix(err error) string {
	var f *fixed
	if errors.As(err, &f) && f.fix != "" {
		return f.fix
	}
	switch {
	case errors.Is(err, ErrNoMatch):
		return "check the names the condition uses"
	case errors.Is(err, metrics.ErrDenied), errors.Is(err, store.ErrCredentials):
		return "grant the caller read access (koshactl iam policy --role drill-runner shows what a drill needs), or refresh the credentials"
	case errors.Is(err, ErrNoService):
		return "configure that source on the context"
	case errors.Is(err, metrics.ErrUnavailable), errors.Is(err, store.ErrUnavailable), errors.Is(err, store.ErrThrottled):
		return "check that the source is reachable (or, when throttled, raise poll_interval) and run the drill again"
	}
	return "fix what the condition reads, or run the drill again once it can be read"
}

// GuardFailure is the failure of a guard that could not be evaluated (a
// run refused at preflight, or ended by a lost guard), with err the guard's
// last evaluation error; [exitcode.Of] gives the run's exit code from it
// (docs/exit-codes.md): a guard reuses the kind of its cause when that is
// one the contract names (it matches nothing, [ErrNoMatch]: not found;
// denied: auth; the run lacks the source, [ErrNoService]: usage), and is
// unavailable otherwise (unreachable, throttled, timed out, unreadable).
func GuardFailure(err error) error {
	switch exitcode.KindOf(err) {
	case exitcode.NotFound, exitcode.Auth, exitcode.Usage:
		return err
	}
	return exitcode.Wrap(exitcode.Unavailable, err)
}

// GuardLostError ends a run whose guard stayed unevaluable past its grace.
type GuardLostError struct {
	// Role and Name say which guard ("stop condition", its name).
	Role, Name string
	// Polls are the failed evaluations in a row; Since the first of them;
	// For how long it has been unevaluable.
	Polls int
	Since time.Time
	For   time.Duration
	Grace drill.GuardGrace
	// Err is the last evaluation error.
	Err error
}

func (e *GuardLostError) Error() string {
	return fmt.Sprintf("guard lost: %s %q could not be evaluated for %d polls over %s (grace %s): %v",
		e.Role, e.Name, e.Polls, human.Duration(drill.DisplayPrecision(e.For)), e.Grace, e.Err)
}

func (e *GuardLostError) Unwrap() error { return e.Err }

// GuardState follows one guard's failed evaluations in a row during a run.
// It is not safe for concurrent use.
type GuardState struct {
	Grace drill.GuardGrace
	polls int
	since time.Time
	last  error
}

// Poll records one evaluation at now, err saying it could not be
// evaluated: lost, once the guard has been unevaluable past its grace
// (named role and name), and recovered, when it can be evaluated again
// after failing.
func (g *GuardState) Poll(now time.Time, err error, role, name string) (lost *GuardLostError, recovered bool) {
	if err == nil {
		recovered = g.polls > 0
		g.polls, g.since, g.last = 0, time.Time{}, nil
		return nil, recovered
	}
	if g.polls == 0 {
		g.since = now
	}
	g.polls++
	g.last = err
	if g.polls >= max(g.Grace.Polls, 1) && now.Sub(g.since) >= g.Grace.For {
		lost = &GuardLostError{Role: role, Name: name, Polls: g.polls, Since: g.since, For: now.Sub(g.since), Grace: g.Grace, Err: g.last}
	}
	return lost, false
}

// PollResult is how a polled condition ended.
type PollResult struct {
	Obs   Observation
	Err   error // the last evaluation error, if the last poll had one
	Polls int
	// Elapsed is measured on the run's clock.
	Elapsed time.Duration
}

// ErrNotMet reports a condition that did not hold in time.
var ErrNotMet = errors.New("condition not met")

// PollSpec says how [Poll] polls: until the condition holds or Within has
// passed (zero: once), every Interval, each evaluation bounded by Attempt;
// OnChange is called when the observed detail changes.
type PollSpec struct {
	Within, Interval, Attempt time.Duration
	OnChange                  func(string)
	// Guard, when set, makes the condition a guard: once its evaluations
	// have failed past Guard.Grace, the poll ends with a *GuardLostError
	// (Role and Name from Guard) instead of polling on blind.
	Guard *PollGuard
}

// PollGuard names a polled guard and its grace.
type PollGuard struct {
	Role, Name string
	Grace      drill.GuardGrace
}

// Poll evaluates cond as spec says. The returned error is nil when the
// condition held, wraps ErrNotMet when it did not in time, is a
// *GuardLostError when its guard was lost, and is ctx's error when ctx
// ended first.
func Poll(ctx context.Context, rc *RunContext, cond Condition, spec PollSpec) (PollResult, error) {
	within, onChange := spec.Within, spec.OnChange
	interval, attempt := cmp.Or(max(spec.Interval, 0), drill.DefaultPollInterval), cmp.Or(max(spec.Attempt, 0), drill.DefaultCheckTimeout)
	var guard *GuardState
	if spec.Guard != nil {
		guard = &GuardState{Grace: spec.Guard.Grace}
	}
	// Everything is measured on the run's clock: how long within has run,
	// and the wait between polls.
	start := rc.Now()
	var res PollResult
	last := ""
	for {
		res.Polls++
		actx, cancel := context.WithTimeout(WithAlarmRound(ctx), attempt)
		obs, err := cond.Check(actx, rc)
		cancel()
		res.Elapsed = rc.Now().Sub(start)
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		res.Obs, res.Err = obs, err
		if err == nil && obs.Holds {
			return res, nil
		}
		detail := obs.Detail
		var lost *GuardLostError
		if err != nil {
			detail = "could not check: " + rc.Redact(err.Error())
		}
		if guard != nil {
			lost, _ = guard.Poll(rc.Now(), err, spec.Guard.Role, spec.Guard.Name)
		}
		if detail != last && onChange != nil {
			onChange(detail)
		}
		if lost != nil {
			return res, lost
		}
		last = detail
		if within <= 0 {
			return res, fmt.Errorf("%w: %s", ErrNotMet, detail)
		}
		notMet := fmt.Errorf("%w within %s (%s); last: %s", ErrNotMet, within, human.Count(int64(res.Polls), "check"), detail)
		left := within - rc.Now().Sub(start)
		if left <= 0 {
			return res, notMet
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-rc.After(min(interval, left)):
		}
		if rc.Now().Sub(start) >= within {
			return res, notMet
		}
	}
}
