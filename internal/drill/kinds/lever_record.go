package kinds

import (
	"context"
	"fmt"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
)

func (r *overrideRollback) LeverRecord() *drill.LeverRecord {
	rec := &drill.LeverRecord{Kind: drill.LeverOverride, Dependency: r.dependency, Inverse: "clear"}
	if b := r.before(); b != nil {
		rec.BeforeOverride = &drill.OverrideState{State: b.State, Reason: b.Reason, Actor: b.Actor, CreatedAt: b.CreatedAt.UTC(),
			ExpiresAt: b.ExpiresAt.UTC(), Version: b.Version}
		if b.State == breaker.OverrideStateForcedOpen {
			rec.Inverse = "restore-override"
		}
	}
	if w, _ := lastWrite(r.lever); w.change != "" {
		rec.WriteID = w.change
	}
	return rec
}

func (r *bucketRollback) LeverRecord() *drill.LeverRecord {
	rec := &drill.LeverRecord{Kind: drill.LeverBucket, Client: r.client, Inverse: "restore-level"}
	if b, ok := r.lever.Before.(ratelimit.Status); ok {
		rec.BeforeBucket = &drill.BucketState{Exists: b.Exists, Tokens: b.Stored.Tokens, UpdatedAtMs: b.Stored.UpdatedAtMs}
	}
	return rec
}

func (r *chaosRollback) LeverRecord() *drill.LeverRecord {
	rec := &drill.LeverRecord{Kind: drill.LeverChaos, Inverse: "withdraw"}
	rec.JTI, _ = r.lever.Written().(string)
	return rec
}

// recoveredChaos is a chaos header's rollback after its run died: the
// header lived only in that process, so it is withdrawn already.
type recoveredChaos struct {
	subject string
	expires time.Time
}

func (r *recoveredChaos) Subject() string  { return r.subject }
func (r *recoveredChaos) Describe() string { return "withdraw the chaos header" }

// ExpiresAt is zero: the journal's record already says when the header
// expires.
func (r *recoveredChaos) ExpiresAt() time.Time { return time.Time{} }

// LeverRecord is nil: the journal's record stays as it is.
func (r *recoveredChaos) LeverRecord() *drill.LeverRecord { return nil }
func (r *recoveredChaos) Undo(context.Context, *drill.RunContext) (string, error) {
	if r.expires.IsZero() {
		return "withdrawn: it lived only in the run's process", nil
	}
	return "withdrawn: it lived only in the run's process; it expires " + r.expires.UTC().Format(time.RFC3339), nil
}

// RollbackFromRecord rebuilds the rollback a journal entry describes, for
// the levers that need nothing but the journal (a chaos header) or that
// recover does not run (an explicit step). Store levers are rebuilt by
// [RecoverRollback] from the audit trail.
func RollbackFromRecord(rec drill.RollbackRecord) (drill.Rollback, error) {
	l := rec.Lever
	if l == nil {
		return nil, fmt.Errorf("the journal does not say which lever %s moves (written by an older koshactl): restore %s by hand", rec.ID, rec.Subject)
	}
	switch l.Kind {
	case drill.LeverOverride, drill.LeverBucket:
		return nil, fmt.Errorf("rollback %s: a store lever is rebuilt from the audit trail (RecoverRollback), not from the journal alone", rec.ID)
	case drill.LeverChaos:
		rc := &recoveredChaos{subject: rec.Subject}
		if rec.ExpiresAt != nil {
			rc.expires = *rec.ExpiresAt
		}
		return rc, nil
	case drill.LeverExplicit:
		return nil, fmt.Errorf("recover does not run the drill file's own rollback steps (%s): do it by hand: %s", rec.Subject, rec.Description)
	}
	return nil, fmt.Errorf("rollback %s: unknown lever kind %q", rec.ID, l.Kind)
}
