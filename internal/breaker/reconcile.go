package breaker

import (
	"context"
	"fmt"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/store"
)

// Reconcile is a set of forces and clears decided together, from overrides
// the caller read (a levers file applied to the table): they are written in
// one transaction, each conditional on the item read, each with its audit
// record.
type Reconcile struct {
	// Forces are written conditional on their Read state, which must be
	// set: the caller decided them on it. An active override is replaced
	// only with SeenVersion (the one read) or Overwrite.
	Forces []ForceRequest
	// ForceApprovals, when set, holds one approval per force (nil: none):
	// how the table's policy let that force through, on its item and its
	// record.
	ForceApprovals []*audit.Approval
	// Clears are the overrides read that are to be deleted, each with the
	// reason its record carries.
	Clears []ReconcileClear
	// Actor names who acts, on the clears' records (each force carries its
	// own).
	Actor string
	// Attach, when set, is how the table's policy let the change through.
	Attach *Attach
}

// ReconcileClear is one override a [Reconcile] deletes.
type ReconcileClear struct {
	Read   *Override
	Reason string
	// Approval is how the table's policy let the clear through (nil: none).
	Approval *audit.Approval
}

// ReconcileOutcome says what a [Reconcile] wrote.
type ReconcileOutcome struct {
	Forces []ForceOutcome
	Clears []ClearOutcome
}

// Reconcile checks every force as a planned one ([Overrides.checkPlanned]:
// a reason, an expiry still ahead, within the context's max-override),
// decides it on the state its caller read, then writes
// every force and clear in one transaction ([Overrides.commit]: all or
// nothing, by chunks past DynamoDB's limit). Someone's write since the read
// makes the change a conflict, and nothing of it is written.
func (s *Overrides) Reconcile(ctx context.Context, r Reconcile) (ReconcileOutcome, error) {
	out := ReconcileOutcome{Forces: make([]ForceOutcome, len(r.Forces)), Clears: make([]ClearOutcome, len(r.Clears))}
	log, err := s.changeLog()
	if err != nil {
		return out, err
	}
	plans := make([]forcePlan, len(r.Forces))
	for i, req := range r.Forces {
		if req.Read == nil {
			return out, fmt.Errorf("reconcile %s: the force was not decided on a read", req.Dependency)
		}
		if err := s.checkPlanned(req); err != nil {
			return out, fmt.Errorf("reconcile %s: %w", req.Dependency, err)
		}
		p, err := s.planForce(req, req.Read.Current)
		if err != nil {
			return out, err
		}
		plans[i] = p
	}
	writes := make([]leverWrite, 0, len(plans)+len(r.Clears))
	for i, p := range plans {
		var a *audit.Approval
		if i < len(r.ForceApprovals) {
			a = r.ForceApprovals[i]
		}
		writes = append(writes, withApproval(p.write(&out.Forces[i].Result), a))
	}
	for i, c := range r.Clears {
		before := c.Read
		out.Clears[i] = ClearOutcome{Dependency: before.Dependency, Result: ClearResult{Before: before, WasActive: before.ActiveAt(s.clock.Now())}}
		writes = append(writes, withApproval(clearWrite(before.Dependency, before, r.Actor, c.Reason), c.Approval))
	}
	var first error
	for j, c := range s.commit(ctx, log, writes, r.Attach) {
		if j < len(plans) {
			o := &out.Forces[j]
			o.Record, o.Written, o.Result.Confirmed = c.record, c.err == nil, c.confirmed
			if c.err != nil {
				o.Err = fmt.Errorf("force-open %s: %w", plans[j].req.Dependency, c.err)
			}
			first = firstNonNil(first, o.Err)
			continue
		}
		o := &out.Clears[j-len(plans)]
		o.Record, o.Written, o.Result.Confirmed = c.record, c.err == nil, c.confirmed
		if c.err != nil {
			o.Err = fmt.Errorf("clear %s: %w", o.Dependency, c.err)
		}
		first = firstNonNil(first, o.Err)
	}
	return out, first
}

// withApproval stamps a (when set) on w's item and record.
func withApproval(w leverWrite, a *audit.Approval) leverWrite {
	if a == nil {
		return w
	}
	return func(token string, now time.Time) (store.Op, audit.Entry) {
		op, e := w(token, now)
		e.Approval = a
		return stampApproval(op, a), e
	}
}

func firstNonNil(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
