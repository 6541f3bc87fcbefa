package breaker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/store"
)

// RestoreRequest puts an override back as it was before a change of the
// caller's own (a drill's rollback, `drill recover`).
type RestoreRequest struct {
	Dependency string
	// Mine is the write_id the caller's own change left on the override
	// ("" when that change deleted it). The restore holds only while the
	// stored item still carries it (or, for "", while the override is
	// still absent): an override anyone else wrote since is left alone,
	// whatever a journal or a record says.
	Mine string
	// Before is what to put back: an override in force at the restore is
	// written again (its reason, actor and expiry); nil, or one no longer
	// in force, clears.
	Before *Override
	// Actor and Reason are the restore's own, for its audit record.
	Actor, Reason string
}

// RestoreResult says what a restore did.
type RestoreResult struct {
	// Restored is the override put back (nil when none was).
	Restored *Override
	// Cleared is true when the caller's override was deleted.
	Cleared bool
	// LeftAlone is the override someone else wrote since the caller's
	// change: nothing was written.
	LeftAlone *Override
	// Record is the restore's audit record (zero when nothing was written).
	Record    audit.Record
	Confirmed bool
}

// Restore undoes the caller's own change of req.Dependency's override, in
// one transaction with its audit record, conditional on the item still
// being the caller's write (write_id = req.Mine) or still absent. It reads
// the override once. Nothing to undo (already as wanted) writes nothing.
func (s *Overrides) Restore(ctx context.Context, req RestoreRequest) (RestoreResult, error) {
	log, err := s.changeLog()
	if err != nil {
		return RestoreResult{}, err
	}
	if err := ValidateDependency(req.Dependency); err != nil {
		return RestoreResult{}, err
	}
	cur, err := s.Get(ctx, req.Dependency)
	absent := errors.Is(err, store.ErrNotFound)
	if err != nil && !absent {
		return RestoreResult{}, err
	}
	if !absent && (req.Mine == "" || cur.WriteID != req.Mine) {
		return RestoreResult{LeftAlone: &cur}, nil
	}
	key := OverrideKey(req.Dependency)
	now := s.clock.Now()
	var res RestoreResult
	var write leverWrite
	switch b := req.Before; {
	case b != nil && b.ActiveAt(now):
		after := Override{Dependency: req.Dependency, State: OverrideStateForcedOpen, Reason: b.Reason, Actor: b.Actor,
			ExpiresAt: b.ExpiresAt, Version: 1}
		cond := store.IfAbsent()
		var before *Override
		if !absent {
			after.Version, cond, before = cur.nextVersion(), cur.condition(), &cur
		}
		res.Restored = &after
		write = func(token string, at time.Time) (store.Op, audit.Entry) {
			after.CreatedAt, after.WriteID = at.UTC().Truncate(time.Millisecond), token
			return store.PutOp(after.Item(), cond), audit.Entry{Actor: req.Actor, Action: ActionForceOpen, Subject: key,
				Reason: req.Reason, Before: AuditState(before), After: AuditState(&after)}
		}
	case absent:
		return res, nil // already clear, as wanted
	default:
		res.Cleared = true
		write = func(string, time.Time) (store.Op, audit.Entry) {
			return store.DeleteOp(key, cur.condition()), audit.Entry{Actor: req.Actor, Action: ActionClear, Subject: key,
				Reason: req.Reason, Before: AuditState(&cur)}
		}
	}
	c := s.commit(ctx, log, []leverWrite{write}, nil)[0]
	if c.err != nil {
		var ce *ConflictError
		if errors.As(c.err, &ce) {
			// Someone wrote it between the read and the transaction.
			return RestoreResult{LeftAlone: &ce.Current}, nil
		}
		return RestoreResult{}, fmt.Errorf("restore override of %s: %w", req.Dependency, c.err)
	}
	res.Record, res.Confirmed = c.record, c.confirmed
	return res, nil
}
