package kinds

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
)

// Recovering a rollback: the journal says which lever to look at; the
// lever's item and the audit trail say what to do. A journal is a file
// that passes through other hands, and an audit record can be planted by
// whoever may write one: an override is restored only while its item
// carries the write_id of one of the run's changes, and the before-image
// comes from the run's audit record of that very change (the record whose
// change token is the item's write_id), never from the journal nor from a
// record no item points at.

// RecoverInput is what [RecoverRollback] rebuilds one rollback from.
type RecoverInput struct {
	// Record is the journal's entry of the rollback.
	Record drill.RollbackRecord
	// RunID and Actor are the run's, as the journal names them.
	RunID, Actor string
	// StepRunning is true when the step that registered the rollback was
	// still running when the run died: it may have died before its write.
	StepRunning bool
	// Trail is every audit record on the rollback's subject since the run
	// started (the run's and anyone else's), in any order. The data
	// plane's records ([audit.Record.DataPlane]) and the records of asking ([audit.Record.Asked]) are ignored.
	Trail []audit.Record
	// AllowNoExpiry lets a restore put back an override that never expires
	// (the operator confirmed it, recover's --yes).
	AllowNoExpiry bool
}

// NeedsTrail reports whether rec's rollback acts on the store, so its
// audit trail must be read before it is rebuilt; the subject to read is
// rec.Subject.
func NeedsTrail(rec drill.RollbackRecord) bool {
	return rec.Lever != nil && (rec.Lever.Kind == drill.LeverOverride || rec.Lever.Kind == drill.LeverBucket)
}

// RecoverRollback rebuilds the rollback the journal entry in.Record
// describes from what in.Trail records of the run's changes to its lever,
// after checking each claim the journal makes against it. Every claim the
// trail contradicts is one line of disagreements (naming the rollback, the
// claim and what the trail says); the rollback is then nil, and recover
// must write nothing. A rollback that cannot be rebuilt (an explicit
// step, a journal from an older koshactl) is an error: that rollback fails,
// and the others run.
func RecoverRollback(in RecoverInput) (runtime.Rollback, []string, error) {
	rec := in.Record
	if !NeedsTrail(rec) {
		rb, err := RollbackFromRecord(rec)
		return rb, nil, err
	}
	// The data plane's records (its chaos outcomes) are no lever's: no
	// decision trusts them, nor lets them stand in the way.
	in.Trail = slices.DeleteFunc(slices.Clone(in.Trail), func(r audit.Record) bool { return r.DataPlane || r.Asked })
	l := rec.Lever
	target, valid, rebuild := l.Client, ratelimit.ValidateClientID, recoverBucket
	if l.Kind == drill.LeverOverride {
		target, valid, rebuild = l.Dependency, breaker.ValidateDependency, recoverOverride
	}
	if err := valid(target); err != nil {
		return nil, nil, fmt.Errorf("rollback %s: %w", rec.ID, err)
	}
	return rebuild(in)
}

// disagree formats one disagreement between the journal and the trail.
func disagree(rec drill.RollbackRecord, subject, format string, args ...any) string {
	return fmt.Sprintf("rollback %s (%s): %s", rec.ID, subject, fmt.Sprintf(format, args...))
}

// runRecords keeps the records of trail that the run wrote on subject
// with one of actions, in the order they were made.
func runRecords(trail []audit.Record, runID, subject string, actions ...string) []audit.Record {
	out := slices.DeleteFunc(slices.Clone(trail), func(r audit.Record) bool {
		return r.RunID != runID || r.Subject != subject || !slices.Contains(actions, r.Action)
	})
	slices.SortStableFunc(out, func(a, b audit.Record) int { return a.Time.Compare(b.Time) })
	return out
}

// settled is a rebuilt rollback with nothing to write, done saying why;
// the journal's record stays as it is.
type settled struct{ subject, describe, done string }

func (s *settled) Subject() string                                           { return s.subject }
func (s *settled) Describe() string                                          { return s.describe }
func (s *settled) ExpiresAt() time.Time                                      { return time.Time{} }
func (s *settled) LeverRecord() *drill.LeverRecord                           { return nil }
func (s *settled) Undo(context.Context, *runtime.RunContext) (string, error) { return s.done, nil }

// unrecorded is the rollback of a lever the audit trail records no change
// of: the run died before its step wrote. Nothing the trail does not back
// is written.
func unrecorded(subject, runID string) runtime.Rollback {
	return &settled{subject, "nothing the audit trail records to undo",
		fmt.Sprintf("nothing to undo: the audit trail records no change of run %s to %s (the run died before its step wrote)", runID, subject)}
}

// link is what one audit record's change starts from and leaves: a key of
// the subject's state before and after ("" for no item).
type link struct{ before, after string }

// orderTrail puts a subject's records in the order the changes were made:
// by time, and records of the same millisecond (a fast store, a test's
// clock) by their chain: a change that starts from what another left comes
// after it.
func orderTrail(trail []audit.Record, keys func(audit.Record) link) []audit.Record {
	out := slices.Clone(trail)
	slices.SortStableFunc(out, func(a, b audit.Record) int { return a.Time.Compare(b.Time) })
	for start := 0; start < len(out); {
		end := start + 1
		for end < len(out) && out[end].Time.Equal(out[start].Time) {
			end++
		}
		group := out[start:end]
		for i := range group {
			// Pick the next: one whose state before no other remaining
			// record leaves, preferring one that starts from an item.
			best := -1
			for k := i; k < len(group); k++ {
				lk := keys(group[k])
				produced := false
				for m := i; m < len(group); m++ {
					if m != k && lk.before != "" && keys(group[m]).after == lk.before {
						produced = true
					}
				}
				if produced {
					continue
				}
				if best < 0 || (keys(group[best]).before == "" && lk.before != "") {
					best = k
				}
			}
			if best > i {
				group[i], group[best] = group[best], group[i]
			}
		}
		start = end
	}
	return out
}

// RollbackFromRecord rebuilds the rollback a journal entry describes, for
// the levers that need nothing but the journal (a chaos header) or that
// recover does not run (an explicit step). Store levers are rebuilt by
// [RecoverRollback] from the audit trail.
func RollbackFromRecord(rec drill.RollbackRecord) (runtime.Rollback, error) {
	l := rec.Lever
	if l == nil {
		return nil, fmt.Errorf("the journal does not say which lever %s moves (written by an older koshactl): restore %s by hand", rec.ID, rec.Subject)
	}
	switch l.Kind {
	case drill.LeverOverride, drill.LeverBucket:
		return nil, fmt.Errorf("rollback %s: a store lever is rebuilt from the audit trail (RecoverRollback), not from the journal alone", rec.ID)
	case drill.LeverChaos:
		return recoverChaos(rec), nil
	case drill.LeverExplicit:
		return nil, fmt.Errorf("recover does not run the drill file's own rollback steps (%s): do it by hand: %s", rec.Subject, rec.Description)
	}
	return nil, fmt.Errorf("rollback %s: unknown lever kind %q", rec.ID, l.Kind)
}
