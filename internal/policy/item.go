package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/proof"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Key is the pk of the table's one policy item.
const Key = "policy#table"

// ActionSet is the audit action of a policy change.
const ActionSet = "policy.set"

// Attributes of the policy item (docs/contracts/policy.md).
const (
	attrText      = "text"
	attrSHA256    = "sha256"
	attrVersion   = "version"
	attrSince     = "since"
	attrUpdatedAt = "updated_at"
	attrActor     = "actor"
	// attrProof names the policy.set proof written with the item: the
	// admin's proof that this text (its hash) is the one they set.
	attrProof = "proof"
)

// Stored is the table's policy as read.
type Stored struct {
	Set *Set
	// SHA256 is the hex SHA-256 of the text.
	SHA256  string
	Version int64
	// Since is when the table first had a policy: lever changes recorded
	// since without an approval are flagged (see [Unapproved]).
	Since     time.Time
	UpdatedAt time.Time
	Actor     string
	// Proof is the key of the policy.set proof the item names (written in
	// its transaction, by its admin); empty on an item written without one
	// (by an older koshactl, or by hand), which proves nothing.
	Proof string
	raw   store.Item
}

// Rules is s's policy set: nil for a nil s (the table has none, which
// [Decide] takes as [NoPolicy]).
func (s *Stored) Rules() *Set {
	if s == nil {
		return nil
	}
	return s.Set
}

// Sum is the hex SHA-256 of a policy text.
func Sum(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}

// ErrStoredInvalid marks a stored policy item that cannot be used (written
// by hand, or by a newer koshactl with a wider schema): koshactl refuses
// every lever change on that table until an admin sets a valid policy,
// since a guard that cannot be evaluated is a reason to stop.
var ErrStoredInvalid = exitcode.New(exitcode.Refused, "the table's policy cannot be read")

// FromItem decodes the stored policy item, validated against sch.
func FromItem(sch *Schema, it store.Item) (*Stored, error) {
	text, ok := it[attrText].(string)
	if !ok {
		return nil, fmt.Errorf("%w: %s has no text attribute (S): an admin sets it again with koshactl policy set FILE", ErrStoredInvalid, Key)
	}
	set, err := Parse(sch, Key, []byte(text))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v: an admin sets a valid one with koshactl policy set FILE", ErrStoredInvalid, Key, textsafe.Line(err.Error()))
	}
	s := &Stored{Set: set, SHA256: Sum(text), Since: SinceOf(it), Actor: it.Str(attrActor), Proof: it.Str(attrProof), raw: it}
	s.Version, _ = it.Int(attrVersion)
	if ms, ok := it.Int(attrUpdatedAt); ok {
		s.UpdatedAt = time.UnixMilli(ms).UTC()
	}
	return s, nil
}

// SinceOf is the since of a policy item as stored (zero when it has none),
// read without parsing the policy: what bypassed even a policy koshactl
// cannot read is still flagged.
func SinceOf(it store.Item) time.Time {
	if ms, ok := it.Int(attrSince); ok {
		return time.UnixMilli(ms).UTC()
	}
	return time.Time{}
}

// Policies reads and sets the table's policy.
type Policies struct {
	store  store.Transactor
	clock  clock.Clock
	schema *Schema
}

// NewPolicies returns the policy of the table s, validated against sch; a
// nil clk is the wall clock.
func NewPolicies(s store.Transactor, clk clock.Clock, sch *Schema) *Policies {
	if clk == nil {
		clk = clock.Real{}
	}
	return &Policies{store: s, clock: clk, schema: sch}
}

// Load reads the table's policy (one strongly consistent read): nil when
// the table has none.
func (p *Policies) Load(ctx context.Context) (*Stored, error) {
	it, err := p.store.Get(ctx, Key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the table's policy: %w", err)
	}
	return FromItem(p.schema, it)
}

// Since reads when the table first had a policy (one strongly consistent
// read of its item), without parsing the policy: what bypassed even a
// policy koshactl cannot read is still flagged (see [Unapproved]). ok is
// false when the table has no policy; since is zero when its item has no
// since (written by hand), which flags nothing.
func (p *Policies) Since(ctx context.Context) (since time.Time, ok bool, err error) {
	it, err := p.store.Get(ctx, Key)
	if errors.Is(err, store.ErrNotFound) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("read the table's policy: %w", err)
	}
	return SinceOf(it), true, nil
}

// SetResult is what [Policies.Set] did.
type SetResult struct {
	Before, After *Stored
	Record        audit.Record
	// Unchanged is true when the stored policy was already this text:
	// nothing was written.
	Unchanged bool
	Confirmed bool
}

// Set stores set as the table's policy in one transaction with its audit
// record (store.Apply), conditional on the policy item as read, so two
// admins setting it at once never overwrite each other unseen (the second
// gets store.ErrConditionFailed). The same text again writes nothing.
func (p *Policies) Set(ctx context.Context, log audit.Appender, set *Set, by audit.Identity, reason string) (SetResult, error) {
	writer, err := proof.WriterOf(by)
	if err != nil {
		return SetResult{}, fmt.Errorf("set the table's policy: %w", err)
	}
	before, err := p.Load(ctx)
	if err != nil && !errors.Is(err, ErrStoredInvalid) {
		return SetResult{}, err
	}
	var raw store.Item
	cond := store.IfAbsent()
	var res SetResult
	if before != nil {
		raw, res.Before = before.raw, before
		if before.SHA256 == Sum(set.Text) {
			// The same text again writes nothing, when its proof says it
			// was set so; an item no proof proves is set again, with one.
			err := p.proven(ctx, before)
			if err == nil {
				res.After, res.Unchanged = before, true
				return res, nil
			}
			if !errors.Is(err, ErrUnproven) {
				return SetResult{}, err
			}
		}
	}
	if raw == nil && errors.Is(err, ErrStoredInvalid) {
		// An unreadable item is replaced conditional on being the one read.
		it, gerr := p.store.Get(ctx, Key)
		if gerr != nil {
			return SetResult{}, fmt.Errorf("read the table's policy: %w", gerr)
		}
		raw = it
	}
	if raw != nil {
		if w := raw.WriteID(); w != "" {
			cond = store.IfEquals(store.WriteIDAttr, w)
		} else {
			cond = store.IfPresentWithout(store.WriteIDAttr)
		}
	}
	token, err := store.NewWriteID()
	if err != nil {
		return SetResult{}, err
	}
	now := p.clock.Now().UTC().Truncate(time.Millisecond)
	since, version := now, int64(1)
	if before != nil {
		if !before.Since.IsZero() {
			since = before.Since
		}
		version = before.Version + 1
	}
	pf := proof.Proof{Writer: writer, Verb: proof.Set, Kind: proof.KindPolicy, Subject: proofSubject(version, token),
		Binding: Sum(set.Text), At: now}
	it := store.Item{store.PK: Key, attrText: set.Text, attrSHA256: Sum(set.Text), attrVersion: version,
		attrSince: since.UnixMilli(), attrUpdatedAt: now.UnixMilli(), attrActor: by.Actor, attrProof: pf.Key(), store.WriteIDAttr: token}
	var beforeDoc any
	if before != nil {
		beforeDoc = map[string]any{"sha256": before.SHA256, "version": before.Version, "text": before.Set.Text}
	}
	rec, rop, err := log.Stage(ctx, audit.Entry{Actor: by.Actor, ActorSource: by.Source, Action: ActionSet, Subject: Key, Reason: reason, Before: beforeDoc,
		After: map[string]any{"sha256": Sum(set.Text), "version": version, "text": set.Text}}, token, 0)
	if err != nil {
		return SetResult{}, err
	}
	applied, err := store.Apply(ctx, p.store, store.Change{Token: token, Ops: []store.Op{store.PutOp(it, cond), pf.Put(token), rop}, Proof: rop.PK()})
	if err != nil {
		if errors.Is(err, store.ErrOutcomeUnknown) {
			return SetResult{}, fmt.Errorf("%w: check with koshactl policy get", err)
		}
		if errors.Is(err, store.ErrConditionFailed) {
			return SetResult{}, fmt.Errorf("the table's policy changed while koshactl was setting it: review it with koshactl policy get, then re-run: %w", err)
		}
		return SetResult{}, fmt.Errorf("set the table's policy: %w", err)
	}
	after, _ := FromItem(p.schema, it)
	res.After, res.Record, res.Confirmed = after, rec, applied.Confirmed
	return res, nil
}

// UnapprovedAt is the rule of [Unapproved] for any lever write: written at
// or after since (the policy's; zero when the table has none) without an
// approval. The dashboard flags an override item by it (the item carries
// its write's approval).
func UnapprovedAt(written time.Time, approval *audit.Approval, since time.Time) bool {
	return !since.IsZero() && approval == nil && !written.Before(since)
}

// Unapproved reports whether r is a lever change the policy stored since
// since should have seen and did not: a lever action (one of the schema's)
// recorded at or after since, by an operator (not the data plane), with no
// approval. Such a change was made by a writer that bypassed the policy (an
// older koshactl, another tool, a role allowed to write lever items).
func (s *Schema) Unapproved(r audit.Record, since time.Time) bool {
	return !r.DataPlane && UnapprovedAt(r.Time, r.Approval, since) && s.Resource(r.Action) != ""
}
