package breaker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Audit actions recorded for override changes.
const (
	ActionForceOpen = "breaker.force-open"
	ActionClear     = "breaker.clear"
)

// AuditState is how an override appears in audit records' before/after: a
// JSON object of the item's attributes exactly as stored (pk left out: it
// is the record's subject), strings as JSON strings and numbers as JSON
// numbers. For an override read from the store that is its Raw item, so a
// malformed item is recorded as it was, not as koshactl parsed it; for one
// about to be written, the item written. nil gives nil (no item).
func AuditState(o *Override) any {
	if o == nil {
		return nil
	}
	it := o.Raw
	if it == nil {
		it = o.Item()
	}
	doc := make(map[string]any, len(it))
	for k, v := range it {
		if k != store.PK {
			doc[k] = v
		}
	}
	return doc
}

// ForceAudited forces an override (req.DryRun is ignored: it always writes)
// and records it. When the override was written but the audit record was
// not, the result is returned with an error wrapping audit.ErrAuditWrite.
func (s *Overrides) ForceAudited(ctx context.Context, log audit.Appender, req ForceRequest) (ForceResult, audit.Record, error) {
	req.DryRun = false
	res, err := s.Force(ctx, req)
	if err != nil {
		return res, audit.Record{}, err
	}
	rec, err := auditForce(ctx, log, req, res)
	return res, rec, err
}

// auditForce records a force that was written.
func auditForce(ctx context.Context, log audit.Appender, req ForceRequest, res ForceResult) (audit.Record, error) {
	e := forceEntry(res.After)
	e.Before = AuditState(res.Before)
	rec, err := log.Append(ctx, e)
	if err != nil {
		return rec, &audit.UnwrittenError{Subject: e.Subject, WriteID: res.After.WriteID,
			Err: fmt.Errorf("%s was forced open, but %w", req.Dependency, err)}
	}
	return rec, nil
}

// forceEntry is the audit entry of the force that wrote after (Before left
// for the caller): its time and id follow from the item (created_at, the
// first 16 digits of write_id), so the force's own append and a later
// [Overrides.RepairAudit] write the same pk, and at most one lands.
func forceEntry(after Override) audit.Entry {
	e := audit.Entry{Actor: after.Actor, Action: ActionForceOpen, Subject: OverrideKey(after.Dependency),
		Reason: after.Reason, After: AuditState(&after)}
	if id := after.WriteID; len(id) >= 16 {
		e.At, e.ID = after.CreatedAt, id[:16]
	}
	return e
}

// ClearAudited clears an override and records it. Nothing is recorded when
// there was nothing to clear.
func (s *Overrides) ClearAudited(ctx context.Context, log audit.Appender, dependency, actor, reason string) (ClearResult, audit.Record, error) {
	res, err := s.Clear(ctx, dependency, false)
	return s.auditClear(ctx, log, dependency, actor, reason, res, err)
}

// clearAudited is ClearAudited after the read of cur.
func (s *Overrides) clearAudited(ctx context.Context, log audit.Appender, dependency string, cur *Override, actor, reason string) (ClearResult, audit.Record, error) {
	res, err := s.clearFrom(ctx, dependency, *cur, false)
	return s.auditClear(ctx, log, dependency, actor, reason, res, err)
}

// auditClear records the clear that deleted res.Before. The record is
// claimed by the deleted item's write_id ([audit.Entry.Once]): two clears of
// the same item (the delete of one was applied, the other's answer was lost
// and its re-read found the item gone) cannot both record it, whatever their
// timing. The one whose claim is refused records nothing: after a lost
// answer it reports the other's clear (Theirs, Before nil); after a delete
// the store answered (its own), it reports the other's record of it.
func (s *Overrides) auditClear(ctx context.Context, log audit.Appender, dependency, actor, reason string, res ClearResult, err error) (ClearResult, audit.Record, error) {
	if err != nil || res.Before == nil {
		return res, audit.Record{}, err
	}
	rec, err := log.Append(ctx, audit.Entry{Actor: actor, Action: ActionClear, Subject: OverrideKey(dependency),
		Reason: reason, Before: AuditState(res.Before), Once: res.Before.WriteID})
	var claimed *audit.ClaimedError
	switch {
	case errors.As(err, &claimed):
		theirs := claimed.Record
		res.Theirs = &theirs
		if res.Confirmed {
			// Our delete's answer was lost, and another clear of this
			// exact item is recorded: the clear was theirs.
			res.Before, res.Confirmed = nil, false
		}
		return res, audit.Record{}, nil
	case err != nil && res.Before.WriteID != "":
		return res, rec, &audit.UnwrittenError{Subject: OverrideKey(dependency), WriteID: res.Before.WriteID,
			Err: fmt.Errorf("%s was cleared, but %w", dependency, err)}
	case err != nil:
		return res, rec, fmt.Errorf("%s was cleared, but %w", dependency, err)
	}
	return res, rec, nil
}

// OverrideFromAuditState decodes an override from an audit record's before
// or after document ([AuditState]'s output) for dependency: nil for an absent
// document (no item). Numbers come back as the store holds them (whole ones
// as integers), so the override decodes exactly as the item it records.
func OverrideFromAuditState(dependency string, doc json.RawMessage) (*Override, error) {
	if len(doc) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("the audit record's override of %s is not a JSON object: %w", dependency, err)
	}
	it := store.Item{store.PK: OverrideKey(dependency)}
	for k, v := range m {
		if k == store.PK {
			continue
		}
		if n, ok := v.(json.Number); ok {
			if i, err := n.Int64(); err == nil {
				v = i
			} else if f, err := n.Float64(); err == nil {
				v = f
			}
		}
		it[k] = v
	}
	o, err := OverrideFromItem(it)
	if err != nil {
		return nil, err
	}
	return &o, nil
}

// SameWrite reports whether a and b are the same stored write of an
// override: the same write_id when both carry one, else the same version,
// created_at and actor.
func SameWrite(a, b Override) bool {
	if a.WriteID != "" && b.WriteID != "" {
		return a.WriteID == b.WriteID
	}
	return a.Version == b.Version && a.CreatedAt.Equal(b.CreatedAt) && a.Actor == b.Actor
}

// AuditRepairer is what [Overrides.RepairAudit] needs of the audit log;
// *audit.Log implements it.
type AuditRepairer interface {
	RepairClaimed(ctx context.Context, token, subject, repairer string) (audit.Record, bool, error)
	Repair(ctx context.Context, e audit.Entry) (audit.Record, bool, error)
}

// ErrNothingToRepair reports a write id that names no change of the
// override the store can still prove; it wraps store.ErrNotFound.
var ErrNothingToRepair = fmt.Errorf("nothing to repair: %w", store.ErrNotFound)

// RepairAudit writes the audit record of the change of dependency's override
// that writeID names, when the change's own append did not land (the command
// printed this repair on exit 8), with repairer as the record's repaired_by.
// The store decides what is written, never the caller:
//
//   - a clear: the claim on the deleted item's write_id holds the record
//     (actor, reason, time, before-image); it is written as claimed;
//   - a force: the override still carrying writeID is the change; the record
//     is rebuilt from it (actor, reason, created_at as its time, the item as
//     its after). The replaced item is gone, so a repaired force names no
//     before-image.
//
// The record's pk follows from the change, so written is false when it is
// already stored (the change's append landed after all, or an earlier
// repair): running the repair twice writes one record. A write id that
// names no such change returns an error wrapping [ErrNothingToRepair].
func (s *Overrides) RepairAudit(ctx context.Context, log AuditRepairer, dependency, writeID, repairer string) (audit.Record, bool, error) {
	subject := OverrideKey(dependency)
	rec, written, err := log.RepairClaimed(ctx, writeID, subject, repairer)
	switch {
	case errors.Is(err, audit.ErrClaimOfAnotherSubject):
		return audit.Record{}, false, fmt.Errorf("%w: %w", ErrNothingToRepair, err)
	case err == nil:
		return rec, written, nil
	case !errors.Is(err, store.ErrNotFound):
		return audit.Record{}, false, err
	}
	o, err := s.Get(ctx, dependency)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return audit.Record{}, false, fmt.Errorf("no clear of %s with write id %s is claimed and no override is stored: %w", subject, writeID, ErrNothingToRepair)
	case err != nil:
		return audit.Record{}, false, err
	case o.WriteID != writeID:
		return audit.Record{}, false, fmt.Errorf("%s carries another write (write id %s), and no clear with write id %s is claimed: the change was replaced since, and its record cannot be rebuilt from the store: %w",
			subject, textsafe.Quote(o.WriteID), writeID, ErrNothingToRepair)
	}
	e := forceEntry(o)
	e.RepairedBy = repairer
	return log.Repair(ctx, e)
}
