package lever

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// ref is one target of a planned change, and where its outcome goes.
type ref struct {
	p   *Planned
	i   int
	out *Outcome
}

func (r ref) plan() Plan { return r.p.Plans[r.i] }

func (r ref) key() string { return r.p.Kind.Spec().Key(r.plan().Target) }

// commitChunk writes the targets of chunk as one transaction: each target
// decided again at the time of the write, its write and its record, and
// the attached writes. A transaction refused by
// the condition of one of its own items is rebuilt from a re-read of the
// refused items under a new token, with new records, while the action
// allows another attempt: a change's content never changes under its
// token.
func (s *Service) commitChunk(ctx context.Context, chunk []ref, at *Attach) {
	items := make(map[int]store.Item, len(chunk))
	for j, r := range chunk {
		items[j] = r.plan().Item
	}
	fail := func(in []int, err error) {
		for _, j := range in {
			chunk[j].out.Err = s.failure(chunk[j], len(in), err)
		}
	}
	all := make([]int, len(chunk))
	for j := range chunk {
		all[j] = j
	}
	for attempt := 1; ; attempt++ {
		now := s.clock.Now()
		token, err := store.NewWriteID()
		if err != nil {
			fail(all, err)
			return
		}
		var in []int // the targets this transaction writes
		ops := make([]store.Op, 0, 2*len(chunk))
		records := map[int]audit.Record{}
		results := map[int]any{}
		proof := ""
		for j, r := range chunk {
			c := r.p.Change
			pl, err := r.p.Kind.Plan(c, r.plan().Target, items[j], now)
			if err != nil {
				r.out.Err = s.failure(r, 1, err)
				continue
			}
			r.out.Result, r.out.Noop = pl.Result, pl.Noop
			if pl.Noop {
				continue // as asked already: nothing written, nothing recorded
			}
			approval := c.Approval
			if at != nil {
				approval = at.Approval
			}
			op, e, res := pl.Write(Stamp{Token: token, Approval: approval})
			e.Approval = approval
			if r.p.Impact != nil && e.Impact == nil {
				e.Impact = r.p.Impact.Record(pl.Target)
			}
			if at != nil && at.Actor != "" {
				e.Actor, e.ActorSource = at.Actor, at.ActorSource
			}
			rec, rop, err := s.log.Stage(ctx, e, token, len(in))
			if err != nil {
				// Nothing is sent: not a change made without its record.
				fail(all, fmt.Errorf("%w: its audit record could not be built: %v", ErrNotWritten, err))
				return
			}
			in = append(in, j)
			records[j], results[j] = rec, res
			ops = append(ops, op, rop)
			if proof == "" {
				// The first record proves the change: written in its
				// transaction under a key its token names, never updated,
				// it says whether the change landed whoever moved the
				// lever since (store.Apply settles a lost answer on it).
				proof = rop.PK()
			}
		}
		if len(in) == 0 {
			return
		}
		var attached []store.Op
		if at != nil && at.Ops != nil {
			attached = at.Ops(token, now)
			ops = append(ops, attached...)
		}
		ops = append(ops, checks(chunk)...) // the extra keys taken as absent still are
		for _, j := range in {
			o := chunk[j].out
			o.Attempts++
			o.Token, o.Result = token, results[j]
		}
		applied, err := store.Apply(ctx, s.store, store.Change{Token: token, Ops: ops, Proof: proof})
		if err == nil {
			for _, j := range in {
				o := chunk[j].out
				o.Written, o.Confirmed, o.Record = true, applied.Confirmed, records[j]
			}
			return
		}
		if chunk[0].p.floor && attempt == 1 && unheardUnwritten(err) {
			// Planned unread, its answer lost, and the read that settled it
			// showed it did not land: what is there refused it unheard (an
			// override held), as a refusal would have shown. Decide again on
			// the targets as read now, as a read's plan decides them.
			if err := s.refloor(ctx, chunk, all, items, nil); err != nil {
				fail(all, &wholeRefusal{err})
				return
			}
			continue
		}
		var tce *store.TxConflictError
		if errors.As(err, &tce) {
			for _, aop := range attached {
				if ce, ok := tce.On(aop.PK()); ok && at.Refused != nil {
					// The attached write's condition is final (a request
					// decided meanwhile): no retry changes it.
					fail(in, fmt.Errorf("%w: %w", ErrNotWritten, at.Refused(ce)))
					return
				}
			}
			if ae := assumed(chunk, items, tce); ae != nil {
				fail(in, ae) // the caller decides on what is there
				return
			}
			tries := max(chunk[0].p.Action.Attempts, 1)
			if chunk[0].p.floor {
				if attempt == 1 {
					// Planned unread: its refusal is the read, decided as one.
					if err := s.refloor(ctx, chunk, all, items, tce); err != nil {
						fail(all, &wholeRefusal{err})
						return
					}
					continue
				}
				tries++
			}
			if attempt < tries {
				if ctx.Err() != nil {
					fail(in, fmt.Errorf("interrupted before the refused change could be rebuilt: %w", ctx.Err()))
					return
				}
				// A refused item as the refusal showed it; read only where
				// the store did not say (nothing refused: a record's key was
				// taken, and the new token names new ones).
				if rerr := s.shown(ctx, chunk, in, items, tce); rerr != nil {
					fail(in, fmt.Errorf("the change was refused (%w), and re-reading the %s failed: %w", tce, plural(chunk[0].p.Kind.Spec().Item), rerr))
					return
				}
				continue
			}
		}
		for _, j := range in {
			chunk[j].out.Err = s.failure(chunk[j], len(in), s.explain(ctx, chunk[j], err, ops))
		}
		return
	}
}

// shown sets items, the targets in of chunk as known, to what the refusal
// tce showed of those it refused (nil tce, a refusal unheard: nothing
// shown, every one of them read), reading those the store did not show; a
// target whose condition held keeps its item. The error is the read's.
func (s *Service) shown(ctx context.Context, chunk []ref, in []int, items map[int]store.Item, tce *store.TxConflictError) error {
	var unshown []string
	for _, j := range in {
		k := chunk[j].key()
		if tce == nil {
			unshown = append(unshown, k)
		} else if ce, ok := tce.On(k); ok && ce.Current != nil {
			items[j] = ce.Current
		} else if ok {
			unshown = append(unshown, k)
		}
	}
	if len(unshown) == 0 {
		return nil
	}
	read, err := store.GetMany(ctx, s.store, unshown)
	if err != nil {
		return err
	}
	for _, j := range in {
		if k := chunk[j].key(); slices.Contains(unshown, k) {
			items[j] = read[k]
		}
	}
	return nil
}

// failure is err as r's, of a transaction of n targets.
func (s *Service) failure(r ref, n int, err error) error {
	_, verb, _ := strings.Cut(r.p.Change.Action, ".")
	t := r.plan().Target
	if n > 1 && !errors.Is(err, ErrNotWritten) && !errors.Is(err, store.ErrOutcomeUnknown) {
		return fmt.Errorf("%s %s: not written (one change held %d %s, written all or none): %w", verb, t, n, plural(r.p.Kind.Spec().Item), err)
	}
	return fmt.Errorf("%s %s: %w", verb, t, err)
}

// explain words why the transaction holding target's write (of ops) was
// not written, for target: its own conflict (in its kind's words), another
// write's, or the store's failure.
func (s *Service) explain(ctx context.Context, r ref, err error, ops []store.Op) error {
	spec, target := r.p.Kind.Spec(), r.plan().Target
	key := spec.Key(target)
	var tce *store.TxConflictError
	switch {
	case errors.Is(err, store.ErrOutcomeUnknown):
		if spec.Inspect != "" {
			return fmt.Errorf("%w: check with %s %s", err, spec.Inspect, target)
		}
		return err
	case !errors.As(err, &tce):
		return err
	}
	if ce, ok := tce.On(key); ok {
		cur := ce.Current
		if cur == nil {
			it, gerr := s.store.Get(ctx, key)
			switch {
			case errors.Is(gerr, store.ErrNotFound):
			case gerr != nil:
				return fmt.Errorf("%s %s changed while koshactl was acting, and re-reading it failed: %w", spec.Item, target, gerr)
			default:
				cur = it
			}
		}
		return r.p.Kind.Conflict(target, cur)
	}
	other := tce.Conflicts[0].PK
	if o, ok := strings.CutPrefix(other, spec.Prefix); ok && other != key && slices.ContainsFunc(ops, func(op store.Op) bool { return op.PK() == other }) {
		return fmt.Errorf("%w: %s changed while koshactl was acting, and the change holding both was refused whole: review it, then re-run: %w",
			ErrNotWritten, textsafe.Quote(o), ErrConflict)
	}
	return fmt.Errorf("%w: the audit record's key %s is taken by an item koshactl did not write, so nothing of the change was written: %w",
		ErrNotWritten, textsafe.Quote(other), err)
}
