package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/store"
)

// ChangeBuckets is the most buckets one store change writes: each bucket's
// write and its audit record are two of the change's [store.MaxChangeOps].
const ChangeBuckets = store.MaxChangeOps / 2

// ChangeConcurrency bounds how many store changes [Buckets.ApplyAll] sends
// at once when its buckets do not fit in one.
const ChangeConcurrency = 4

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
	// Gate, when set, decides the change from items read in the same batch
	// read as the buckets (the table's policy): see [Gate].
	Gate *Gate
	// Attach, when set, is how the table's policy let the change through
	// and the writes that go in its transaction ([Attach]).
	Attach *Attach
	// Existing refuses a drain or set of a client that has no bucket item
	// (a *[NoBucketError], nothing written): what an operator's command
	// asks, where such a client is more likely a typo than a client yet to
	// send its first request. Zero (false) drains and sets any client, as
	// drills do. A reset of a client without a bucket is a no-op either way.
	Existing bool
	// Segments is the scan width of the suggestion a *[NoBucketError]
	// carries ([Buckets.Closest]).
	Segments int
	// NoNotify keeps the change from being announced (--no-notify).
	NoNotify bool
}

// Gate lets a caller decide a bucket change from items read with its
// buckets, in the same batch read (the table's policy: one round trip, not
// two), after every bucket is read and decided and before anything is
// confirmed or written.
type Gate struct {
	// Keys are read with the buckets.
	Keys []string
	// Decide gets those of Keys that exist and each change's plan; the
	// Attach it returns goes with the change (replacing the operation's),
	// its error stops it, nothing written.
	Decide func(items map[string]store.Item, plans []ChangeResult) (*Attach, error)
}

// Attach is what a bucket change applied under the table's policy carries
// besides its buckets (internal/approval): how the policy let it through,
// stamped on every record, and the writes that go in the same transaction
// (a change request's new status, a break-glass review). A change with
// writes attached is one transaction: at most [MaxAttachedBuckets]
// buckets, and every bucket is written even when it already is in the
// requested state, so the change and its records always land with the
// attached writes.
type Attach struct {
	Approval *audit.Approval
	// Actor, when set, is who applies the change (an approver), recorded as
	// every record's actor with ActorSource.
	Actor       string
	ActorSource audit.ActorSource
	// Ops builds the attached writes for the change's token and time;
	// called again for each attempt (a take landed since the read). Nil:
	// none.
	Ops func(token string, now time.Time) []store.Op
	// Refused words the refusal of an attached write (the item as stored,
	// nil Current when the store did not say); such a refusal is final.
	Refused func(ce store.ConditionError) error
	// Note is said with the change's announcement (a break-glass's loud
	// words).
	Note Note
}

// MaxAttachedBuckets is the most buckets one change with attached writes
// holds: one transaction, with room for the attached writes.
const MaxAttachedBuckets = ChangeBuckets - 1

func (g *Gate) keys() []string {
	if g == nil {
		return nil
	}
	return g.Keys
}

// ApplyOutcome is what happened to one change of [Buckets.ApplyAll].
type ApplyOutcome struct {
	Result ChangeResult
	// Record is the change's audit record, written with the bucket.
	Record audit.Record
	// Written is true when the bucket and its record were written.
	Written bool
	// Unknown is true when the store could not be reached to settle the
	// change's lost answer (Err wraps [store.ErrOutcomeUnknown]): it may or
	// may not have landed, bucket and record together.
	Unknown bool
	Err     error
}

// ApplyAll validates every change (distinct clients), reads every bucket in
// one strongly consistent batch read while the actor resolves, and decides
// each; buckets already in the requested state are reported and neither
// written nor recorded. Then, unless DryRun, it writes the others with
// their audit records as one store change ([store.Apply]) when they fit
// ([ChangeBuckets]), else as one change per chunk of that size, at most
// [ChangeConcurrency] at once, each chunk with its own outcome. A chunk
// refused because a take landed since the read is rebuilt from a re-read
// of the refused buckets, as a new change ([Buckets.ApplyAudited]).
// Outcomes come in the order of the changes; the error is the first failed
// change's. What was written is announced.
func (b *Buckets) ApplyAll(ctx context.Context, op ApplyAll) ([]ApplyOutcome, error) {
	log, err := b.changeLog()
	if err != nil && !op.DryRun {
		return nil, err
	}
	if err := audit.ValidateReason(op.Reason); err != nil {
		return nil, err
	}
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
	items, err := store.GetMany(ctx, b.store, append(slices.Clone(keys), op.Gate.keys()...))
	wg.Wait()
	if err != nil {
		return nil, fmt.Errorf("read buckets: %w", err)
	}
	now := b.clock.Now()
	outcomes := make([]ApplyOutcome, len(op.Changes))
	plans := make([]ChangeResult, len(op.Changes))
	decideAll := func() (todo []int) {
		for i, c := range op.Changes {
			if op.Attach != nil && op.Attach.Ops != nil {
				c.always = true
			}
			plans[i], _, _ = b.decide(c, items[Key(c.Client)], now)
			outcomes[i] = ApplyOutcome{Result: plans[i]}
			if plans[i].Changed {
				todo = append(todo, i)
			}
		}
		return todo
	}
	todo := decideAll()
	if op.Existing {
		for _, p := range plans {
			if p.Before.Exists || p.Change.Op == OpReset {
				continue
			}
			near, err := b.Closest(ctx, p.Change.Client, op.Segments)
			if err != nil {
				return nil, fmt.Errorf("%s %s: no bucket, and looking for a near client failed: %w", p.Change.Op, p.Change.Client, err)
			}
			return nil, &NoBucketError{Op: p.Change.Op, Client: p.Change.Client, Suggestion: near}
		}
	}
	if op.Gate != nil {
		extras := map[string]store.Item{}
		for _, k := range op.Gate.Keys {
			if it, ok := items[k]; ok {
				extras[k] = it
			}
		}
		if op.Attach, err = op.Gate.Decide(extras, plans); err != nil {
			return nil, err
		}
		if op.NoNotify && op.Attach != nil && op.Attach.Approval.BreakGlass() {
			return nil, audit.ErrBreakGlassQuiet
		}
		todo = decideAll() // attached writes write every bucket
	}
	if op.DryRun || len(todo) == 0 {
		return outcomes, nil
	}
	if actorErr != nil {
		return nil, actorErr // only a write needs to know who acts
	}
	if op.Attach != nil && op.Attach.Ops != nil && len(todo) > MaxAttachedBuckets {
		return nil, fmt.Errorf("a change under the table's policy moves at most %d buckets, not %d: name fewer clients", MaxAttachedBuckets, len(todo))
	}
	if op.Confirm != nil {
		if err := op.Confirm(plans, len(todo)); err != nil {
			return nil, err
		}
	}
	by := recordBy{actor: actor, reason: op.Reason, attach: op.Attach}
	sem := make(chan struct{}, ChangeConcurrency)
	for start := 0; start < len(todo); start += ChangeBuckets {
		chunk := todo[start:min(start+ChangeBuckets, len(todo))]
		changes := make([]Change, len(chunk))
		raw := make([]store.Item, len(chunk))
		for j, i := range chunk {
			changes[j], raw[j] = op.Changes[i], items[keys[i]]
			changes[j].always = op.Attach != nil && op.Attach.Ops != nil
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			for j, o := range b.commit(ctx, log, by, changes, raw) {
				outcomes[chunk[j]] = o
			}
		})
	}
	wg.Wait()
	b.announceAll(ctx, op, actor, outcomes)
	for _, o := range outcomes {
		if o.Err != nil {
			return outcomes, o.Err
		}
	}
	return outcomes, nil
}

// announceAll tells the announcer of the buckets op wrote (those changed).
func (b *Buckets) announceAll(ctx context.Context, op ApplyAll, actor string, outcomes []ApplyOutcome) {
	var written []ApplyOutcome
	for _, o := range outcomes {
		if o.Written && o.Result.Changed {
			written = append(written, o)
		}
	}
	if b.announce == nil || op.NoNotify || len(written) == 0 {
		return
	}
	a := Announcement{Action: written[0].Result.Change.Op.Action(), Actor: actor, Reason: strings.TrimSpace(op.Reason), Outcomes: written}
	if op.Attach != nil {
		a.Note = op.Attach.Note
	}
	b.announce(ctx, a)
}

// recordBy is who acts and why, for the records of a change, and what
// the table's policy attached to it.
type recordBy struct {
	actor, reason string
	attach        *Attach
}

// commit writes changes (distinct clients, at most [ChangeBuckets]) from
// the items read (raw[i] for changes[i], nil when absent) as one store
// change: each bucket's conditional write and its audit record, the
// buckets carrying the change's token as their write_id, the first of them
// its proof. A change refused by a bucket's condition (a take landed since
// the read) is rebuilt from a re-read of the refused buckets under a new
// token, with new records, up to [MutationAttempts] times: a change's
// content never changes under its token. A bucket the re-read finds already
// in the requested state drops out, unrecorded. Every change of the call
// shares the one outcome of its last store change.
func (b *Buckets) commit(ctx context.Context, log audit.Appender, by recordBy, changes []Change, raw []store.Item) []ApplyOutcome {
	outs := make([]ApplyOutcome, len(changes))
	for attempt := 1; ; attempt++ {
		now := b.clock.Now()
		var in []int // the changes this store change writes
		next := make([]Bucket, len(changes))
		conds := make([]store.Condition, len(changes))
		for i, c := range changes {
			res, bk, cond := b.decide(c, raw[i], now)
			res.Attempts, res.WriteID = outs[i].Result.Attempts, outs[i].Result.WriteID
			outs[i] = ApplyOutcome{Result: res}
			if res.Changed {
				next[i], conds[i], in = bk, cond, append(in, i)
			}
		}
		if len(in) == 0 {
			return outs
		}
		token, err := store.NewWriteID()
		if err != nil {
			return failed(outs, in, err)
		}
		ops := make([]store.Op, 0, 2*len(in))
		for n, i := range in {
			c, res := changes[i], outs[i].Result
			next[i].WriteID = token
			e := audit.Entry{Actor: by.actor, Action: c.Op.Action(), Subject: Key(c.Client), Reason: by.reason,
				Before: auditView(res.Before, res.Malformed), After: auditView(res.After, nil)}
			if at := by.attach; at != nil {
				e.Approval = at.Approval
				if at.Actor != "" {
					e.Actor, e.ActorSource = at.Actor, at.ActorSource
				}
			}
			rec, recOp, err := log.Stage(ctx, e, token, n)
			if err != nil {
				// Nothing is sent: not a change made without its record.
				return failed(outs, in, fmt.Errorf("its audit record could not be made, so nothing was written: %v", err))
			}
			outs[i].Record = rec
			ops = append(ops, store.PutOp(next[i].Item(), conds[i]), recOp)
		}
		for _, i := range in {
			outs[i].Result.Attempts++
			outs[i].Result.WriteID = token
		}
		proof := Key(changes[in[0]].Client)
		var attached []store.Op
		if at := by.attach; at != nil && at.Ops != nil {
			attached = at.Ops(token, now)
			if len(attached) > 0 {
				proof = attached[0].PK()
			}
			ops = append(ops, attached...)
		}
		applied, err := store.Apply(ctx, b.store, store.Change{Token: token, Ops: ops, Proof: proof})
		if err == nil {
			for _, i := range in {
				outs[i].Written, outs[i].Result.Confirmed = true, applied.Confirmed
			}
			return outs
		}
		var conflict *store.TxConflictError
		if !errors.As(err, &conflict) {
			return failed(outs, in, err)
		}
		for _, aop := range attached {
			if ce, ok := conflict.On(aop.PK()); ok && by.attach.Refused != nil {
				// The attached write's condition is final (a request
				// decided meanwhile): no retry changes it.
				return failed(outs, in, by.attach.Refused(ce))
			}
		}
		refused := refusedBuckets(conflict)
		switch {
		case ctx.Err() != nil:
			return failed(outs, in, fmt.Errorf("interrupted before the refused change could be rebuilt: %w", ctx.Err()))
		case attempt == MutationAttempts:
			return failed(outs, in, fmt.Errorf("%s: %w; re-run the command", strings.Join(refused, ", "), ErrBusy))
		case len(refused) == 0:
			continue // a record's key was taken: the new token names new ones
		}
		read, err := store.GetMany(ctx, b.store, refused)
		if err != nil {
			return failed(outs, in, fmt.Errorf("the change was refused (%w), and re-reading the buckets failed: %w", conflict, err))
		}
		for i, c := range changes {
			if pk := Key(c.Client); slices.Contains(refused, pk) {
				raw[i] = read[pk]
			}
		}
	}
}

// refusedBuckets lists the bucket keys a conflict names.
func refusedBuckets(conflict *store.TxConflictError) []string {
	var pks []string
	for _, c := range conflict.Conflicts {
		if strings.HasPrefix(c.PK, KeyPrefix) {
			pks = append(pks, c.PK)
		}
	}
	return pks
}

// failed gives err to the changes of in, none of which was written (or,
// when err wraps [store.ErrOutcomeUnknown], whose outcome is unknown).
func failed(outs []ApplyOutcome, in []int, err error) []ApplyOutcome {
	unknown := errors.Is(err, store.ErrOutcomeUnknown)
	for _, i := range in {
		c := outs[i].Result.Change
		outs[i].Record, outs[i].Unknown = audit.Record{}, unknown
		switch {
		case unknown:
			outs[i].Err = fmt.Errorf("%s %s: %w", c.Op, c.Client, err)
		case len(in) > 1:
			outs[i].Err = fmt.Errorf("%s %s: not written (one change held %d buckets, written all or none): %w", c.Op, c.Client, len(in), err)
		default:
			outs[i].Err = fmt.Errorf("%s %s: not written: %w", c.Op, c.Client, err)
		}
	}
	return outs
}
