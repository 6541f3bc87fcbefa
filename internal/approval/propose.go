package approval

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/policy"
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
}

// ErrNothingToPropose: the change would change nothing (a clear of
// dependencies without an override, a reset of full buckets), so no
// request is made.
var ErrNothingToPropose = errors.New("nothing to propose")

// Propose stores p as a pending request, in one transaction with its audit
// record. The table's policy is read (one read of its item) only to say how
// many approvals the request waits for: the approvals it asks for, and at
// least one where it allows the change at once or there is no policy (a
// proposal is never applied without a person). A change the policy denies
// is refused ([ErrPolicyDenied]): no approval could apply it. The policy
// is asked again, as always, when the request is approved.
func (s *Service) Propose(ctx context.Context, log audit.Appender, p Proposal) (Request, audit.Record, error) {
	if len(p.Change.Targets) == 0 {
		return Request{}, audit.Record{}, fmt.Errorf("%w: %s changes nothing now", ErrNothingToPropose, p.Change.Action)
	}
	if n := len(p.Change.Targets); n > MaxTargets {
		return Request{}, audit.Record{}, exitcode.Errorf(exitcode.Usage, "a proposal names at most %d targets (one approval applies them in one transaction), not %d: split it",
			MaxTargets, n)
	}
	var set *policy.Set
	switch it, err := s.store.Get(ctx, policy.Key); {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return Request{}, audit.Record{}, fmt.Errorf("read the table's policy: %w", err)
	default:
		stored, err := policy.FromItem(s.schema, it)
		if err != nil {
			return Request{}, audit.Record{}, err
		}
		set = stored.Set
	}
	qs, err := s.questions(p.Change, s.clock.Now())
	if err != nil {
		return Request{}, audit.Record{}, err
	}
	req := qs[0]
	req.Actor = policy.Actor{ARN: p.Requester.Actor, Verified: p.Requester.Verified()}
	d := policy.DecideAll(set, req, p.Change.Targets)
	switch d.Outcome {
	case policy.Deny:
		return Request{}, audit.Record{}, fmt.Errorf("%w: %s", ErrPolicyDenied, d.Reason)
	case policy.Allow:
		// No policy asked for the approval: the request names none.
		d.Approvals, d.Policies = 1, nil
	case policy.NeedsApproval:
		d.Approvals = max(d.Approvals, 1)
	}
	return s.Submit(ctx, log, Submission{Change: p.Change, Requester: p.Requester, Decision: d, TTL: p.TTL, Source: p.Source})
}
