package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// ClaimPrefix starts the pk of a claim: "audit#claim#<write token>", the
// item that says which record records the change that consumed that token
// (docs/contracts/audit-record.md). A claim is not a record: listings,
// scans and the index backfill leave it out.
const ClaimPrefix = Prefix + "claim#"

// ClaimKey is the pk of the claim on token.
func ClaimKey(token string) string { return ClaimPrefix + token }

// claimTimeout bounds the claim's write and its resolution.
const claimTimeout = 10 * time.Second

// attrRecord names, in a claim, the pk of the record it stands for.
const attrRecord = "record"

// isClaim reports whether pk is a claim's, not a record's.
func isClaim(pk string) bool { return strings.HasPrefix(pk, ClaimPrefix) }

// ClaimedError reports that the change an [Entry.Once] entry describes is
// already recorded by someone else's claim: another koshactl that made the
// same change (two clears of one item) recorded it first. Record is their
// record, as the claim holds it (their append of it may still be under
// way, or may have failed: `audit repair` writes it from the claim).
type ClaimedError struct {
	Record Record
}

func (e *ClaimedError) Error() string {
	return fmt.Sprintf("%s of %s is already recorded by %s (audit record %s)", e.Record.Action, e.Record.Subject, e.Record.Actor, e.Record.ID)
}

// ErrClaimNotStored marks an append whose claim the store refused outright
// (denied, invalid) on its one send: nothing of the record is stored, so
// `audit repair`, which writes a clear's record from its claim, has nothing
// to write it from.
var ErrClaimNotStored = errors.New("its claim was not stored")

// claim writes the claim on token for r, attribute_not_exists(pk): the one
// arbiter between two writers recording the same change, whatever their
// timing. The claim carries a token of its own, so a lost answer is
// resolved by a re-read like any other write.
//
// The claim is written on a context of its own (bounded by claimTimeout),
// not the caller's: it is what lets `koshactl audit repair` write the record
// of a change already made, so an interrupt after the change (or during
// the claim's send) must not leave the change without it. The record's
// append that follows honors the caller's context.
func (l *Log) claim(ctx context.Context, token string, r Record) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
	defer cancel()
	mine, err := store.NewWriteID()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrAuditWrite, err)
	}
	it := claimItem(token, r)
	it[store.WriteIDAttr] = mine
	perr := l.store.Put(ctx, it, store.IfAbsent())
	for sent := 1; ; sent++ {
		if perr == nil {
			return nil
		}
		if !store.MayHaveApplied(ctx, perr) && sent == 1 && ctx.Err() == nil {
			return fmt.Errorf("%w: claim %s: %w: %w", ErrAuditWrite, it.PK(), ErrClaimNotStored, perr)
		}
		if !store.MayHaveApplied(ctx, perr) {
			return fmt.Errorf("%w: claim %s: %w", ErrAuditWrite, it.PK(), perr)
		}
		if errors.Is(perr, store.ErrConditionFailed) {
			return l.resolveClaim(ctx, it.PK(), mine, r, perr)
		}
		// The send failed: put the same claim again; its answer (written,
		// or refused by the claim now stored) resolves the first.
		if sent == 2 {
			return fmt.Errorf("%w: claim %s: %w", ErrAuditWrite, it.PK(), perr)
		}
		perr = l.store.Put(ctx, it, store.IfAbsent())
	}
}

// resolveClaim says whose claim refused ours (refusal): ours when it carries
// mine (an earlier attempt landed, its answer lost), else someone else's, a
// *ClaimedError, when it records the same change as r (the same action on
// the same subject, of the same before-image). A claim recording another
// change is no claim on this one: the token was reused (an item copied by
// hand, token and all, onto another dependency or with other content), so
// it cannot arbitrate, and r is recorded unclaimed (nil) rather than left
// unrecorded behind another change's record. The refusal carries the stored claim where the backend
// returns it (DynamoDB's ALL_OLD, the embedded store), so no read is needed;
// otherwise the claim is read.
func (l *Log) resolveClaim(ctx context.Context, pk, mine string, r Record, refusal error) error {
	var ce *store.ConditionError
	cur := store.Item(nil)
	if errors.As(refusal, &ce) && ce.Current != nil {
		cur = ce.Current
	} else {
		var err error
		switch cur, err = l.store.Get(ctx, pk); {
		case errors.Is(err, store.ErrNotFound):
			return fmt.Errorf("%w: claim %s: %w, and it is not stored now", ErrAuditWrite, pk, refusal)
		case err != nil:
			return fmt.Errorf("%w: claim %s: %w, and re-reading it failed: %w", ErrAuditWrite, pk, refusal, err)
		}
	}
	if cur.WriteID() == mine {
		return nil // our claim landed; its answer was lost
	}
	theirs, ok := recordOfClaim(cur)
	if !ok {
		return fmt.Errorf("%w: claim %s is held by an item that is not a readable claim; it is left as it is", ErrAuditWrite, pk)
	}
	if theirs.Action != r.Action || theirs.Subject != r.Subject || !bytes.Equal(theirs.Before, r.Before) {
		return nil
	}
	return &ClaimedError{Record: theirs}
}

// claimItem is the claim on token for r: r's attributes (without the index
// attributes, so no index lists it), keyed by the token, naming r's pk.
func claimItem(token string, r Record) store.Item {
	it := r.item()
	it[attrRecord] = it.PK()
	it[store.PK] = ClaimKey(token)
	for _, ix := range []store.Index{store.IndexAuditDay, store.IndexAuditSubject, store.IndexAuditActor} {
		delete(it, ix.Attr)
	}
	return it
}

// recordOfClaim decodes the record a claim stands for.
func recordOfClaim(claim store.Item) (Record, bool) {
	pk, ok := claim[attrRecord].(string)
	if !ok || !strings.HasPrefix(pk, Prefix) || isClaim(pk) {
		return Record{}, false
	}
	it := maps.Clone(claim)
	it[store.PK] = pk
	delete(it, attrRecord)
	delete(it, store.WriteIDAttr)
	r, ok, problems := fromItem(it)
	return r, ok && len(problems) == 0
}

// ErrClaimOfAnotherSubject reports a claim whose change is of another
// subject than the repair names: nothing is written.
var ErrClaimOfAnotherSubject = errors.New("the claim records a change of another subject")

// RepairClaimed writes the record the claim on token stands for, if it is
// not written yet, naming repairer as who wrote it: the repair of a change
// recorded with [Entry.Once] whose append did not land (an interrupt, a
// store that went away). written is false when the record already exists
// (the change's own append landed, or an earlier repair): nothing is
// written twice. An absent claim returns an error wrapping
// store.ErrNotFound; a claim of a change of another subject than subject,
// one wrapping [ErrClaimOfAnotherSubject], before anything is written.
func (l *Log) RepairClaimed(ctx context.Context, token, subject, repairer string) (rec Record, written bool, err error) {
	claim, err := l.store.Get(ctx, ClaimKey(token))
	if err != nil {
		return Record{}, false, fmt.Errorf("read claim %s: %w", ClaimKey(token), err)
	}
	r, ok := recordOfClaim(claim)
	if !ok {
		return Record{}, false, fmt.Errorf("claim %s is not a readable claim; it is left as it is", ClaimKey(token))
	}
	if r.Subject != subject {
		return Record{}, false, fmt.Errorf("write id %s names a change of %s, not %s: %w", token, r.Subject, subject, ErrClaimOfAnotherSubject)
	}
	r.RepairedBy = repairer
	return l.repair(ctx, r)
}

// Repair writes the record e describes (e.At and e.ID set: the pk follows
// from the change) unless a record is already stored under that pk;
// written says which. See [Log.RepairClaimed].
func (l *Log) Repair(ctx context.Context, e Entry) (rec Record, written bool, err error) {
	if e.At.IsZero() || e.ID == "" {
		return Record{}, false, fmt.Errorf("%w: a repaired record needs the change's own time and id", ErrAuditWrite)
	}
	r, err := l.record(ctx, e)
	if err != nil {
		return Record{}, false, err
	}
	return l.repair(ctx, r)
}

func (l *Log) repair(ctx context.Context, r Record) (Record, bool, error) {
	it := r.item()
	// The repair's own token, so a lost answer is resolved by a re-read.
	mine, err := store.NewWriteID()
	if err != nil {
		return Record{}, false, fmt.Errorf("%w: %w", ErrAuditWrite, err)
	}
	it[store.WriteIDAttr] = mine
	err = l.store.Put(ctx, it, store.IfAbsent())
	if err == nil {
		return r, true, nil
	}
	if !store.MayHaveApplied(ctx, err) {
		return Record{}, false, fmt.Errorf("%w: %w", ErrAuditWrite, err)
	}
	// Refused, or the answer lost: the item stored under the pk says
	// whether it is ours, the change's own record (or an earlier repair's),
	// or something else.
	var ce *store.ConditionError
	cur := store.Item(nil)
	if errors.As(err, &ce) && ce.Current != nil {
		cur = ce.Current
	} else {
		var gerr error
		if cur, gerr = l.store.Get(ctx, it.PK()); gerr != nil {
			return Record{}, false, fmt.Errorf("%w: %w, and re-reading %s failed: %w", ErrAuditWrite, err, it.PK(), gerr)
		}
	}
	if cur.WriteID() == mine {
		return r, true, nil
	}
	stored, ok, _ := fromItem(cur)
	if !ok || stored.Action != r.Action || stored.Subject != r.Subject {
		return Record{}, false, fmt.Errorf("%w: another item is stored under %s; it is left as it is", ErrAuditWrite, it.PK())
	}
	return stored, false, nil
}

// validID reports whether id is 16 lowercase hex digits.
func validID(id string) bool {
	if len(id) != 16 {
		return false
	}
	for _, c := range id {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// UnwrittenError is a change that was made whose audit record did not land
// (the append failed, or an interrupt stopped it), with what `koshactl audit
// repair` needs to write that record later from the store: the change's
// subject and write token. It wraps the failure (and so ErrAuditWrite).
type UnwrittenError struct {
	Subject string
	// WriteID is the token the repair finds the change by: the written
	// item's write_id (a force), or the deleted item's (a clear, whose
	// claim holds the record).
	WriteID string
	Err     error
}

func (e *UnwrittenError) Error() string { return e.Err.Error() }
func (e *UnwrittenError) Unwrap() error { return e.Err }

// Repairable reports whether [UnwrittenError.RepairCommand] can write the
// missing record: not when the store refused even the claim it would write
// it from.
func (e *UnwrittenError) Repairable() bool { return !errors.Is(e.Err, ErrClaimNotStored) }

// RepairCommand is the command that writes the missing record, acting on
// context contextName (every value quoted for a POSIX shell).
func (e *UnwrittenError) RepairCommand(contextName string) string {
	return "koshactl --context " + textsafe.ShellQuote(contextName) + " audit repair " + textsafe.ShellQuote(e.Subject) +
		" --write-id " + textsafe.ShellQuote(e.WriteID)
}
