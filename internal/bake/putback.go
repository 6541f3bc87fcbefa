package bake

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Errors of a bake's end.
var (
	// ErrRolledBack: the clear did not hold and its override was put back
	// (exit 15).
	ErrRolledBack = exitcode.New(exitcode.RolledBack, "the clear did not hold: its override was put back")
	// ErrNoSuchAlarm: an alarm named with --alarm does not exist (exit 3).
	ErrNoSuchAlarm = exitcode.New(exitcode.NotFound, "no such alarm")
)

// Cleared is one override a clear removed, and the clear's record.
type Cleared struct {
	Dependency string
	// Record is the clear's audit record; the put-back names it.
	Record audit.Record
	// Before is the override the clear removed.
	Before breaker.Override
}

// PutBack is what became of one cleared override after a bake that did
// not hold.
type PutBack struct {
	Dependency string
	// Result says whether it was put back, left alone (written since) or
	// had expired.
	Result breaker.RollbackResult
	// Record is the put-back's record (zero when none was written).
	Record audit.Record
	// Confirmed: the store's answer was lost and the put-back settled as
	// landed. Token is the put-back's change (the item's write_id).
	Confirmed bool
	Token     string
	// Event announces the put-back (nil when nothing was written).
	Event *notify.Event
	// Err is why it could not be put back (refused by the table's policy,
	// the store unreachable, an unknown outcome).
	Err error
}

// Rollback puts back, through svc (the context's levers under the table's
// policy), the overrides of cleared that res tripped: each in its own
// transaction with its record (a breaker.force-open naming the clear's
// record in rollback_of), conditional on the item still absent as the clear
// left it. Nothing is put back when res did not fail. actor is who acts
// ("": the service's actor).
func Rollback(ctx context.Context, svc lever.Changer, actor string, res Result, cleared []Cleared) []PutBack {
	if !res.Verdict.Failed() {
		return nil
	}
	var out []PutBack
	for _, c := range cleared {
		if !slices.Contains(res.Tripped, c.Dependency) {
			continue
		}
		reason := audit.TruncateReason(textsafe.Line(fmt.Sprintf("bake: rollback of the clear %s of %s: %s", c.Record.ID, c.Dependency, res.Why)))
		r, rep, err := breaker.PutBack(ctx, svc, c.Dependency, actor, reason, c.Record, c.Before)
		pb := PutBack{Dependency: c.Dependency, Result: r, Err: err, Event: rep.Event}
		if len(rep.Outcomes) > 0 && rep.Outcomes[0].Written {
			pb.Record, pb.Confirmed, pb.Token = rep.Outcomes[0].Record, rep.Outcomes[0].Confirmed, rep.Outcomes[0].Token
		}
		out = append(out, pb)
	}
	return out
}

// Err is the error a bake ends with (nil when the fleet held): its exit
// code says what happened to the clear, its one line what to do.
//
//   - Interrupted (130): the clear stands, nothing was put back.
//   - Lost (5, or 6 when denied): the clear stands; nothing was put back
//     on no evidence.
//   - Failed: 15 when an override was put back; 4 when one was written
//     since the clear (left alone); 1 when its expiry had passed; the
//     put-back's own failure otherwise (7 refused by the table's policy, 5
//     unavailable, 8 unknown). The gravest wins (exitcode's precedence).
func Err(res Result, puts []PutBack) error {
	switch res.Verdict {
	case Held:
		return nil
	case Interrupted:
		return exitcode.Errorf(exitcode.Interrupted, "interrupted during the bake: the clear stands and nothing was put back; watch the fleet with koshactl breaker status")
	case Lost:
		msg := res.Why + "; the clear stands and nothing was put back (putting an override back on no evidence could itself be the outage): check the fleet with koshactl breaker status"
		if res.Err != nil {
			return exitcode.Default(exitcode.Unavailable, fmt.Errorf("%s: %w", msg, res.Err))
		}
		return exitcode.Errorf(exitcode.Unavailable, "%s", msg)
	case Reopened, AlarmBad:
	}
	var errs []error
	var lines []string
	for _, p := range puts {
		switch r := p.Result; {
		case p.Err != nil:
			errs = append(errs, p.Err)
			lines = append(lines, fmt.Sprintf("%s was not put back: %s", p.Dependency, textsafe.OneLine(p.Err.Error())))
		case r.Restored != nil:
			errs = append(errs, ErrRolledBack)
			lines = append(lines, fmt.Sprintf("%s: its override was put back (record %s)", p.Dependency, p.Record.ID))
		case r.LeftAlone != nil:
			errs = append(errs, lever.ErrConflict)
			lines = append(lines, fmt.Sprintf("%s was not put back: someone wrote its override since the clear (%s), left as it is", p.Dependency,
				textsafe.Line(textsafe.Truncate(r.LeftAlone.Actor, textsafe.MaxQuoted))))
		case r.Expired:
			errs = append(errs, errors.New("expired"))
			lines = append(lines, fmt.Sprintf("%s was not put back: the override's expiry has passed, it would have lapsed by now", p.Dependency))
		}
	}
	return exitcode.Errorf(exitcode.KindOf(errors.Join(errs...)), "%s: %s", res.Why, strings.Join(lines, "; "))
}
