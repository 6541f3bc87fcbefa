package kinds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/store"
)

// Recovering a rollback: the journal says which lever to look at, and the
// audit trail (the records the run wrote, each carrying its run_id) says
// what the run did to it and so what to put back. A journal is a file that
// passes through other hands; the audit trail is what koshactl wrote as it
// acted.

// RecoverInput is what [RecoverRollback] rebuilds one rollback from.
type RecoverInput struct {
	// Record is the journal's entry of the rollback.
	Record drill.RollbackRecord
	// RunID and Actor are the run's, as the journal names them.
	RunID, Actor string
	// StepRunning is true when the step that registered the rollback was
	// still running when the run died: it may have died before its write.
	StepRunning bool
	// Trail is every audit record of the run (its run_id) on the rollback's
	// subject, in any order.
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

func recoverOverride(in RecoverInput) (drill.Rollback, []string, error) {
	rec, l := in.Record, in.Record.Lever
	dep := l.Dependency
	subject := breaker.OverrideKey(dep)
	var trail []audit.Record
	for _, r := range in.Trail {
		if r.Subject == subject && (r.Action == breaker.ActionForceOpen || r.Action == breaker.ActionClear) {
			trail = append(trail, r)
		}
	}
	trail = orderTrail(trail, overrideLink(dep))
	if len(trail) == 0 {
		claim := ""
		switch {
		case l.WrittenVersion != 0:
			claim = fmt.Sprintf("the drill wrote version %d", l.WrittenVersion)
		case l.BeforeOverride != nil:
			claim = fmt.Sprintf("the drill replaced or cleared an override held by %q", l.BeforeOverride.Actor)
		}
		if claim != "" && !in.StepRunning {
			return nil, []string{disagree(rec, subject, "the journal says %s, but the audit trail records no write of run %s on it", claim, in.RunID)}, nil
		}
		return &unrecorded{subject: subject, runID: in.RunID}, nil, nil
	}
	var lines []string
	if first := trail[0]; first.Actor != in.Actor {
		lines = append(lines, disagree(rec, subject, "the journal names the run's actor %q, but the audit trail records run %s's first write on it by %q", in.Actor, in.RunID, first.Actor))
	}
	image, err := breaker.OverrideFromAuditState(dep, trail[0].Before)
	if err != nil {
		return nil, append(lines, disagree(rec, subject, "the audit record %s of run %s cannot be read: %v", trail[0].ID, in.RunID, err)), nil
	}
	last, err := breaker.OverrideFromAuditState(dep, trail[len(trail)-1].After)
	if err != nil {
		return nil, append(lines, disagree(rec, subject, "the audit record %s of run %s cannot be read: %v", trail[len(trail)-1].ID, in.RunID, err)), nil
	}
	switch b := l.BeforeOverride; {
	case b != nil && image == nil:
		lines = append(lines, disagree(rec, subject, "the journal says an override held by %q was there before the drill, but the audit trail records none before run %s's first write", b.Actor, in.RunID))
	case b == nil && image != nil:
		lines = append(lines, disagree(rec, subject, "the journal records no override before the drill, but the audit trail records one held by %q (version %d)", image.Actor, image.Version))
	case b != nil:
		if diff := overrideDiff(*b, *image); diff != "" {
			lines = append(lines, disagree(rec, subject, "the journal's override before the drill differs from the audit trail's: %s", diff))
		}
	}
	if w := l.WrittenVersion; w != 0 {
		var written []string
		found := false
		for _, r := range trail {
			o, err := breaker.OverrideFromAuditState(dep, r.After)
			if err != nil || o == nil || r.Action != breaker.ActionForceOpen {
				continue
			}
			written = append(written, fmt.Sprint(o.Version))
			found = found || (o.Version == w && r.Actor == in.Actor)
		}
		if !found {
			lines = append(lines, disagree(rec, subject, "the journal says the drill wrote version %d, but the audit trail records run %s writing %s", w, in.RunID, versions(written)))
		}
	}
	if len(lines) > 0 {
		return nil, lines, nil
	}
	return &recoveredOverride{dependency: dep, image: image, last: last, runID: in.RunID, allowNoExpiry: in.AllowNoExpiry}, nil, nil
}

func versions(v []string) string {
	if len(v) == 0 {
		return "no version"
	}
	return "version " + strings.Join(v, ", ")
}

// overrideDiff names the fields in which the journal's record of an
// override differs from the audit trail's ("" when none does).
func overrideDiff(j drill.OverrideState, a breaker.Override) string {
	var d []string
	if j.State != a.State {
		d = append(d, fmt.Sprintf("state %q, the trail %q", j.State, a.State))
	}
	if j.Actor != a.Actor {
		d = append(d, fmt.Sprintf("actor %q, the trail %q", j.Actor, a.Actor))
	}
	if j.Reason != a.Reason {
		d = append(d, fmt.Sprintf("reason %q, the trail %q", j.Reason, a.Reason))
	}
	if j.Version != a.Version {
		d = append(d, fmt.Sprintf("version %d, the trail %d", j.Version, a.Version))
	}
	if !j.CreatedAt.Equal(a.CreatedAt) {
		d = append(d, fmt.Sprintf("created_at %s, the trail %s", stamp(j.CreatedAt), stamp(a.CreatedAt)))
	}
	if !j.ExpiresAt.Equal(a.ExpiresAt) {
		d = append(d, fmt.Sprintf("expires_at %s, the trail %s", stamp(j.ExpiresAt), stamp(a.ExpiresAt)))
	}
	return strings.Join(d, "; ")
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// unrecorded is the rollback of a lever the audit trail records no change
// of: the run died before its step wrote (or before it recorded the write).
// Nothing the trail does not back is written.
type unrecorded struct {
	subject, runID string
}

func (u *unrecorded) Subject() string                 { return u.subject }
func (u *unrecorded) Describe() string                { return "nothing the audit trail records to undo" }
func (u *unrecorded) ExpiresAt() time.Time            { return time.Time{} }
func (u *unrecorded) LeverRecord() *drill.LeverRecord { return nil }
func (u *unrecorded) Undo(context.Context, *drill.RunContext) (string, error) {
	return fmt.Sprintf("nothing to undo: the audit trail records no change of run %s to %s (the run died before its step wrote; a change it made without recording it lapses by the drill's deadline)", u.runID, u.subject), nil
}

// recoveredOverride is an override rollback rebuilt from the audit trail:
// image is the override before the run's first write (nil: none), last what
// the run's last recorded change left (nil: it cleared it).
type recoveredOverride struct {
	dependency    string
	image, last   *breaker.Override
	runID         string
	allowNoExpiry bool
}

var _ drill.Rollback = (*recoveredOverride)(nil)

func (r *recoveredOverride) Subject() string { return breaker.OverrideKey(r.dependency) }

func (r *recoveredOverride) Describe() string {
	if r.image != nil {
		return fmt.Sprintf("restore the override of %s held by %s before the drill", r.dependency, r.image.Actor)
	}
	return fmt.Sprintf("clear the drill's override of %s", r.dependency)
}

func (r *recoveredOverride) ExpiresAt() time.Time {
	if r.last != nil {
		return r.last.ExpiresAt
	}
	return time.Time{}
}

// LeverRecord is nil: the journal's record stays as it is.
func (r *recoveredOverride) LeverRecord() *drill.LeverRecord { return nil }

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
	if !absent {
		// Only the write the audit trail names as the run's last is the
		// run's: anything else is someone else's, whatever its actor or
		// reason say.
		if r.last == nil || !breaker.SameWrite(cur, *r.last) {
			return fmt.Sprintf("left alone: %s now holds it (%q, version %d), not the write the audit trail names as run %s's last", cur.Actor, cur.Reason, cur.Version, r.runID), nil
		}
		if r.image != nil && sameContent(cur, *r.image) {
			return fmt.Sprintf("already restored: it holds the override of %s from before the drill", r.image.Actor), nil
		}
	}
	now := rc.Now()
	if b := r.image; b != nil && b.ActiveAt(now) {
		if err := breaker.CheckRestore(*b, now, breaker.DurationPolicy{Max: svc.MaxOverride}, r.allowNoExpiry); err != nil {
			fix := "restore it by hand with koshactl breaker force-open"
			if errors.Is(err, breaker.ErrNoExpiryUnconfirmed) {
				fix = "re-run drill recover with --yes to restore it as it was, or restore it by hand"
			}
			return "", fmt.Errorf("not restoring the override of %s held by %s before the drill: %w; %s", r.dependency, b.Actor, err, fix)
		}
		return restoreOverride(ctx, rc, r.dependency, r.Subject(), *b, cur, absent)
	}
	if absent {
		return "already clear", nil
	}
	// Conditional on the item just checked: one written since is not
	// deleted unseen.
	outs, err := svc.Overrides.ClearAll(ctx, rc.Audit(), breaker.ClearAll{Dependencies: []string{r.dependency}, Reason: rc.Reason("rollback"),
		Actor: func(context.Context) (string, error) { return svc.Actor, nil }, Read: map[string]*breaker.Override{r.dependency: &cur}})
	if err != nil && len(outs) == 1 && outs[0].Written {
		// Deleted, its record not written (audit.ErrAuditWrite): the
		// rollback is done and says so; it is not "already clear" later.
		return "cleared, but its audit record was not written", err
	}
	if err != nil {
		return "", err
	}
	if len(outs) == 0 || outs[0].Result.Before == nil {
		return "already clear", nil
	}
	return "cleared", nil
}

func recoverBucket(in RecoverInput) (drill.Rollback, []string, error) {
	rec, l := in.Record, in.Record.Lever
	subject := ratelimit.Key(l.Client)
	var trail []audit.Record
	for _, r := range in.Trail {
		if r.Subject == subject && slices.Contains([]string{ratelimit.ActionReset, ratelimit.ActionDrain, ratelimit.ActionSet}, r.Action) {
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

// overrideLink keys an override record by the write_id of the items it
// replaced and wrote.
func overrideLink(dep string) func(audit.Record) link {
	key := func(doc json.RawMessage) string {
		o, err := breaker.OverrideFromAuditState(dep, doc)
		if err != nil || o == nil {
			return ""
		}
		return fmt.Sprintf("%s/%d", o.WriteID, o.Version)
	}
	return func(r audit.Record) link { return link{before: key(r.Before), after: key(r.After)} }
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
