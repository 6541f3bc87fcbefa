package breaker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// leverWrite builds one override's write and the audit entry recording
// it, for the change whose token is token, stamped at now (the moment the
// change is built, so a confirmation prompt does not shorten a --for).
type leverWrite func(token string, now time.Time) (store.Op, audit.Entry)

// committed is what became of one leverWrite.
type committed struct {
	record    audit.Record
	confirmed bool
	err       error
}

const (
	// changeLevers is how many overrides one transaction changes: each
	// takes two of DynamoDB's 100 actions, its item and its record.
	changeLevers = store.MaxChangeOps / 2
	// changeWorkers bounds the transactions one operation has in flight
	// (clear --all of thousands of overrides).
	changeWorkers = 4
)

// Attach is what a change applied under the table's policy carries besides
// its levers (internal/approval): how the policy let it through, stamped on
// every record of the change, and the writes that go in the same
// transaction (a change request's new status, a break-glass review). A
// change with writes attached is one transaction whatever its size: at most
// [MaxAttachedLevers] levers.
type Attach struct {
	Approval *audit.Approval
	// Actor, when set, is who applies the change (an approver), recorded as
	// every record's actor with ActorSource; the levers keep their own
	// actor (the requester's).
	Actor       string
	ActorSource audit.ActorSource
	// Ops builds the attached writes for the change's token and time; the
	// first is the change's proof (it carries the token). Nil: none.
	Ops func(token string, now time.Time) []store.Op
	// Note is said with the change's announcement (a break-glass's loud
	// words), instead of the operation's own.
	Note Note
	// Refused words the refusal of an attached write (the item as stored,
	// nil Current when the store did not say).
	Refused func(ce store.ConditionError) error
}

// MaxAttachedLevers is the most levers one change with attached writes
// holds: one transaction, with room for the attached writes.
const MaxAttachedLevers = changeLevers - 1

// ErrTooManyLevers reports a change with attached writes over
// [MaxAttachedLevers] levers.
var ErrTooManyLevers = fmt.Errorf("a change under the table's policy moves at most %d levers", MaxAttachedLevers)

// ErrNotWritten marks a lever write that was part of a change the store
// refused for another write's sake: nothing of the change was written.
var ErrNotWritten = errors.New("not written")

// commit writes every override write with its audit record as one
// transaction ([store.Apply]): all of them or none. Past one transaction's
// limit ([changeLevers] overrides) the writes go in chunks, each a
// transaction with its own outcome, at most [changeWorkers] at once; a
// chunk not started when ctx ends is not sent. One outcome per write, in
// order.
func (s *Overrides) commit(ctx context.Context, log audit.Appender, writes []leverWrite, at *Attach) []committed {
	out := make([]committed, len(writes))
	if at != nil && at.Ops != nil && len(writes) > MaxAttachedLevers {
		for i := range out {
			out[i].err = fmt.Errorf("%w: %w", ErrNotWritten, ErrTooManyLevers)
		}
		return out
	}
	sem := make(chan struct{}, changeWorkers)
	var wg sync.WaitGroup
	for start := 0; start < len(writes); start += changeLevers {
		end := min(start+changeLevers, len(writes))
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if err := ctx.Err(); err != nil {
			for i := start; i < len(writes); i++ {
				out[i].err = fmt.Errorf("%w: interrupted before it was sent: %w: %w", ErrNotWritten, store.ErrNotSent, err)
			}
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			s.commitChunk(ctx, log, writes[start:end], out[start:end], at)
		})
	}
	wg.Wait()
	return out
}

// commitChunk writes one transaction: every write of writes and its record.
func (s *Overrides) commitChunk(ctx context.Context, log audit.Appender, writes []leverWrite, out []committed, at *Attach) {
	fail := func(err error) {
		for i := range out {
			out[i].err = err
		}
	}
	token, err := store.NewWriteID()
	if err != nil {
		fail(err)
		return
	}
	now := s.clock.Now()
	ops := make([]store.Op, 0, 2*len(writes))
	records := make([]audit.Record, len(writes))
	proof := ""
	for i, w := range writes {
		op, e := w(token, now)
		if at != nil {
			e.Approval = at.Approval
			op = stampApproval(op, at.Approval)
			if at.Actor != "" {
				e.Actor, e.ActorSource = at.Actor, at.ActorSource
			}
		}
		rec, rop, err := log.Stage(ctx, e, token, i)
		if err != nil {
			// Nothing was sent: not an audit failure of a change made.
			fail(fmt.Errorf("%w: its audit record could not be built: %v", ErrNotWritten, err))
			return
		}
		records[i] = rec
		ops = append(ops, op, rop)
		if proof == "" && op.Put != nil {
			proof = op.PK()
		}
	}
	if proof == "" {
		proof = ops[1].PK() // only deletes: the first record proves the change
	}
	var attached []store.Op
	if at != nil && at.Ops != nil {
		attached = at.Ops(token, now)
		if len(attached) > 0 {
			proof = attached[0].PK()
		}
		ops = append(ops, attached...)
	}
	applied, err := store.Apply(ctx, s.store, store.Change{Token: token, Ops: ops, Proof: proof})
	for i := range out {
		if err != nil {
			out[i].err = s.explain(ctx, err, ops[2*i], ops)
			if rerr := refusedAttached(err, attached, at); rerr != nil {
				out[i].err = fmt.Errorf("%w: %w", ErrNotWritten, rerr)
			}
			continue
		}
		out[i] = committed{record: records[i], confirmed: applied.Confirmed}
	}
}

// stampApproval puts approval on the override op writes (a delete has no
// item to carry it), so the item itself says the policy let it through.
func stampApproval(op store.Op, approval *audit.Approval) store.Op {
	if op.Put == nil || approval == nil {
		return op
	}
	doc, err := json.Marshal(approval)
	if err != nil {
		return op
	}
	op.Put = op.Put.Clone()
	op.Put[attrApproval] = string(doc)
	return op
}

// refusedAttached is the refusal of an attached write by err, worded by
// at.Refused; nil when err refused none of them.
func refusedAttached(err error, attached []store.Op, at *Attach) error {
	var tce *store.TxConflictError
	if len(attached) == 0 || !errors.As(err, &tce) {
		return nil
	}
	for _, op := range attached {
		if ce, ok := tce.On(op.PK()); ok && at.Refused != nil {
			return at.Refused(ce)
		}
	}
	return nil
}

// explain words why the change holding op (one of ops) was not written,
// for op's dependency: its own conflict, another write's, or the store's
// failure.
func (s *Overrides) explain(ctx context.Context, err error, op store.Op, ops []store.Op) error {
	pk := op.PK()
	dep, _ := DependencyOfKey(pk)
	var tce *store.TxConflictError
	switch {
	case errors.Is(err, store.ErrOutcomeUnknown):
		if ValidateDependency(dep) != nil {
			return fmt.Errorf("%w: check with koshactl breaker list --scan", err)
		}
		return fmt.Errorf("%w: check with koshactl breaker get %s", err, dep)
	case !errors.As(err, &tce):
		return err
	}
	if ce, ok := tce.On(pk); ok {
		return s.conflictOn(ctx, dep, ce)
	}
	other := tce.Conflicts[0].PK
	if odep, ok := DependencyOfKey(other); ok == nil && odep != "" && other != pk {
		for _, o := range ops {
			if o.PK() == other {
				return fmt.Errorf("%w: %s changed while koshactl was acting, and the change holding both was refused whole: review it, then re-run: %w",
					ErrNotWritten, textsafe.Quote(odep), ErrConflict)
			}
		}
	}
	return fmt.Errorf("%w: the audit record's key %s is taken by an item koshactl did not write, so nothing of the change was written: %w",
		ErrNotWritten, textsafe.Quote(other), err)
}

// conflictOn is the *ConflictError of a write of dependency's override
// refused by its condition: the override as stored then (read again when
// the store did not say), or gone.
func (s *Overrides) conflictOn(ctx context.Context, dependency string, ce store.ConditionError) error {
	cur := ce.Current
	if cur == nil {
		it, err := s.store.Get(ctx, OverrideKey(dependency))
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return fmt.Errorf("override %s changed while koshactl was acting, and re-reading it failed: %w", dependency, err)
		default:
			cur = it
		}
	}
	if cur == nil {
		return fmt.Errorf("override %s changed while koshactl was acting (it is gone now): review it, then re-run: %w", dependency, ErrConflict)
	}
	o, err := OverrideFromItem(cur)
	if err != nil {
		return err
	}
	return &ConflictError{Current: o, Raced: true}
}

// Force forces one override with its audit record ([Overrides.ForceAll]
// of one request, no known-dependency rule).
func (s *Overrides) Force(ctx context.Context, req ForceRequest) (ForceResult, audit.Record, error) {
	outs, err := s.ForceAll(ctx, ForceAll{Requests: []ForceRequest{req}})
	if len(outs) == 0 {
		return ForceResult{}, audit.Record{}, err
	}
	return outs[0].Result, outs[0].Record, err
}

// Clear clears one override with its audit record ([Overrides.ClearAll]
// of one dependency). Clearing an absent override succeeds with a nil
// Before and records nothing.
func (s *Overrides) Clear(ctx context.Context, dependency, actor, reason string) (ClearResult, audit.Record, error) {
	outs, err := s.ClearAll(ctx, ClearAll{Dependencies: []string{dependency}, Reason: reason,
		Actor: func(context.Context) (string, error) { return actor, nil }})
	if len(outs) == 0 {
		return ClearResult{}, audit.Record{}, err
	}
	return outs[0].Result, outs[0].Record, err
}
