package runner

import (
	"github.com/kosha-platform/koshactl/internal/drill"
)

// rollbacksOK reports whether every rollback of j restored its lever (or
// there was none). A lever change and its audit record are one write, so
// a rollback is ok, or it failed, or was abandoned: there is no lever
// restored without its record.
func rollbacksOK(j *drill.Journal) bool {
	for _, rb := range j.Rollbacks {
		if rb.Status != drill.StatusOK {
			return false
		}
	}
	return true
}
