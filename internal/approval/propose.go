package approval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/policy"
	"github.com/kosha-platform/koshactl/internal/proof"
	"github.com/kosha-platform/koshactl/internal/store"
)

// Proposal is a lever change asked for by a surface that never applies
// one itself (an agent through `koshactl mcp`): it becomes a change request
// whatever the table's policy says, and a person applies it with
// `koshactl request approve`.
type Proposal struct {
	Change    Change
	Requester audit.Identity
	// Source names the surface on the request's audit record
	// (audit.SourceMCP).
	Source string
	// TTL is how long it may wait: [DefaultTTL] when zero, within
	// [MinTTL]..[MaxTTL].
	TTL time.Duration
	// PerHour is the requester's budget: how many requests its proposals
	// may make in any hour ([DefaultProposalsPerHour] when zero).
	PerHour int
}

// Proposed is what a proposal did.
type Proposed struct {
	// Request is the request made, or the one coalesced into.
	Request Request
	// Record is the new request's record of asking (none when coalesced).
	Record audit.Record
	// Coalesced is true when the requester's identical proposal was
	// pending already: Request is it, and nothing was written.
	Coalesced bool
}

// ErrNothingToPropose: the change would change nothing (a clear of
// dependencies without an override, a reset of full buckets), so no
// request is made.
var ErrNothingToPropose = errors.New("nothing to propose")

// proposeAttempts bounds how often a proposal reads and writes again when
// another proposal of the same identity landed between its read and its
// write.
const proposeAttempts = 8

// Propose stores p as a pending request, in one transaction with its audit
// record, its requester's proof of asking and the requester's two
// proposals items ([ProposalsPrefix]), each conditional on the item as
// read: the budget (the times of its requests in the last hour) and its
// pending item of this change (which request it is). It reads the table's
// policy and those two in one batch read first:
//
//   - the requester's identical proposal still pending (the same change
//     by its ask hash: kind, action, targets, reason, params, and what the
//     requester read where an approval is conditional on it; proven by
//     the requester's own proof of asking) is returned, coalesced: nothing
//     is written, nothing announced;
//   - a change the policy denies is refused ([ErrPolicyDenied]): no
//     approval could apply it;
//   - a requester that made p.PerHour requests in the last hour is refused
//     (*[BudgetError], saying when to retry).
//
// Two proposals at once of one identity are serialized by its items: the
// second re-reads and decides again (two identical ones make one request).
// The policy is read only to say how many approvals the request waits
// for: the approvals it asks for, and at least one where it allows the
// change at once or there is no policy (a proposal is never applied
// without a person). The policy is asked again, as always, when the
// request is approved.
func (s *Service) Propose(ctx context.Context, log audit.Appender, p Proposal) (Proposed, error) {
	if len(p.Change.Targets) == 0 {
		return Proposed{}, fmt.Errorf("%w: %s changes nothing now", ErrNothingToPropose, p.Change.Action)
	}
	if n := len(p.Change.Targets); n > MaxTargets {
		return Proposed{}, exitcode.Errorf(exitcode.Usage, "a proposal names at most %d targets (one approval applies them in one transaction), not %d: split it",
			MaxTargets, n)
	}
	if err := CheckProposalsPerHour(p.PerHour); err != nil {
		return Proposed{}, err
	}
	limit := p.PerHour
	if limit == 0 {
		limit = DefaultProposalsPerHour
	}
	w, err := proof.WriterOf(p.Requester)
	if err != nil {
		return Proposed{}, fmt.Errorf("propose a change: %w", err)
	}
	hash, err := s.askHash(p.Change)
	if err != nil {
		return Proposed{}, err
	}
	budgetKey, pendingKey := proposalKeys(w, hash)
	for attempt := 1; ; attempt++ {
		items, err := store.GetMany(ctx, s.store, []string{policy.Key, budgetKey, pendingKey})
		if err != nil {
			return Proposed{}, fmt.Errorf("read the table's policy and the proposer's budget: %w", err)
		}
		now := s.clock.Now()
		if it, ok := items[pendingKey]; ok {
			r, pending, err := s.stillPending(ctx, w, it, hash, now)
			if err != nil {
				return Proposed{}, err
			}
			if pending {
				return Proposed{Request: r, Coalesced: true}, nil
			}
		}
		d, err := s.proposalDecision(p, items, now)
		if err != nil {
			return Proposed{}, err
		}
		b, err := budgetOf(budgetKey, items[budgetKey])
		if err != nil {
			return Proposed{}, err
		}
		times, err := b.spend(now, limit)
		if err != nil {
			return Proposed{}, err
		}
		read := items[pendingKey]
		r, rec, err := s.Submit(ctx, log, Submission{Change: p.Change, Requester: p.Requester, Decision: d, TTL: p.TTL, Source: p.Source,
			more: func(r Request, token string) []store.Op {
				return []store.Op{b.put(times, token), pendingPut(pendingKey, read, r, token)}
			}})
		if errors.Is(err, errProposalsMoved) {
			if attempt < proposeAttempts {
				continue
			}
			return Proposed{}, exitcode.Errorf(exitcode.Conflict, "propose a change: %d other proposals of this identity landed while it was written: retry", attempt)
		}
		return Proposed{Request: r, Record: rec}, err
	}
}

// proposalDecision is how many approvals p waits for under the table's
// policy among items, as read.
func (s *Service) proposalDecision(p Proposal, items map[string]store.Item, now time.Time) (policy.Decision, error) {
	stored, err := s.PolicyIn(items)
	if err != nil {
		return policy.Decision{}, err
	}
	qs, err := s.questions(p.Change, now)
	if err != nil {
		return policy.Decision{}, err
	}
	req := qs[0]
	req.Actor = policy.Actor{ARN: p.Requester.Actor, Verified: p.Requester.Verified()}
	d := policy.DecideAll(stored.Rules(), req, p.Change.Targets)
	switch d.Outcome {
	case policy.Deny:
		return d, fmt.Errorf("%w: %s", ErrPolicyDenied, d.Reason)
	case policy.Allow:
		// No policy asked for the approval: the request names none.
		d.Approvals, d.Policies = 1, nil
	case policy.NeedsApproval:
		d.Approvals = max(d.Approvals, 1)
	}
	return d, nil
}

// askHash is what makes two proposals the same change: the hash of the
// change with only the images an approval is conditional on (the kind's
// Requested; a bucket's level, read afresh when applied, is not).
func (s *Service) askHash(c Change) (string, error) {
	kind, err := s.kind(c.Action)
	if err != nil {
		return "", err
	}
	ask := c
	ask.Before = map[string]json.RawMessage{}
	for t, img := range c.Before {
		_, ok, err := kind.Requested(t, img)
		if err != nil {
			return "", fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		if ok {
			ask.Before[t] = img
		}
	}
	return ask.Hash()
}

// stillPending reads the request w's pending item it names: returned, with
// true, when it is still pending at now, proven asked by w itself (its
// proof of asking, whatever the item says), and asks for the change of
// ask hash hash. Anything else (decided, expired, gone, another change)
// is false: a new request replaces it.
func (s *Service) stillPending(ctx context.Context, w proof.Writer, it store.Item, hash string, now time.Time) (Request, bool, error) {
	id := it.Str(attrRequest)
	if id == "" {
		return Request{}, false, nil
	}
	r, err := s.Get(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, ErrMalformed):
		return Request{}, false, nil
	case err != nil:
		return Request{}, false, err
	case r.Status != StatusPending, r.StatusAt(now) != StatusPending, r.Verification != (Verification{}), len(r.Proofs) == 0:
		return Request{}, false, nil
	}
	if asked, err := proof.ParseKey(r.Proofs[0]); err != nil || asked.Verb != proof.Ask || !asked.Writer.Is(w) {
		return Request{}, false, nil
	}
	if h, err := s.askHash(r.Change); err != nil || h != hash {
		return Request{}, false, nil
	}
	return r, true, nil
}
