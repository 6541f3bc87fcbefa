package breaker

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
)

// MinOverride is the shortest override koshactl writes: the data plane's
// override cache period ([CacheTTL], 5 s). An instance reads
// the override at most that often, so a shorter one can lapse before any
// instance has seen it: "Forced open" would be reported for a lever that
// never moved. Restoring an override someone else set (a drill's rollback)
// keeps its expiry whatever is left of it.
const MinOverride = CacheTTL

// CheckOverrideDuration reports whether a new override lasting d may be
// written: anything shorter than [MinOverride] is refused with an error
// naming the minimum. Callers that also cap the duration (max-override)
// check that separately.
func CheckOverrideDuration(d time.Duration) error {
	if d < MinOverride {
		return fmt.Errorf("%s is under the %s minimum: a shorter override lapses before the fleet reads it (the data plane's override cache period)", d, MinOverride)
	}
	return nil
}

// ExpiryRules are the limits a context puts on how long a new override
// lasts: the rule the force-open command, the dashboard and a drill's
// recovered restore share.
type ExpiryRules struct {
	// Max is the context's max-override: an override may lapse at most
	// this long after it is written. Zero means no cap.
	Max time.Duration
	// NoExpiryConfirmed is true when the operator confirmed an override
	// that never lapses (force-open's --no-expiry --yes, recover's --yes).
	NoExpiryConfirmed bool
	// Restore is true for putting back an override someone else held
	// (a drill's rollback): it keeps what is left of its expiry, so the
	// [MinOverride] minimum does not apply.
	Restore bool
}

// ErrNoExpiryUnconfirmed reports an override that never lapses, asked for
// without the operator's confirmation.
var ErrNoExpiryUnconfirmed = errors.New("an override without expiry leaves the fleet degraded until someone clears it: it needs confirmation (--yes)")

// Check applies the rules to an override written at now that lapses at
// expiresAt (zero: never).
func (r ExpiryRules) Check(now, expiresAt time.Time) error {
	if expiresAt.IsZero() {
		if !r.NoExpiryConfirmed {
			return ErrNoExpiryUnconfirmed
		}
		return nil
	}
	left := expiresAt.Sub(now)
	if left <= 0 {
		return fmt.Errorf("it expired at %s", expiresAt.UTC().Format(time.RFC3339))
	}
	if !r.Restore {
		if err := CheckOverrideDuration(left); err != nil {
			return err
		}
	}
	if r.Max > 0 && left > r.Max {
		return fmt.Errorf("it lapses %s from now, over this context's max-override of %s", left.Round(time.Second), r.Max)
	}
	return nil
}

// CheckRestore applies to o, an override about to be put back as it was
// (a drill's recovered rollback restoring the override the drill replaced or
// cleared), every rule a new override's write follows: a valid dependency, a
// forced_open item that follows the contract, a reason and an actor by the
// audit rule, and the context's expiry rules (what is left of its expiry,
// at most max-override; none only when confirmed).
func CheckRestore(o Override, now time.Time, rules ExpiryRules) error {
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
	rules.Restore = true
	return rules.Check(now, o.ExpiresAt)
}
