package freeze

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Prefix starts the pk of every freeze item.
const Prefix = "freeze#"

// Key is the pk of the fleet-wide freeze, the one freeze item.
const Key = Prefix + "fleet"

// Attribute names of the freeze item (docs/contracts/freeze.md).
const (
	AttrActor      = "actor"
	AttrReason     = "reason"
	AttrRef        = "ref"
	AttrSetAt      = "set_at"
	AttrExpiresAt  = "expires_at"
	AttrLiftedAt   = "lifted_at"
	AttrLiftedBy   = "lifted_by"
	AttrLiftReason = "lift_reason"
	AttrVersion    = "version"
	AttrWriteID    = store.WriteIDAttr
	// AttrApproval is how the table's change policy let the item's last
	// write through (the audit record's approval document).
	AttrApproval = "approval"
)

// CacheTTL is how long a data-plane instance may act on the freeze it read
// last: it reads the item with its breaker overrides, at most once per the
// overrides' cache period (5 s).
const CacheTTL = breaker.CacheTTL

// MaxReadAge is the oldest reading of the freeze item a data plane may
// honour a chaos header on: three cache periods. Past it (the store has
// not answered for that long, or the item was never read) every header is
// refused, because a freeze may hold that the instance cannot see.
const MaxReadAge = 3 * CacheTTL

// RecordRetention is how long after its end a freeze item is kept (its ttl
// attribute, DynamoDB's garbage collection): a day, so `freeze status`
// shows the last freeze. It must be at least [HeaderLifetime], or a header
// minted before the end could outlive the record that voids it.
const RecordRetention = 24 * time.Hour

// HeaderLifetime is the longest a chaos header can be honoured after it
// was minted: the 15-minute cap plus the verifiers' largest clock-skew
// allowance.
const HeaderLifetime = chaos.MaxTTL + chaos.MaxSkew

// MaxRefLen bounds a freeze's reference (INC-123, JIRA:OPS-9).
const MaxRefLen = 64

// ErrInvalidFreeze reports a stored item that is not a freeze item at all
// (a pk outside freeze#).
var ErrInvalidFreeze = errors.New("malformed freeze item")

// Freeze is the fleet-wide freeze item: set, and possibly lifted.
type Freeze struct {
	// Actor set the freeze; Reason says why; Ref is the incident's
	// reference ("" when none was given).
	Actor  string
	Reason string
	Ref    string
	// SetAt is when the freeze was set.
	SetAt time.Time
	// ExpiresAt is when the freeze ends on its own; zero when it holds
	// until lifted (or its stored expires_at is malformed: it then holds
	// until lifted, [Freeze.FrozenAt]).
	ExpiresAt time.Time
	// LiftedAt is when it was lifted, zero when it was not (or its stored
	// lifted_at is malformed); LiftedBy and LiftReason who lifted it and
	// why.
	LiftedAt   time.Time
	LiftedBy   string
	LiftReason string
	// Version is 1 on the first write of the item and one more on every
	// write after (a lift, a replacement).
	Version int64
	// WriteID is the token of the write that stored the item, shared with
	// its audit record ("" for an item written by hand).
	WriteID string
	// Approval is how the table's change policy let the last write through;
	// nil when the item has none or it cannot be read.
	Approval *audit.Approval
	// Raw is the item as read (nil for a freeze built in memory): writes
	// are conditional on it ([Freeze.Condition]) and records keep it as the
	// before-image.
	Raw store.Item
	// Problems lists the attributes of Raw that do not follow the
	// contract; empty for a well-formed item.
	Problems []store.Problem
}

// Malformed reports whether the stored item does not follow the contract.
func (f Freeze) Malformed() bool { return len(f.Problems) > 0 }

// HasProblem reports whether attribute attr of the stored item is
// malformed.
func (f Freeze) HasProblem(attr string) bool { return store.HasProblem(f.Problems, attr) }

// End returns when the freeze ends: the first of its expiry and its lift.
// ok is false when it has neither (it holds until lifted).
func (f Freeze) End() (end time.Time, ok bool) {
	switch {
	case f.ExpiresAt.IsZero() && f.LiftedAt.IsZero():
		return time.Time{}, false
	case f.ExpiresAt.IsZero():
		return f.LiftedAt, true
	case f.LiftedAt.IsZero() || f.ExpiresAt.Before(f.LiftedAt):
		return f.ExpiresAt, true
	}
	return f.LiftedAt, true
}

// Lifted reports whether the freeze was lifted (before it expired).
func (f Freeze) Lifted() bool {
	end, ok := f.End()
	return ok && !f.LiftedAt.IsZero() && end.Equal(f.LiftedAt)
}

// FrozenAt applies the rule: the freeze holds at now iff its end is
// unknown or after now. An item whose expires_at or lifted_at is malformed
// reads as if that attribute were absent, so it holds until a readable end
// passes (safety first: a fault refused is harmless).
func (f Freeze) FrozenAt(now time.Time) bool {
	end, ok := f.End()
	return !ok || now.Before(end)
}

// ChaosNotBefore returns the earliest issue time, in unix seconds, of a
// chaos header the freeze lets through once it has ended: its end rounded
// up to the second (a header's iat has whole seconds; rounding up keeps
// every header minted before the end out). ok is false while the freeze
// has no end.
func (f Freeze) ChaosNotBefore() (unix int64, ok bool) {
	end, ok := f.End()
	if !ok {
		return 0, false
	}
	ms := end.UnixMilli()
	return (ms + 999) / 1000, true
}

// AdmitChaos implements [chaos.FreezeRule] for this item: nil when a
// header issued at issued (unix seconds) may be honoured at now, else a
// *chaos.FreezeRefusal naming the freeze.
func (f Freeze) AdmitChaos(issued int64, now time.Time) error {
	if f.FrozenAt(now) {
		return &chaos.FreezeRefusal{Frozen: true, Freeze: f.ref(),
			Reason: f.Describe(now) + ": every chaos header is ignored while it holds"}
	}
	nb, _ := f.ChaosNotBefore()
	if issued < nb {
		end, _ := f.End()
		return &chaos.FreezeRefusal{Freeze: f.ref(),
			Reason: fmt.Sprintf("issued at %s, before the end of the freeze set by %s%s at %s: a header minted before a freeze ended is never honoured; mint a new one",
				time.Unix(issued, 0).UTC().Format(time.RFC3339), f.who(), f.refText(), end.UTC().Format(time.RFC3339Nano))}
	}
	return nil
}

var _ chaos.FreezeRule = Freeze{}

func (f Freeze) ref() chaos.FreezeRef {
	return chaos.FreezeRef{Actor: f.Actor, Ref: f.Ref, WriteID: f.WriteID}
}

// who is the actor as one safe, bounded line.
func (f Freeze) who() string {
	if f.Actor == "" {
		return "(no actor)"
	}
	return textsafe.Line(textsafe.Truncate(f.Actor, textsafe.MaxQuoted))
}

func (f Freeze) refText() string {
	if f.Ref == "" {
		return ""
	}
	return " (" + textsafe.Line(textsafe.Truncate(f.Ref, MaxRefLen)) + ")"
}

// Describe says in one line, safe for a terminal, what the freeze is at
// now: "the fleet is frozen by alice@laptop (INC-123) since
// 2026-11-29T19:00:00Z until 2026-11-29T19:30:00Z, reason: "db failover"",
// "the freeze by … was lifted by bob at …", or "… expired at …". Every
// surface (chaos sign's refusal, the audit record of a refused header,
// freeze status) says it this way.
func (f Freeze) Describe(now time.Time) string {
	var b strings.Builder
	stamp := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	switch {
	case f.FrozenAt(now):
		fmt.Fprintf(&b, "the fleet is frozen by %s%s", f.who(), f.refText())
		if !f.SetAt.IsZero() {
			b.WriteString(" since " + stamp(f.SetAt))
		}
		switch {
		case !f.LiftedAt.IsZero():
			// Lifted at an instant this clock has not reached.
			fmt.Fprintf(&b, ", lifted by %s at %s, which this clock (%s) has not reached", textsafe.Line(textsafe.Truncate(f.LiftedBy, textsafe.MaxQuoted)),
				stamp(f.LiftedAt), stamp(now))
		case !f.ExpiresAt.IsZero():
			b.WriteString(" until " + stamp(f.ExpiresAt))
		default:
			b.WriteString(" until lifted")
		}
	case f.Lifted():
		fmt.Fprintf(&b, "the freeze by %s%s was lifted by %s at %s", f.who(), f.refText(),
			textsafe.Line(textsafe.Truncate(f.LiftedBy, textsafe.MaxQuoted)), stamp(f.LiftedAt))
	default:
		fmt.Fprintf(&b, "the freeze by %s%s expired at %s", f.who(), f.refText(), stamp(f.ExpiresAt))
	}
	fmt.Fprintf(&b, ", reason: %s", textsafe.Quote(f.Reason))
	if f.Malformed() {
		fmt.Fprintf(&b, "; the item is malformed (%s: %s)", f.Problems[0].Attribute, f.Problems[0].Problem)
	}
	return b.String()
}

// Item encodes the freeze as a store item following the contract. Its ttl
// (garbage collection only) is [RecordRetention] after its end, rounded up
// to the second; a freeze without an end has none.
func (f Freeze) Item() store.Item {
	it := store.Item{
		store.PK:    Key,
		AttrActor:   f.Actor,
		AttrReason:  f.Reason,
		AttrSetAt:   f.SetAt.UnixMilli(),
		AttrVersion: f.Version,
	}
	if f.Ref != "" {
		it[AttrRef] = f.Ref
	}
	if !f.ExpiresAt.IsZero() {
		it[AttrExpiresAt] = f.ExpiresAt.UnixMilli()
	}
	if !f.LiftedAt.IsZero() {
		it[AttrLiftedAt] = f.LiftedAt.UnixMilli()
		it[AttrLiftedBy] = f.LiftedBy
		if f.LiftReason != "" {
			it[AttrLiftReason] = f.LiftReason
		}
	}
	if f.WriteID != "" {
		it[AttrWriteID] = f.WriteID
	}
	if end, ok := f.End(); ok {
		it[store.TTLAttr] = (end.Add(RecordRetention).UnixMilli() + 999) / 1000
	}
	return it
}

// Condition returns the condition under which a write may replace the item
// f was read from ([lever.Unchanged]): that it still carries f's write_id
// (unique to the write that stored it); without one, that its version
// attribute is exactly as stored (absent when it was absent). A freeze
// built in memory (no Raw) conditions on its Version; a writer of a new
// item, where none was read, uses store.IfAbsent instead.
func (f Freeze) Condition() store.Condition { return lever.Unchanged(f.Raw, AttrVersion, f.Version) }

// NextVersion is the version the next write of the item carries: one more
// than a well-formed version; for a malformed one, one more than its whole
// part when that is a sensible number, else 1.
func (f Freeze) NextVersion() int64 {
	return lever.NextVersion(f.Raw, AttrVersion, f.Version, f.HasProblem(AttrVersion))
}

// FromItem decodes a stored freeze item. Its error (wrapping
// [ErrInvalidFreeze]) is reserved for an item outside freeze#; every other
// departure from the contract is decoded as far as it goes and listed in
// Problems, and the rule reads such an item safety first (see
// [Freeze.FrozenAt]). Attributes the contract does not name are ignored,
// whatever their type.
func FromItem(it store.Item) (Freeze, error) {
	pk := it.PK()
	if !strings.HasPrefix(pk, Prefix) {
		return Freeze{}, fmt.Errorf("%w: pk %q does not start with %q", ErrInvalidFreeze, pk, Prefix)
	}
	d := store.NewDecoder(it)
	f := Freeze{Raw: it.Clone()}
	if pk != Key {
		d.Problem(store.PK, fmt.Sprintf("want S %q, the fleet's freeze", Key))
	}
	f.Actor = d.Str(AttrActor, true)
	f.Reason = d.Str(AttrReason, true)
	if n := textsafe.Len(f.Reason); n > audit.MaxReasonLen {
		d.Problem(AttrReason, fmt.Sprintf("%d characters, want at most %d", n, audit.MaxReasonLen))
	}
	f.Ref = d.Str(AttrRef, false)
	if n := textsafe.Len(f.Ref); n > MaxRefLen {
		d.Problem(AttrRef, fmt.Sprintf("%d characters, want at most %d", n, MaxRefLen))
	}
	f.SetAt = d.Time(AttrSetAt, true)
	f.ExpiresAt = d.Time(AttrExpiresAt, false)
	f.LiftedAt = d.Time(AttrLiftedAt, false)
	_, lifted := it[AttrLiftedAt]
	f.LiftedBy = d.Str(AttrLiftedBy, lifted)
	f.LiftReason = d.Str(AttrLiftReason, false)
	f.Version = d.Version(AttrVersion)
	d.TTL()
	f.WriteID = it.WriteID()
	f.Approval = lever.ApprovalOf(it, AttrApproval)
	f.Problems = d.Problems
	return f, nil
}

// Getter is what [Read] needs of a store.
type Getter interface {
	Get(ctx context.Context, pk string) (store.Item, error)
}

// Read returns the fleet's freeze item, or nil when there is none (no
// freeze was ever set, or its record was collected). A store error is
// returned as is (it wraps store.ErrUnavailable and the like); an item
// under the key that is not a freeze item at all cannot be, since its pk
// is the key.
func Read(ctx context.Context, s Getter) (*Freeze, error) {
	it, err := s.Get(ctx, Key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the freeze item %s: %w", Key, err)
	}
	return In(map[string]store.Item{Key: it})
}

// In is [Read] of items the caller read by key in its own batch read
// ([Key] among the keys; absent items left out): apply reads the freeze
// with the overrides, in one round trip.
func In(items map[string]store.Item) (*Freeze, error) {
	return lever.Decode(items[Key], FromItem)
}
