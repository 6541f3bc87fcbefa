package runner

import (
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/notify"
)

// drillLevers are the levers a drill registered a rollback for (explicit
// rollback steps left out: they move nothing of their own), each said as
// its rollback left it: moved (rollbacks not run yet), rolled back, or not
// rolled back with when it lapses on its own.
func drillLevers(rbs []drill.RollbackRecord) []notify.Lever {
	var ls []notify.Lever
	for _, r := range rbs {
		if r.Explicit {
			continue
		}
		l := notify.Lever{Subject: r.Subject, ExpiresAt: r.ExpiresAt}
		switch r.Status {
		case drill.StatusOK:
			l.Change, l.ExpiresAt = "moved by the drill, rolled back", nil
		case drill.StatusPending, drill.StatusRunning:
			l.Change = "moved by the drill: " + r.Description
		default:
			l.Change = "NOT rolled back (" + r.Status + "): " + r.Error
		}
		ls = append(ls, l)
	}
	return ls
}
