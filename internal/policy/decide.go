package policy

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/arn"
	cedar "github.com/cedar-policy/cedar-go"
	"github.com/cedar-policy/cedar-go/types"

	"github.com/kosha-platform/koshactl/internal/human"
)

// MaxApprovals is the most approvals a policy can ask for: [Decide] looks
// for the smallest count from 1 to MaxApprovals that permits a change.
const MaxApprovals = 5

// Actor is who asks: the caller ARN (or asserted name) and whether STS
// verified it.
type Actor struct {
	ARN      string
	Verified bool
}

// Roles are the IAM role names the actor's ARN names: ROLE of
// arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION or of
// arn:aws:iam::ACCOUNT:role/PATH/ROLE; none for a user or an asserted name.
// An unverified actor has no roles: nothing vouched for its ARN.
func (a Actor) Roles() []string {
	if !a.Verified {
		return nil
	}
	p, err := arn.Parse(a.ARN)
	switch res := p.Resource; {
	case err != nil:
	case strings.HasPrefix(res, "assumed-role/") && p.Service == "sts":
		role, _, _ := strings.Cut(strings.TrimPrefix(res, "assumed-role/"), "/")
		return []string{role}
	case strings.HasPrefix(res, "role/") && p.Service == "iam":
		return []string{res[strings.LastIndexByte(res, '/')+1:]}
	}
	return nil
}

// Account is the account field of the actor's ARN ("" when it is none).
func (a Actor) Account() string {
	p, _ := arn.Parse(a.ARN) // the zero ARN when it is none
	return p.AccountID
}

// Request is one question for [Decide]: may Actor do Action to the target
// within these bounds, given Approvals from other people?
type Request struct {
	Actor  Actor
	Action string
	// Resource is the entity type of the action's targets (its lever
	// kind's: Dependency, Client); empty, the set's schema says.
	Resource string
	// Target is the dependency (breaker levers) or client (bucket levers).
	Target string
	// Duration is how long a forced override lasts (0 for a clear, a bucket
	// lever, or NoExpiry).
	Duration time.Duration
	NoExpiry bool
	// BreakGlass asks to act at once, approved or not (--break-glass).
	BreakGlass bool
	// Approvals is how many people other than the requester approved.
	Approvals int
	// OwnRollback is true when the change rolls back a change the same
	// actor made (a bake's put-back of its own clear).
	OwnRollback bool
}

// Outcome is what the policy says of a request.
type Outcome int

// The outcomes.
const (
	// Deny: no policy permits it (or a forbid policy matches).
	Deny Outcome = iota
	// Allow: it may be done now.
	Allow
	// NeedsApproval: it may be done once Decision.Approvals people other
	// than the requester approved it.
	NeedsApproval
)

func (o Outcome) String() string {
	return [...]string{"deny", "allow", "needs-approval"}[o]
}

// Decision is the policy's answer.
type Decision struct {
	Outcome Outcome
	// Approvals is the total number of approvals the change needs (with
	// NeedsApproval).
	Approvals int
	// Policies are the ids of the policies that decided: the permits that
	// allow it (at the approvals needed), or the forbids that deny it.
	Policies []string
	// Reason says in one line why, for messages.
	Reason string
}

// NoPolicy is the decision without a stored policy: everything is allowed,
// as before policies existed.
var NoPolicy = Decision{Outcome: Allow, Reason: "the table has no policy"}

// Decide is the one policy decision of koshactl (the CLI, the dashboard and
// drills ask it alike). A nil set is [NoPolicy]. Otherwise the request is
// evaluated as given: permitted, it is Allow. Not permitted and not
// break-glass, Decide looks for the smallest number of approvals (above
// r.Approvals, up to [MaxApprovals]) with which it would be permitted:
// NeedsApproval with that number. Else Deny, naming the forbid policies
// that matched or saying no policy permits it. An evaluation error of a
// policy counts as that policy not permitting (Cedar's rule) and is named
// in the reason: a guard that cannot be evaluated stops, never allows.
func Decide(s *Set, r Request) Decision {
	if s == nil {
		return NoPolicy
	}
	ok, ids, errs := s.eval(r)
	if len(errs) > 0 {
		// Cedar skips a policy it cannot evaluate, so an erroring forbid
		// would let a permit through: koshactl fails closed instead.
		return Decision{Outcome: Deny, Reason: fmt.Sprintf("the policy could not be evaluated for %s on %s (%s): nothing is allowed until it is fixed with koshactl policy set",
			r.Action, r.Target, errs[0])}
	}
	if ok {
		d := Decision{Outcome: Allow, Policies: ids, Reason: "permitted by " + strings.Join(ids, ", ")}
		if r.Approvals > 0 {
			d.Reason += " with " + human.Count(int64(r.Approvals), "approval")
		}
		return d
	}
	if len(ids) > 0 {
		return Decision{Outcome: Deny, Policies: ids, Reason: "forbidden by " + strings.Join(ids, ", ")}
	}
	if !r.BreakGlass {
		for n := r.Approvals + 1; n <= MaxApprovals; n++ {
			rn := r
			rn.Approvals = n
			if ok, ids, _ := s.eval(rn); ok {
				return Decision{Outcome: NeedsApproval, Approvals: n, Policies: ids,
					Reason: fmt.Sprintf("%s needs %s from someone other than the requester (%s)", r.Action, human.Count(int64(n), "approval"), strings.Join(ids, ", "))}
			}
		}
	}
	what := fmt.Sprintf("no policy permits %s on %s for %s", r.Action, r.Target, r.Actor.ARN)
	if r.BreakGlass {
		what = fmt.Sprintf("no policy permits a break-glass %s on %s for %s", r.Action, r.Target, r.Actor.ARN)
	}
	return Decision{Outcome: Deny, Reason: what}
}

// eval asks Cedar once: permitted, and the ids of the permits (allowed) or
// forbids (denied by one) that decided, in the text's order.
func (s *Set) eval(r Request) (bool, []string, []string) {
	principal := types.NewEntityUID("Kosha::Actor", types.String(r.Actor.ARN))
	var parents []types.EntityUID
	entities := types.EntityMap{}
	for _, role := range r.Actor.Roles() {
		uid := types.NewEntityUID("Kosha::Role", types.String(role))
		parents = append(parents, uid)
		entities[uid] = types.Entity{UID: uid}
	}
	entities[principal] = types.Entity{UID: principal, Parents: types.NewEntityUIDSet(parents...),
		Attributes: types.NewRecord(types.RecordMap{
			"arn":      types.String(r.Actor.ARN),
			"account":  types.String(r.Actor.Account()),
			"verified": types.Boolean(r.Actor.Verified),
		})}
	kind := r.Resource
	if kind == "" {
		kind = s.schema.Resource(r.Action)
	}
	resource := types.NewEntityUID(types.EntityType("Kosha::"+kind), types.String(r.Target))
	entities[resource] = types.Entity{UID: resource}
	secs := int64(0)
	if !r.NoExpiry {
		secs = int64(r.Duration / time.Second)
	}
	req := cedar.Request{
		Principal: principal,
		Action:    types.NewEntityUID("Kosha::Action", types.String(r.Action)),
		Resource:  resource,
		Context: types.NewRecord(types.RecordMap{
			"duration_seconds": types.Long(secs),
			"no_expiry":        types.Boolean(r.NoExpiry),
			"break_glass":      types.Boolean(r.BreakGlass),
			"approvals":        types.Long(int64(r.Approvals)),
			"own_rollback":     types.Boolean(r.OwnRollback),
		}),
	}
	dec, diag := cedar.Authorize(s.ps, entities, req)
	var ids, errs []string
	for _, reason := range diag.Reasons {
		ids = append(ids, string(reason.PolicyID))
	}
	for _, e := range diag.Errors {
		errs = append(errs, e.String())
	}
	slices.SortFunc(ids, func(a, b string) int { return s.line[cedar.PolicyID(a)] - s.line[cedar.PolicyID(b)] })
	return dec == cedar.Allow, ids, errs
}

// DecideAll decides r for each of targets (r.Target ignored): [DecideEach]
// of those requests.
func DecideAll(s *Set, r Request, targets []string) Decision {
	rs := make([]Request, len(targets))
	for i, t := range targets {
		rs[i] = r
		rs[i].Target = t
	}
	return DecideEach(s, rs)
}

// DecideEach decides each of rs and returns the strictest answer: a Deny
// if any is denied (its reason names the target), else NeedsApproval with
// the most approvals any needs, else Allow. The policies are those of
// every decision, in order, without repeats. No requests is Allow.
func DecideEach(s *Set, rs []Request) Decision {
	if s == nil {
		return NoPolicy
	}
	out := Decision{Outcome: Allow}
	for _, r := range rs {
		d := Decide(s, r)
		for _, id := range d.Policies {
			if !slices.Contains(out.Policies, id) {
				out.Policies = append(out.Policies, id)
			}
		}
		switch {
		case d.Outcome == Deny:
			d.Policies = out.Policies
			return d
		case d.Outcome == NeedsApproval && d.Approvals > out.Approvals:
			out.Outcome, out.Approvals, out.Reason = NeedsApproval, d.Approvals, d.Reason
		case out.Outcome == Allow && out.Reason == "":
			out.Reason = d.Reason
		}
	}
	return out
}
