package breaker

import (
	"errors"
	"time"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/lever"
)

// ForceRequest is a force-open as the command line asks it, its flags
// unchecked: [Overrides.ForceRequested] applies every rule of a new
// override to it in one place and words each refusal for the flag that
// made it (an agent's proposal is [Overrides.Proposed]'s).
type ForceRequest struct {
	Reason       string
	Dependencies []string
	// For is how long the override lasts (--for); Until (--until, RFC3339)
	// or NoExpiry (--no-expiry) replaces it.
	For      time.Duration
	Until    string
	NoExpiry bool
	// Yes is the operator's confirmation (--yes): NoExpiry needs it.
	Yes       bool
	Overwrite bool
	// Known are the context's dependencies, each name checked against
	// them; AllowUnknown (--allow-unknown) accepts any valid name.
	Known        []string
	AllowUnknown bool
}

// ForceRequested checks r by the override's rules (the reason, the
// lifetime under the service's duration policy, the dependencies) and
// returns its change, or the first refusal as a usage error (exit 2) that
// names the flag and the fix. Nothing is read.
func (s *Overrides) ForceRequested(r ForceRequest) (lever.Change, error) {
	if err := CheckForceReason(r.Reason); err != nil {
		if errors.Is(err, ErrReasonRequired) {
			return lever.Change{}, exitcode.Errorf(exitcode.Usage, "a reason is required: pass --reason \"what is happening\" (it is shown to everyone who looks at this override)")
		}
		return lever.Change{}, err
	}
	expires, forDur, err := r.expiry(s.clock.Now(), s.durations)
	if err != nil {
		return lever.Change{}, err
	}
	if err := DependencyArgs(r.Dependencies, r.Known, r.AllowUnknown); err != nil {
		return lever.Change{}, err
	}
	c := ForceOpen(r.Reason, ForceParams{For: forDur, ExpiresAt: expires, NoExpiry: r.NoExpiry, Overwrite: r.Overwrite}, r.Dependencies...)
	if !r.AllowUnknown {
		c.Known = r.Known
	}
	return c, nil
}

// expiry applies the duration policy p to the request's lifetime at now and
// words its refusal for the flags.
func (r ForceRequest) expiry(now time.Time, p DurationPolicy) (time.Time, time.Duration, error) {
	usagef := func(format string, args ...any) (time.Time, time.Duration, error) {
		return time.Time{}, 0, exitcode.Errorf(exitcode.Usage, format, args...)
	}
	l := LastFor(r.For)
	switch {
	case r.NoExpiry:
		if !r.Yes {
			return usagef("--no-expiry leaves the fleet degraded until someone clears it: add --yes to confirm, or use --for")
		}
		l = NoExpiry()
	case r.Until != "":
		t, err := time.Parse(time.RFC3339, r.Until)
		if err != nil {
			return usagef("--until %q is not an RFC3339 time: write it like 2026-11-29T18:00:00Z", r.Until)
		}
		l = LastUntil(t)
	}
	expires, forDur, err := p.ExpiresAt(now, l)
	var de *DurationError
	if !errors.As(err, &de) {
		return expires, forDur, err
	}
	if r.Until != "" {
		switch de.Problem {
		case ErrExpiryPast:
			return usagef("--until %s is in the past: give a future time, or use --for", r.Until)
		case ErrDurationTooShort:
			return usagef("--until %s: %v; give a time at least %s away", r.Until, err, human.Duration(MinOverride))
		}
		return usagef("--until is %s away, over this context's max-override of %s: pick an earlier time", human.Age(de.Duration), de.Limit)
	}
	switch de.Problem {
	case ErrDurationNotPositive:
		return usagef("--for %s is not positive: give a duration like 30m or 2h", human.Duration(r.For))
	case ErrDurationTooShort:
		return usagef("--for %v; use --for %s or more", err, human.Duration(MinOverride))
	}
	return usagef("--for %s is over this context's max-override of %s: use a shorter duration (or raise max-override with koshactl config set-context)", human.Duration(r.For), human.Duration(de.Limit))
}

// DependencyArgs checks the dependencies a command line names by
// [CheckDependencies] (against known, or any valid name under
// --allow-unknown), its refusals usage errors (exit 2) and an unknown
// name's with the command line's ways past it.
func DependencyArgs(names, known []string, allowUnknown bool) error {
	if allowUnknown {
		known = nil
	}
	err := CheckDependencies(names, known)
	var unknown *UnknownDependencyError
	switch {
	case errors.As(err, &unknown):
		return exitcode.Errorf(exitcode.Usage, "%v; add it with koshactl config set-context --add-dependency, or pass --allow-unknown", err)
	case errors.Is(err, ErrInvalidDependency), errors.Is(err, ErrNamedTwice):
		return exitcode.Wrap(exitcode.Usage, err)
	}
	return err
}
