package runner

import (
	"errors"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
)

// rollbackStatus is the one rule, for drill run and drill recover alike, of
// what a rollback's Undo result says about its lever: nil is ok; an error
// wrapping [audit.ErrAuditWrite] is unaudited (the change was made and is
// not retried: the lever is restored, its audit record is what is missing),
// its message naming the `audit repair` that writes the record on context
// contextName, or, when the store holds nothing to write it from, saying to
// record the change by hand; any other error is failed (the run's caller
// tells an abandoned or timed-out one apart), and so is a bucket write
// whose outcome is unknown (ratelimit.ErrOutcomeUnknown matches
// ErrAuditWrite for its exit code, but the lever may not be back). msg is
// not yet redacted.
func rollbackStatus(err error, contextName string) (status, msg string) {
	switch {
	case err == nil:
		return drill.StatusOK, ""
	case errors.Is(err, ratelimit.ErrOutcomeUnknown):
		return drill.StatusFailed, err.Error()
	case errors.Is(err, audit.ErrAuditWrite):
		msg = err.Error()
		var unwritten *audit.UnwrittenError
		if errors.As(err, &unwritten) && unwritten.Repairable() {
			return drill.StatusUnaudited, msg + "; write it with: " + unwritten.RepairCommand(contextName)
		}
		return drill.StatusUnaudited, msg + "; no audit repair can write it (nothing is stored to write it from): record the change by hand"
	default:
		return drill.StatusFailed, err.Error()
	}
}

// rollbacksLeft says how a journal's rollbacks left its levers: restored
// is true when every rollback restored its lever (ok or unaudited, or there
// was none), unaudited counts those whose change has no audit record.
func rollbacksLeft(j *drill.Journal) (restored bool, unaudited int) {
	restored = true
	for _, rb := range j.Rollbacks {
		switch rb.Status {
		case drill.StatusOK:
		case drill.StatusUnaudited:
			unaudited++
		default:
			restored = false
		}
	}
	return restored, unaudited
}
