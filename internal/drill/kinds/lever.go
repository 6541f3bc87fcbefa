package kinds

import (
	"time"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
	"github.com/kosha-platform/koshactl/internal/store"
)

// What the lever files (lever_override.go, lever_bucket.go,
// lever_chaos.go) share: each holds one lever's kinds, plan, rollback,
// journal record and recovery.

// stepReason is the reason a step's change is recorded with: the step's
// reason: when it names one, else "step ID".
func stepReason(rc *runtime.RunContext, t drill.Template) (string, error) {
	why := "step " + rc.CurrentStep()
	if !t.IsZero() {
		var err error
		if why, err = rc.Expand(t); err != nil {
			return "", err
		}
	}
	rc.SetStepReason(why)
	return why, nil
}

// confirmed is the note a change whose first answer was lost carries.
func confirmed(c bool) string {
	if !c {
		return ""
	}
	return " (" + store.ConfirmedNote + ")"
}

// expiryText says when an override lapses.
func expiryText(t time.Time) string {
	if t.IsZero() {
		return "no expiry"
	}
	return "expires " + t.UTC().Format(time.RFC3339)
}

// policyTarget is a lever's target as the table's policy judges it: t
// resolved, or "" while it names a step's output (known only during the
// run).
func policyTarget(rc *runtime.RunContext, t drill.Template) string {
	s, err := rc.Expand(t)
	if err != nil {
		return ""
	}
	return s
}
