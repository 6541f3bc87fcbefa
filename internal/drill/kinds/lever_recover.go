package kinds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/store"
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
	// plane's records ([audit.Record.DataPlane]) are ignored.
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
func RecoverRollback(in RecoverInput) (drill.Rollback, []string, error) {
	rec := in.Record
	if !NeedsTrail(rec) {
		rb, err := RollbackFromRecord(rec)
		return rb, nil, err
	}
	// The data plane's records (its chaos outcomes) are no lever's: no
	// decision trusts them, nor lets them stand in the way.
	in.Trail = slices.DeleteFunc(slices.Clone(in.Trail), func(r audit.Record) bool { return r.DataPlane })
	l := rec.Lever
	switch l.Kind {
	case drill.LeverOverride:
		if err := breaker.ValidateDependency(l.Dependency); err != nil {
			return nil, nil, fmt.Errorf("rollback %s: %w", rec.ID, err)
		}
		return recoverOverride(in)
	default:
		if err := ratelimit.ValidateClientID(l.Client); err != nil {
			return nil, nil, fmt.Errorf("rollback %s: %w", rec.ID, err)
		}
		return recoverBucket(in)
	}
}

// disagree formats one disagreement between the journal and the trail.
func disagree(rec drill.RollbackRecord, subject, format string, args ...any) string {
	return fmt.Sprintf("rollback %s (%s): %s", rec.ID, subject, fmt.Sprintf(format, args...))
}

// runRecords keeps the records of trail that the run wrote on subject
// with one of actions, in the order they were made.
func runRecords(trail []audit.Record, runID, subject string, actions ...string) []audit.Record {
	var out []audit.Record
	for _, r := range trail {
		if r.RunID == runID && r.Subject == subject && slices.Contains(actions, r.Action) {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b audit.Record) int { return a.Time.Compare(b.Time) })
	return out
}

func recoverOverride(in RecoverInput) (drill.Rollback, []string, error) {
	rec, l := in.Record, in.Record.Lever
	dep := l.Dependency
	subject := breaker.OverrideKey(dep)
	mine := runRecords(in.Trail, in.RunID, subject, breaker.ActionForceOpen, breaker.ActionClear)
	if len(mine) == 0 {
		claim := ""
		switch {
		case l.WriteID != "":
			claim = fmt.Sprintf("the drill's last change on it was %s", l.WriteID)
		case l.BeforeOverride != nil:
			claim = fmt.Sprintf("the drill replaced or cleared an override held by %q", l.BeforeOverride.Actor)
		}
		if claim != "" && !in.StepRunning {
			return nil, []string{disagree(rec, subject, "the journal says %s, but the audit trail records no write of run %s on it", claim, in.RunID)}, nil
		}
		return &unrecorded{subject: subject, runID: in.RunID}, nil, nil
	}
	var lines []string
	if first := mine[0]; first.Actor != in.Actor {
		lines = append(lines, disagree(rec, subject, "the journal names the run's actor %q, but the audit trail records run %s's first write on it by %q", in.Actor, in.RunID, first.Actor))
	}
	if w := l.WriteID; w != "" && !slices.ContainsFunc(mine, func(r audit.Record) bool { return r.Change == w }) && !in.StepRunning {
		lines = append(lines, disagree(rec, subject, "the journal says the drill's last change on it was %s, but the audit trail records no change %s of run %s", w, w, in.RunID))
	}
	if len(lines) > 0 {
		return nil, lines, nil
	}
	var said *string
	if b := l.BeforeOverride; b != nil {
		said = &b.Actor
	}
	return &recoveredOverride{dependency: dep, trail: in.Trail, runID: in.RunID, last: mine[len(mine)-1],
		journalBefore: said, allowNoExpiry: in.AllowNoExpiry}, nil, nil
}

// unrecorded is the rollback of a lever the audit trail records no change
// of: the run died before its step wrote. Nothing the trail does not back
// is written.
type unrecorded struct {
	subject, runID string
}

func (u *unrecorded) Subject() string                 { return u.subject }
func (u *unrecorded) Describe() string                { return "nothing the audit trail records to undo" }
func (u *unrecorded) ExpiresAt() time.Time            { return time.Time{} }
func (u *unrecorded) LeverRecord() *drill.LeverRecord { return nil }
func (u *unrecorded) Undo(context.Context, *drill.RunContext) (string, error) {
	return fmt.Sprintf("nothing to undo: the audit trail records no change of run %s to %s (the run died before its step wrote)", u.runID, u.subject), nil
}

// recoveredOverride is an override rollback rebuilt for drill recover: what
// it does is decided at Undo from the override's item as stored and the
// audit trail of its subject.
type recoveredOverride struct {
	dependency string
	trail      []audit.Record
	runID      string
	// last is the run's last recorded change of the override.
	last audit.Record
	// journalBefore names the actor of the override the journal says was
	// there before the drill (nil: none): it only makes recover say that it
	// cannot restore it; nothing is written from it.
	journalBefore *string
	allowNoExpiry bool
}

var _ drill.Rollback = (*recoveredOverride)(nil)

func (r *recoveredOverride) Subject() string { return breaker.OverrideKey(r.dependency) }

func (r *recoveredOverride) Describe() string {
	return fmt.Sprintf("undo run %s's override of %s, as the audit trail records it", r.runID, r.dependency)
}

func (r *recoveredOverride) ExpiresAt() time.Time {
	if o, err := breaker.OverrideFromAuditState(r.dependency, r.last.After); err == nil && o != nil {
		return o.ExpiresAt
	}
	return time.Time{}
}

// LeverRecord is nil: the journal's record stays as it is.
func (r *recoveredOverride) LeverRecord() *drill.LeverRecord { return nil }

// change returns the audit record of the change whose token is token on the
// override, and whether that change is the run's: some record on the
// subject carries the token, and every one that does is the run's, and
// says the same. Two records of one change that differ mean one was
// planted: an error, nothing is written.
func (r *recoveredOverride) change(token string) (audit.Record, bool, error) {
	if token == "" {
		return audit.Record{}, false, nil
	}
	var found []audit.Record
	for _, rec := range r.trail {
		if rec.Subject == r.Subject() && rec.Change == token {
			found = append(found, rec)
		}
	}
	if len(found) == 0 {
		return audit.Record{}, false, nil
	}
	for _, rec := range found[1:] {
		if rec.RunID != found[0].RunID || rec.Action != found[0].Action || string(rec.Before) != string(found[0].Before) || string(rec.After) != string(found[0].After) {
			return audit.Record{}, false, fmt.Errorf("the audit trail holds %d differing records of change %s on %s: one was not written by koshactl; restore %s by hand", len(found), token, r.Subject(), r.dependency)
		}
	}
	return found[0], found[0].RunID == r.runID, nil
}

// imageBefore follows the run's changes back from rec, the run's record
// of a change: each before-image carrying the write_id of another change
// of the run is that change's own before-image. It returns the override
// before the run's first change of the chain (nil: none).
func (r *recoveredOverride) imageBefore(rec audit.Record) (*breaker.Override, error) {
	for range len(r.trail) + 1 {
		img, err := breaker.OverrideFromAuditState(r.dependency, rec.Before)
		if err != nil {
			return nil, fmt.Errorf("the audit record %s of run %s cannot be read: %w", rec.ID, r.runID, err)
		}
		if img == nil {
			return nil, nil
		}
		prev, own, err := r.change(img.WriteID)
		if err != nil {
			return nil, err
		}
		if !own || prev.Action != breaker.ActionForceOpen {
			return img, nil
		}
		rec = prev
	}
	return nil, fmt.Errorf("the audit trail of %s loops: restore it by hand", r.Subject())
}

// sameContent reports whether a holds what b held: a restore of b.
func sameContent(a, b breaker.Override) bool {
	return a.State == b.State && a.Actor == b.Actor && a.Reason == b.Reason && a.ExpiresAt.Equal(b.ExpiresAt)
}

func (r *recoveredOverride) Undo(ctx context.Context, rc *drill.RunContext) (string, error) {
	svc := rc.Deps
	if err := drill.NeedService(svc.Overrides != nil && svc.Audit != nil, "store"); err != nil {
		return "", err
	}
	cur, err := svc.Overrides.Get(ctx, r.dependency)
	absent := errors.Is(err, store.ErrNotFound)
	if err != nil && !absent {
		return "", err
	}
	byHand := func(img *breaker.Override, why string) error {
		return fmt.Errorf("not restoring the override of %s held by %s before the drill: %s; restore it by hand with koshactl breaker force-open %s if it should be",
			r.dependency, img.Actor, why, r.dependency)
	}
	if absent {
		// The run's last change deleted it, or someone did since: an
		// absent item proves nothing, so nothing is written from a record.
		img, err := r.imageBefore(r.last)
		if err != nil {
			return "", err
		}
		if img == nil || !img.ActiveAt(rc.Now()) {
			return "already clear", nil
		}
		return "", byHand(img, fmt.Sprintf("the override is absent now (run %s's last change of it: audit record %s), and an absent override carries no write_id that proves nobody changed it since", r.runID, r.last.ID))
	}
	anchor, own, err := r.change(cur.WriteID)
	if err != nil {
		return "", err
	}
	if !own || anchor.Action != breaker.ActionForceOpen {
		return fmt.Sprintf("left alone: %s now holds it (%q, version %d), not a write the audit trail records as run %s's", cur.Actor, cur.Reason, cur.Version, r.runID), nil
	}
	img, err := r.imageBefore(anchor)
	if err != nil {
		return "", err
	}
	if img == nil && r.journalBefore != nil {
		return "", fmt.Errorf("the journal says an override held by %q was there before the drill, but no audit record of run %s's changes to %s names it: the drill's override is left as it is; restore by hand", *r.journalBefore, r.runID, r.dependency)
	}
	now := rc.Now()
	if img != nil && img.ActiveAt(now) {
		if sameContent(cur, *img) {
			return fmt.Sprintf("already restored: it holds the override of %s from before the drill", img.Actor), nil
		}
		if err := breaker.CheckRestore(*img, now, breaker.DurationPolicy{Max: svc.MaxOverride}, r.allowNoExpiry); err != nil {
			if errors.Is(err, breaker.ErrNoExpiryUnconfirmed) {
				return "", fmt.Errorf("not restoring the override of %s held by %s before the drill: %w; re-run drill recover with --yes to restore it as it was, or restore it by hand", r.dependency, img.Actor, err)
			}
			return "", byHand(img, err.Error())
		}
	}
	return restore(ctx, rc, breaker.RestoreRequest{Dependency: r.dependency, Mine: cur.WriteID, Before: img, Actor: svc.Actor, Reason: rc.Reason("rollback")})
}

func recoverBucket(in RecoverInput) (drill.Rollback, []string, error) {
	rec, l := in.Record, in.Record.Lever
	subject := ratelimit.Key(l.Client)
	var trail []audit.Record
	for _, r := range in.Trail {
		if r.RunID == in.RunID && r.Subject == subject && slices.Contains([]string{ratelimit.ActionReset, ratelimit.ActionDrain, ratelimit.ActionSet}, r.Action) {
			trail = append(trail, r)
		}
	}
	trail = orderTrail(trail, bucketLink)
	if len(trail) == 0 {
		// A bucket change that changed nothing is not recorded (a reset
		// of a full bucket): nothing to undo, whatever the journal says.
		return &unrecorded{subject: subject, runID: in.RunID}, nil, nil
	}
	var lines []string
	if first := trail[0]; first.Actor != in.Actor {
		lines = append(lines, disagree(rec, subject, "the journal names the run's actor %q, but the audit trail records run %s's first change to it by %q", in.Actor, in.RunID, first.Actor))
	}
	var v ratelimit.AuditView
	if err := json.Unmarshal(trail[0].Before, &v); err != nil {
		return nil, append(lines, disagree(rec, subject, "the audit record %s of run %s cannot be read: %v", trail[0].ID, in.RunID, err)), nil
	}
	if b := l.BeforeBucket; b != nil && (b.Exists != v.Exists || b.Tokens != v.Tokens || b.UpdatedAtMs != v.UpdatedAtMs) {
		lines = append(lines, disagree(rec, subject, "the journal's bucket before the drill (exists %v, %v tokens at %d ms) differs from the audit trail's (exists %v, %v tokens at %d ms)",
			b.Exists, b.Tokens, b.UpdatedAtMs, v.Exists, v.Tokens, v.UpdatedAtMs))
	}
	if len(lines) > 0 {
		return nil, lines, nil
	}
	if v.Malformed != "" {
		return nil, nil, fmt.Errorf("rollback %s: the bucket of %s was malformed before the drill (%s): set it by hand", rec.ID, l.Client, v.Malformed)
	}
	var before ratelimit.Status
	if v.Exists {
		before = ratelimit.Status{Client: l.Client, Exists: true, Stored: ratelimit.Bucket{Client: l.Client, Tokens: v.Tokens, UpdatedAtMs: v.UpdatedAtMs}}
	}
	return &bucketRollback{client: l.Client, lever: &drill.Lever{Subject: subject, Before: before}}, nil, nil
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

// bucketLink keys a bucket record by the stored level before and after.
func bucketLink(r audit.Record) link {
	key := func(doc json.RawMessage) string {
		var v ratelimit.AuditView
		if json.Unmarshal(doc, &v) != nil || !v.Exists {
			return ""
		}
		return fmt.Sprintf("%v@%d", v.Tokens, v.UpdatedAtMs)
	}
	return link{before: key(r.Before), after: key(r.After)}
}
