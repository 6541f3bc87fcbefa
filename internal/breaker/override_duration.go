package breaker

import (
	"fmt"
	"time"
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
