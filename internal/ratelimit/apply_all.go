package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/store"
)

// ApplyAll asks for several operator changes at once (reset, drain or set of
// several clients): the lever `ratelimit reset/drain/set` pulls.
type ApplyAll struct {
	Changes []Change
	Reason  string
	// Actor names who acts; it runs concurrently with the batch read. Nil
	// is fine on a dry run.
	Actor func(ctx context.Context) (string, error)
	// DryRun decides every change and writes nothing.
	DryRun bool
	// Confirm, when set, is called with the decided results and how many
	// buckets will be written, after every read and before the first write,
	// and only when there is something to write; its error aborts.
	Confirm func(plans []ChangeResult, writes int) error
}

// ApplyOutcome is what happened to one change of [Buckets.ApplyAll].
type ApplyOutcome struct {
	Result ChangeResult
	Record audit.Record
	// Written is true when the bucket was written (even if its audit record
	// was not).
	Written bool
	// Unknown is true when the write was interrupted in flight and a
	// re-read could not tell whether it landed (Err wraps
	// [ErrOutcomeUnknown]); Result.Confirmed says a re-read found it landed.
	Unknown bool
	Err     error
}

// ApplyAll validates every change (distinct clients), reads every bucket in
// one strongly consistent batch read while the actor resolves, and decides
// each ([Buckets.Apply]'s rules); buckets already in the requested state are
// reported and not written. Then, unless DryRun, it writes the others
// concurrently, each from the state it read (re-reading only to retry a
// refused write) and followed by its audit record. Outcomes come in the
// order of the changes; the error is the first failed change's.
func (b *Buckets) ApplyAll(ctx context.Context, log audit.Appender, op ApplyAll) ([]ApplyOutcome, error) {
	seen := map[string]bool{}
	keys := make([]string, 0, len(op.Changes))
	for _, c := range op.Changes {
		if err := c.Validate(b.limits); err != nil {
			return nil, err
		}
		if seen[c.Client] {
			return nil, fmt.Errorf("%s %s: the client is named twice", c.Op, c.Client)
		}
		seen[c.Client] = true
		keys = append(keys, Key(c.Client))
	}
	var (
		actor    string
		actorErr error
		wg       sync.WaitGroup
	)
	if op.Actor != nil && !op.DryRun {
		wg.Go(func() { actor, actorErr = op.Actor(ctx) })
	}
	items, err := store.GetMany(ctx, b.store, keys)
	wg.Wait()
	if err != nil {
		return nil, fmt.Errorf("read buckets: %w", err)
	}
	outcomes := make([]ApplyOutcome, len(op.Changes))
	plans := make([]ChangeResult, len(op.Changes))
	reads := make([]*readItem, len(op.Changes))
	writes := 0
	for i, c := range op.Changes {
		reads[i] = &readItem{item: items[Key(c.Client)]}
		c.DryRun = true
		p, err := b.apply(ctx, c, &readItem{item: items[Key(c.Client)]})
		if err != nil {
			return nil, err
		}
		plans[i], outcomes[i] = p, ApplyOutcome{Result: p}
		if p.Changed {
			writes++
		}
	}
	if op.DryRun || writes == 0 {
		return outcomes, nil
	}
	if actorErr != nil {
		return nil, actorErr // only a write needs to know who acts
	}
	if op.Confirm != nil {
		if err := op.Confirm(plans, writes); err != nil {
			return nil, err
		}
	}
	for i, c := range op.Changes {
		if !plans[i].Changed {
			continue
		}
		wg.Go(func() {
			res, rec, err := b.applyAudited(ctx, log, actor, op.Reason, c, reads[i])
			unknown := errors.Is(err, ErrOutcomeUnknown)
			outcomes[i] = ApplyOutcome{Result: res, Record: rec, Err: err, Unknown: unknown,
				Written: res.Changed && !unknown && (err == nil || errors.Is(err, audit.ErrAuditWrite))}
		})
	}
	wg.Wait()
	for _, o := range outcomes {
		if o.Err != nil {
			return outcomes, o.Err
		}
	}
	return outcomes, nil
}
