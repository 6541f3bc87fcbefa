package freeze

import (
	"context"
	"fmt"
	"time"

	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/store"
)

// Reading is what a data-plane instance knows of the freeze: the item as
// it last read it and when. The zero Reading has never been read.
type Reading struct {
	// Freeze is the item read, nil when there was none.
	Freeze *Freeze
	// ReadAt is when the item was last read successfully; zero: never.
	ReadAt time.Time
}

// ReadingOf decodes the result of one read of the freeze item at at: the
// item (nil when the read found none). An item that is not a freeze item
// at all cannot sit under [Key]; one that is malformed is decoded as far as
// it goes and read safety first.
func ReadingOf(it store.Item, at time.Time) Reading {
	r := Reading{ReadAt: at}
	if it == nil {
		return r
	}
	f, err := FromItem(it)
	if err != nil {
		// Not under freeze#: the caller passed another key's item. Hold,
		// as for an unreadable end.
		f = Freeze{Raw: it.Clone(), Problems: []store.Problem{{PK: it.PK(), Attribute: store.PK, Problem: err.Error()}}}
	}
	r.Freeze = &f
	return r
}

// Known reports whether the reading may be acted on at now: it was read,
// at most [MaxReadAge] ago.
func (r Reading) Known(now time.Time) bool {
	return !r.ReadAt.IsZero() && now.Sub(r.ReadAt) <= MaxReadAge
}

// RefusesAll reports whether the instance refuses every chaos header at
// now because of the freeze: the fleet is frozen, or the instance cannot
// know whether it is ([Reading.Known]). It is the value of the
// chaos_frozen gauge (1 when true).
func (r Reading) RefusesAll(now time.Time) bool {
	if !r.Known(now) {
		return true
	}
	return r.Freeze != nil && r.Freeze.FrozenAt(now)
}

// AdmitChaos implements [chaos.FreezeRule] for the instance: a reading it
// may not act on refuses every header (the freeze cannot be known), no item
// admits every header, and an item decides by [Freeze.AdmitChaos].
func (r Reading) AdmitChaos(issued int64, now time.Time) error {
	switch {
	case r.ReadAt.IsZero():
		return &chaos.FreezeRefusal{Frozen: true,
			Reason: "the fleet's freeze item has not been read yet: chaos headers are ignored until it has (it is read with the breaker overrides)"}
	case !r.Known(now):
		return &chaos.FreezeRefusal{Frozen: true,
			Reason: fmt.Sprintf("the fleet's freeze item was last read %s ago, longer than the %s a freeze may go unseen: chaos headers are ignored until it is read again",
				human.Duration(now.Sub(r.ReadAt).Round(time.Second)), human.Duration(MaxReadAge))}
	case r.Freeze == nil:
		return nil
	}
	return r.Freeze.AdmitChaos(issued, now)
}

var _ chaos.FreezeRule = Reading{}

// Fixed is a [chaos.FreezeRule] that reads f (nil: no freeze) as current
// whatever the time: for a reader that has just read the item, such as
// `koshactl chaos verify`, whose reading cannot go stale.
type Fixed struct {
	Freeze *Freeze
}

// AdmitChaos implements [chaos.FreezeRule].
func (x Fixed) AdmitChaos(issued int64, now time.Time) error {
	if x.Freeze == nil {
		return nil
	}
	return x.Freeze.AdmitChaos(issued, now)
}

var _ chaos.FreezeRule = Fixed{}

// RuleFor reads the fleet's freeze item and returns the rule of a reader
// that has just read it ([Fixed]); when it cannot be read, a rule whose
// every answer is the read's error, so a verifier refuses every header
// (fail closed) and an explanation reports the check undecided.
func RuleFor(ctx context.Context, s Getter) chaos.FreezeRule {
	f, err := Read(ctx, s)
	if err != nil {
		return unreadable{err}
	}
	return Fixed{Freeze: f}
}

type unreadable struct{ err error }

func (u unreadable) AdmitChaos(int64, time.Time) error { return u.err }
