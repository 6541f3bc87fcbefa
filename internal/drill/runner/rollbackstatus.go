package runner

import (
	"github.com/kosha-platform/koshactl/internal/drill"
)

// rollbackStatus is the one rule, for drill run and drill recover alike, of
// what a rollback's Undo result says about its lever: nil is ok, and any
// error is failed (the run's caller tells an abandoned or timed-out one
// apart). A lever change and its record are one transaction, so there is
// no lever restored without its record. msg is not yet redacted.
func rollbackStatus(err error, _ string) (status, msg string) {
	if err == nil {
		return drill.StatusOK, ""
	}
	return drill.StatusFailed, err.Error()
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
