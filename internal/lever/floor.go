package lever

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// A change at the physical floor: one conditional transaction, no read.
//
// A change read first costs a batch read and a transaction. When every
// target's change from an absent item is a write conditional on that
// absence (a force of a dependency with nothing in force), the read tells
// the service nothing the write's own conditions do not check: the service
// plans every target absent, unread, and takes the caller's extra keys (the
// table's policy, for internal/approval's guard) as absent too, each
// checked by a ConditionCheck in the same transaction. With nothing in
// force and no policy, the change is that one TransactWriteItems: the
// override's attribute_not_exists carries the check, its record's
// before-image is empty, and the policy's absence is a condition of the
// transaction, so a policy set meanwhile stops it whole.
//
// On a refusal, each refused condition's answer (DynamoDB's
// ReturnValuesOnConditionCheckFailure, which every backend gives) shows
// what is there, and a condition not refused held (the store names every
// refused one), so nothing is read again:
//   - a target that is there is decided again on its item as shown, as a
//     read would have decided it (held by someone else: refused in the
//     kind's words; the caller's own: replaced), the extra keys still
//     checked absent; that first refusal is not one of the action's
//     attempts;
//   - an extra key that is there (a policy) is not the service's to decide:
//     the change stops with an *[AssumedError] holding what the refusal
//     showed, which the caller plans again with ([Change.Seen]), unread, and
//     commits: a read's cost, paid only where something was there.

// floorable reports whether c may be planned unread: a change committed at
// once (nobody is shown its plan), written now (not a dry run, not a
// break-glass, which is decided on the policy as read), of targets nobody read (no [Change.Read], nothing seen), few
// enough for one transaction with the checks of its extra keys.
func floorable(c Change) bool {
	return c.AtOnce && !c.DryRun && !c.BreakGlass && !c.Always && c.Read == nil && c.Seen == nil &&
		len(c.Targets) > 0 && len(c.Targets) <= MaxAttached
}

// planAbsent plans c with every target absent, unread: nil unless each
// target's plan from absent is a write conditional on the absence (its
// kind's rule admitting it), so that the write itself checks what a read
// would have shown.
func (s *Service) planAbsent(ctx context.Context, c Change, kind Kind, action Action, extra []string) *Planned {
	at := s.clock.Now()
	plans := make([]Plan, len(c.Targets))
	for i, t := range c.Targets {
		pl, err := kind.Plan(c, t, nil, at)
		if err != nil || pl.Noop || pl.Write == nil {
			return nil
		}
		if op, _, _ := pl.Write(Stamp{}); !op.Cond.RequiresAbsent() {
			return nil
		}
		plans[i] = pl
	}
	if kind.Admit(ctx, c, plans) != nil {
		return nil // decided on the items as read
	}
	return &Planned{Change: c, Kind: kind, Action: action, Plans: plans, Extra: map[string]store.Item{}, at: at,
		extra: extra, absent: slices.Clone(extra), floor: true}
}

// checks are the ConditionChecks that the extra keys todo's changes took as
// absent still are (one per key).
func checks(todo []ref) []store.Op {
	var out []store.Op
	var done []*Planned
	for _, r := range todo {
		if slices.Contains(done, r.p) {
			continue
		}
		done = append(done, r.p)
		for _, k := range r.p.absent {
			if !slices.ContainsFunc(out, func(op store.Op) bool { return op.Check == k }) {
				out = append(out, store.CheckOp(k, store.IfAbsent()))
			}
		}
	}
	return out
}

// AssumedError is a change stopped because an item its plan took as
// absent, unread, is there (the table's policy, for the guard that asked
// for it): nothing was written. Change is the change again, its Seen what
// the refusal showed (the targets' items as known, the extra keys'), to be
// planned again, unread, and decided on them. It matches [ErrConflict].
type AssumedError struct {
	Change Change
	// Extra are the extra keys the first plan was asked for.
	Extra []string
	// Keys are the keys found there.
	Keys []string
}

func (e *AssumedError) Error() string {
	q := make([]string, len(e.Keys))
	for i, k := range e.Keys {
		q[i] = textsafe.Quote(k)
	}
	return fmt.Sprintf("%s: %s is there, which the change was planned without: run it again to have it decided on what is there", ErrNotWritten, strings.Join(q, ", "))
}

// Is makes errors.Is(err, ErrNotWritten) and errors.Is(err, ErrConflict)
// true.
func (e *AssumedError) Is(target error) bool { return target == ErrNotWritten || target == ErrConflict }

// assumed is the *AssumedError of a transaction of chunk refused by tce
// (items: the targets' items as known), when a check of an extra key was
// refused; nil otherwise.
func assumed(chunk []ref, items map[int]store.Item, tce *store.TxConflictError) *AssumedError {
	p := chunk[0].p
	var there []string
	seen := map[string]store.Item{}
	for _, k := range p.absent {
		ce, refused := tce.On(k)
		switch {
		case !refused:
			seen[k] = nil // its check held
		case ce.Current != nil:
			seen[k], there = ce.Current, append(there, k)
		default:
			there = append(there, k) // the store did not say: read it
		}
	}
	if len(there) == 0 {
		return nil
	}
	for k, it := range p.Extra {
		seen[k] = it
	}
	spec := p.Kind.Spec()
	for j, r := range chunk {
		if r.p != p {
			continue
		}
		key := spec.Key(r.plan().Target)
		ce, refused := tce.On(key)
		switch {
		case !refused:
			seen[key] = items[j]
		case ce.Current != nil:
			seen[key] = ce.Current
		}
	}
	c := p.Change
	c.Seen = seen
	return &AssumedError{Change: c, Extra: p.extra, Keys: there}
}

// unheardUnwritten reports whether err is a change whose answer was lost
// and which the read of its proof showed did not land ([store.Apply]: an
// unavailable store, the outcome known, nothing written).
func unheardUnwritten(err error) bool {
	return errors.Is(err, store.ErrUnavailable) && !errors.Is(err, store.ErrThrottled) &&
		!errors.Is(err, store.ErrOutcomeUnknown) && !errors.Is(err, store.ErrNotSent)
}

// refloor decides the targets of chunk (all: every index of it), a floor
// plan's, again on their items as its refusal tce showed them (read where
// the store did not say; a target whose condition held is absent; nil tce,
// a refusal unheard: every target read), as a read's plan decides them: a
// target the kind refuses now (held by someone else) refuses the whole
// change, nothing written. items takes what was shown.
func (s *Service) refloor(ctx context.Context, chunk []ref, all []int, items map[int]store.Item, tce *store.TxConflictError) error {
	if err := s.shown(ctx, chunk, all, items, tce); err != nil {
		if tce == nil {
			return fmt.Errorf("%w: its answer was lost and it did not land, and reading the %s failed: %w", ErrNotWritten, plural(chunk[0].p.Kind.Spec().Item), err)
		}
		return fmt.Errorf("the change was refused (%w), and reading the %s failed: %w", tce, plural(chunk[0].p.Kind.Spec().Item), err)
	}
	now := s.clock.Now()
	plans := map[*Planned][]Plan{}
	var order []*Planned
	for j, r := range chunk {
		pl, err := r.p.Kind.Plan(r.p.Change, r.plan().Target, items[j], now)
		if err != nil {
			return err
		}
		if _, ok := plans[r.p]; !ok {
			order = append(order, r.p)
		}
		plans[r.p] = append(plans[r.p], pl)
	}
	for _, p := range order {
		if err := p.Kind.Admit(ctx, p.Change, plans[p]); err != nil {
			return err
		}
	}
	return nil
}

// wholeRefusal is the kind's refusal of a floor plan's change, decided on
// what its transaction's refusal showed: the whole change is refused, as
// [Service.Plan] refuses it on the items as read.
type wholeRefusal struct{ err error }

func (e *wholeRefusal) Error() string { return e.err.Error() }
func (e *wholeRefusal) Unwrap() error { return e.err }

// refusedWhole is the kind's refusal of r's whole change at the floor (nil:
// none): what [Service.Plan] would have returned, with no outcome.
func refusedWhole(r Report) error {
	var wr *wholeRefusal
	if len(r.Outcomes) == 0 || !errors.As(r.Outcomes[0].Err, &wr) {
		return nil
	}
	return wr.err
}
