package breaker

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/human"
)

// MinOverride is the shortest override koshactl writes: the data plane's
// override cache period ([CacheTTL], 5 s). An instance reads
// the override at most that often, so a shorter one can lapse before any
// instance has seen it: "Forced open" would be reported for a lever that
// never moved. Restoring an override someone else set (a drill's rollback)
// keeps its expiry whatever is left of it.
const MinOverride = CacheTTL

// DefaultFor is how long a new override lasts when its writer names no
// duration: `koshactl breaker force-open` without --for, and the duration
// the dashboard's force-open prompt proposes.
const DefaultFor = time.Hour

// DefaultMaxOverride is the longest override a policy allows when it is
// given no maximum; a context's default (internal/config) is the same
// (TestTheDefaultMaxOverrideIsTheContexts).
const DefaultMaxOverride = 24 * time.Hour

// Problems a [DurationPolicy] finds, matched with errors.Is on a
// *[DurationError].
var (
	ErrDurationNotPositive = errors.New("override duration not positive")
	ErrDurationTooShort    = errors.New("override shorter than the minimum")
	ErrDurationTooLong     = errors.New("override longer than the context's max-override")
	ErrExpiryPast          = errors.New("override expiry in the past")
)

// DurationError reports a duration (or an expiry, as the time left until
// it) that a [DurationPolicy] refuses. Its message says what is wrong in
// the policy's terms; each surface (a flag, a drill key, a prompt) words
// its own fix.
type DurationError struct {
	// Problem is one of ErrDurationNotPositive, ErrDurationTooShort,
	// ErrDurationTooLong, ErrExpiryPast.
	Problem error
	// Duration is the duration asked for (for an expiry: the time until it).
	Duration time.Duration
	// Limit is the bound it crossed: [MinOverride] or the context's maximum.
	Limit time.Duration
}

func (e *DurationError) Error() string {
	switch e.Problem {
	case ErrDurationNotPositive:
		return fmt.Sprintf("%s is not positive", human.Duration(e.Duration))
	case ErrDurationTooShort:
		return fmt.Sprintf("%s is under the %s minimum: a shorter override lapses before the fleet reads it (the data plane's override cache period)", human.Duration(e.Duration), human.Duration(e.Limit))
	case ErrDurationTooLong:
		return fmt.Sprintf("%s is over this context's max-override of %s", human.Duration(e.Duration), human.Duration(e.Limit))
	case ErrExpiryPast:
		return "the expiry is in the past"
	}
	return e.Problem.Error()
}

// Unwrap returns the problem.
func (e *DurationError) Unwrap() error { return e.Problem }

// DurationPolicy is the one rule for how long a new override lasts in a
// context: at least [MinOverride], at most the context's max-override,
// [DefaultFor] when the writer names nothing. The CLI, the dashboard and a
// drill all ask it.
type DurationPolicy struct {
	// Max is the context's max-override; zero means [DefaultMaxOverride].
	Max time.Duration
}

// MaxFor returns the longest override the policy allows.
func (p DurationPolicy) MaxFor() time.Duration {
	if p.Max <= 0 {
		return DefaultMaxOverride
	}
	return p.Max
}

// CheckFor reports whether a new override may last d: positive, at least
// [MinOverride], at most [DurationPolicy.MaxFor]. The error is a
// *[DurationError].
func (p DurationPolicy) CheckFor(d time.Duration) error {
	switch {
	case d <= 0:
		return &DurationError{Problem: ErrDurationNotPositive, Duration: d}
	case d < MinOverride:
		return &DurationError{Problem: ErrDurationTooShort, Duration: d, Limit: MinOverride}
	case d > p.MaxFor():
		return &DurationError{Problem: ErrDurationTooLong, Duration: d, Limit: p.MaxFor()}
	}
	return nil
}

// Lifetime is what a writer asks of a new override's expiry: a duration
// ([LastFor]), a time ([LastUntil]) or none ([NoExpiry]). A writer that
// names nothing asks for [DefaultFor] (the flag's and the prompt's
// default).
type Lifetime struct {
	kind  lifetimeKind
	d     time.Duration
	until time.Time
}

type lifetimeKind int

const (
	lastFor lifetimeKind = iota
	lastUntil
	lastForever
)

// LastFor asks for an override that lasts d.
func LastFor(d time.Duration) Lifetime { return Lifetime{kind: lastFor, d: d} }

// LastUntil asks for an override that lapses at t.
func LastUntil(t time.Time) Lifetime { return Lifetime{kind: lastUntil, until: t} }

// NoExpiry asks for an override that never lapses.
func NoExpiry() Lifetime { return Lifetime{kind: lastForever} }

// ExpiresAt returns when an override written at now with lifetime l lapses
// (the zero time for [NoExpiry]: confirming that is the surface's job), and
// the duration to write beside it ([LastFor]'s, else zero). A [LastUntil]
// time must be in the future and obey [DurationPolicy.CheckFor] as the time
// left until it. The error is a *[DurationError].
func (p DurationPolicy) ExpiresAt(now time.Time, l Lifetime) (time.Time, time.Duration, error) {
	switch l.kind {
	case lastForever:
		return time.Time{}, 0, nil
	case lastUntil:
		left := l.until.Sub(now)
		if !l.until.After(now) {
			return time.Time{}, 0, &DurationError{Problem: ErrExpiryPast, Duration: left}
		}
		if err := p.CheckFor(left); err != nil {
			return time.Time{}, 0, err
		}
		return l.until, 0, nil
	case lastFor:
	}
	// lastFor (the zero Lifetime's kind): a duration from now.
	if err := p.CheckFor(l.d); err != nil {
		return time.Time{}, 0, err
	}
	return now.Add(l.d), l.d, nil
}

// Bounded returns how long an override written now may last when it must
// lapse by deadline (a drill's): the earliest of forDur (when positive),
// the time left until deadline (none when past it) and [DurationPolicy.MaxFor], rounded down to
// the millisecond. byDeadline is true when the deadline is the bound: the
// caller then writes the deadline itself as the expiry, since an expiry
// computed from a duration measured before the write can land past it. The
// error is a *[DurationError] (ErrDurationTooShort) when less than
// [MinOverride] is left.
func (p DurationPolicy) Bounded(now, deadline time.Time, forDur time.Duration) (d time.Duration, byDeadline bool, err error) {
	d, byDeadline = max(deadline.Sub(now), 0), true
	if forDur > 0 && forDur < d {
		d, byDeadline = forDur, false
	}
	if m := p.MaxFor(); d > m {
		d, byDeadline = m, false
	}
	d = d.Truncate(time.Millisecond)
	if d < MinOverride {
		return d, byDeadline, &DurationError{Problem: ErrDurationTooShort, Duration: d, Limit: MinOverride}
	}
	return d, byDeadline, nil
}

// CheckOverrideDuration reports whether a new override lasting d may be
// written in any context: anything shorter than [MinOverride] is refused
// with an error naming the minimum (a *[DurationError]). A context's
// maximum is [DurationPolicy.CheckFor]'s.
func CheckOverrideDuration(d time.Duration) error {
	if d < MinOverride {
		return &DurationError{Problem: ErrDurationTooShort, Duration: d, Limit: MinOverride}
	}
	return nil
}

// ErrNoExpiryUnconfirmed reports an override that never lapses, asked for
// without the operator's confirmation.
var ErrNoExpiryUnconfirmed = errors.New("an override without expiry leaves the fleet degraded until someone clears it: it needs confirmation (--yes)")

// checkRestore applies the policy to an override put back as it was (a
// drill's rollback restoring someone else's): it keeps what is left of its
// expiry, so [MinOverride] does not apply, but that is at most
// [DurationPolicy.MaxFor]; an override that never lapses needs the
// operator's confirmation (noExpiryConfirmed).
func (p DurationPolicy) checkRestore(now, expiresAt time.Time, noExpiryConfirmed bool) error {
	if expiresAt.IsZero() {
		if !noExpiryConfirmed {
			return ErrNoExpiryUnconfirmed
		}
		return nil
	}
	left := expiresAt.Sub(now)
	if left <= 0 {
		return fmt.Errorf("it expired at %s", expiresAt.UTC().Format(time.RFC3339))
	}
	if left > p.MaxFor() {
		return &DurationError{Problem: ErrDurationTooLong, Duration: left.Round(time.Second), Limit: p.MaxFor()}
	}
	return nil
}

// CheckRestore applies to o, an override about to be put back as it was
// (a drill's recovered rollback restoring the override the drill replaced or
// cleared), every rule a new override's write follows: a valid dependency, a
// forced_open item that follows the contract, a reason and an actor by the
// audit rule, and the context's expiry rules (what is left of its expiry,
// at most max-override; none only when confirmed).
func CheckRestore(o Override, now time.Time, p DurationPolicy, noExpiryConfirmed bool) error {
	if err := ValidateDependency(o.Dependency); err != nil {
		return err
	}
	if o.Malformed() {
		return fmt.Errorf("the override of %s is malformed (%s: %s): restore it by hand", o.Dependency, o.Problems[0].Attribute, o.Problems[0].Problem)
	}
	if err := CheckForceReason(o.Reason); err != nil {
		return fmt.Errorf("its reason: %w", err)
	}
	if strings.TrimSpace(o.Actor) == "" {
		return errors.New("it names no actor")
	}
	if err := audit.ValidateActor(o.Actor); err != nil {
		return err
	}
	return p.checkRestore(now, o.ExpiresAt, noExpiryConfirmed)
}
