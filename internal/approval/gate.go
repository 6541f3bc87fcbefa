package approval

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/policy"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Question is what a lever change asks of the table's policy.
type Question struct {
	Action   string
	Targets  []string
	Duration time.Duration
	NoExpiry bool
	Reason   string
	// BreakGlass asks to act at once where the policy allows it.
	BreakGlass bool
}

// ErrNeedsApproval stops a lever change the policy needs approvals for:
// nothing is written; the caller submits a request instead
// ([Gate.Submit]).
var ErrNeedsApproval = errors.New("the change needs approvals")

// ErrNothingToBreak refuses a break-glass on a table without a policy.
var ErrNothingToBreak = errors.New("--break-glass: the table has no policy, so nothing needs breaking: drop the flag")

// Gate is the table's policy asked by one lever change, from the policy
// item read in the same batch read as the levers (breaker.Gate): the one
// rule every surface that pulls a breaker lever follows (the CLI's lever
// commands, the dashboard). With no policy stored it lets the change
// through untouched.
type Gate struct {
	svc      *Service
	identity func(context.Context) (audit.Identity, error)
	ctx      context.Context
	q        Question
	// Policy is nil when the table has none: the change is made as always.
	Policy *policy.Stored
	// Identity is who asked, once the policy was read.
	Identity audit.Identity
	Decision policy.Decision
	// Befores are the levers as read, when the change needs approvals.
	Befores map[string]*breaker.Override
	// Plans are the buckets as read, when a bucket change needs approvals.
	Plans []ratelimit.ChangeResult
	// Review is the review a break-glass change opens.
	Review *Review
}

// NewGate is the gate of one lever change asked by identity.
func (s *Service) NewGate(ctx context.Context, identity func(context.Context) (audit.Identity, error), q Question) *Gate {
	return &Gate{svc: s, identity: identity, ctx: ctx, q: q, Decision: policy.NoPolicy}
}

// Q is the question the gate answers.
func (g *Gate) Q() Question { return g.q }

// Breaker is the gate as the breaker lever operations take it: the policy
// item is read with the overrides; a denial is an error wrapping
// [ErrPolicyDenied], a change that needs approvals [ErrNeedsApproval], an
// allowed one carries how (its records' approval, a break-glass review).
func (g *Gate) Breaker() *breaker.Gate {
	return &breaker.Gate{Keys: []string{policy.Key}, Decide: g.decide}
}

func (g *Gate) decide(items map[string]store.Item, befores map[string]*breaker.Override) (*breaker.Attach, error) {
	nothing := g.q.Action == breaker.ActionClear && !slices.ContainsFunc(slices.Collect(maps.Values(befores)), func(o *breaker.Override) bool { return o != nil })
	at, err := g.decideOn(items, nothing)
	if errors.Is(err, ErrNeedsApproval) {
		g.Befores = befores
	}
	return at, err
}

// Buckets is the gate as the bucket levers take it (ratelimit reset, drain,
// set): the policy item is read with the buckets; a change that needs
// approvals is [ErrNeedsApproval] with Plans holding the buckets as read.
func (g *Gate) Buckets() *ratelimit.Gate {
	return &ratelimit.Gate{Keys: []string{policy.Key}, Decide: func(items map[string]store.Item, plans []ratelimit.ChangeResult) (*ratelimit.Attach, error) {
		changed := slices.ContainsFunc(plans, func(p ratelimit.ChangeResult) bool { return p.Changed })
		at, err := g.decideOn(items, !changed)
		if errors.Is(err, ErrNeedsApproval) {
			g.Plans = plans
		}
		return BucketAttach(at), err
	}}
}

// decideOn is the one decision of a lever change on the policy item read
// with the levers (items): nothing when the table has no policy, a denial,
// [ErrNeedsApproval] (unless there is nothing to change: nothingToDo), a
// break-glass's review, or how an allowed change is recorded.
func (g *Gate) decideOn(items map[string]store.Item, nothingToDo bool) (*breaker.Attach, error) {
	it, ok := items[policy.Key]
	if !ok {
		if g.q.BreakGlass {
			return nil, ErrNothingToBreak
		}
		return nil, nil
	}
	stored, err := policy.FromItem(it)
	if err != nil {
		return nil, err
	}
	id, err := g.identity(g.ctx)
	if err != nil {
		return nil, err
	}
	g.Policy, g.Identity = stored, id
	req := policy.Request{Actor: policy.Actor{ARN: id.Actor, Verified: id.Verified()}, Action: g.q.Action, Duration: g.q.Duration,
		NoExpiry: g.q.NoExpiry, BreakGlass: g.q.BreakGlass}
	g.Decision = policy.DecideAll(stored.Set, req, g.q.Targets)
	switch g.Decision.Outcome {
	case policy.Deny:
		return nil, fmt.Errorf("%w: %s", ErrPolicyDenied, g.Decision.Reason)
	case policy.NeedsApproval:
		if nothingToDo {
			return nil, nil // nothing to change: nothing to ask for, and nothing is written
		}
		return nil, ErrNeedsApproval
	case policy.Allow:
	}
	if g.q.BreakGlass {
		at, rv, err := g.svc.BreakGlass(g.q.Action, g.q.Targets, g.q.Reason, id, g.Decision.Policies)
		g.Review = rv
		return at, err
	}
	return &breaker.Attach{Approval: &audit.Approval{Decision: audit.DecisionAllowed, Policies: g.Decision.Policies}}, nil
}

// Submit stores c, the change the gate stopped with [ErrNeedsApproval], as
// a pending request of the gate's asker, waiting ttl ([DefaultTTL] when
// zero) for its approvals: one transaction with its audit record.
func (g *Gate) Submit(ctx context.Context, log audit.Appender, c Change, ttl time.Duration) (Request, audit.Record, error) {
	if g.Decision.Outcome != policy.NeedsApproval {
		return Request{}, audit.Record{}, fmt.Errorf("%s on %v needs no approval (%s): nothing to ask for", c.Action, c.Targets, g.Decision.Reason)
	}
	return g.svc.Submit(ctx, log, Submission{Change: c, Requester: g.Identity, Decision: g.Decision, TTL: ttl})
}

// PendingError is what a lever change the policy needs approvals for
// became: request Request, waiting for them. Nothing was changed yet.
type PendingError struct {
	Request Request
}

func (e *PendingError) Error() string {
	return fmt.Sprintf("pending approval: nothing changed yet; request %s (%s) waits for %d approval(s) until %s (koshactl request approve %s)",
		e.Request.ID, textsafe.Line(e.Request.Change.Summary()), e.Request.Needed, e.Request.ExpiresAt.Format(time.RFC3339), e.Request.ID)
}

// Unwrap makes errors.Is(err, ErrNeedsApproval) true.
func (e *PendingError) Unwrap() error { return ErrNeedsApproval }
