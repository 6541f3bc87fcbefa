package approval

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/policy"
)

// ErrReasonRequired refuses a proposal without a reason: the person who
// approves it reads why.
var ErrReasonRequired = exitcode.New(exitcode.Usage, "a reason is required: a proposal says why, for the person who approves it")

// ErrNothingToBreak refuses a break-glass on a table without a policy.
var ErrNothingToBreak = exitcode.New(exitcode.Usage, "--break-glass: the table has no policy, so nothing needs breaking: drop the flag")

// Guard is the lever service under the table's policy: four eyes, wrapped
// around the service once. Its Plan reads the policy item in the levers'
// own batch read and decides the change on it: with no policy stored the
// change goes as always; one the policy denies is refused
// ([ErrPolicyDenied]); one it needs approvals for is stored as a change
// request (in one transaction with its record of asking) and returned as
// a *[lever.PendingError], nothing changed; one it allows carries how (its
// records' approval, a break-glass review written in its transaction).
// Every surface (the CLI, the dashboard) moves levers through it and only
// shows the report.
type Guard struct {
	svc       lever.Changer
	approvals *Service
	identity  func(context.Context) (audit.Identity, error)
	source    string
	// perHour is the proposals' budget ([Proposal.PerHour]).
	perHour int
}

var _ lever.Changer = (*Guard)(nil)

// Guard wraps svc (the context's lever service) in the table's policy, as
// identity asks; source names the surface on the announcements of the
// requests it makes (notify.SourceDashboard; "" for the command line).
func (s *Service) Guard(svc lever.Changer, identity func(context.Context) (audit.Identity, error), source string) *Guard {
	return &Guard{svc: svc, approvals: s, identity: identity, source: source}
}

// Reads are the keys the guard decides a change on besides its targets:
// the table's policy. A caller that reads its targets itself (clear --all's
// scan) reads them in the same round trip and hands them in as the
// change's [lever.Change].Seen (nil: absent, which the write then checks),
// so the plan reads nothing.
func (g *Guard) Reads() []string { return []string{policy.Key} }

// Plan implements [lever.Changer]: the service's plan, decided by the
// table's policy (not asked on a dry run, nor for an unguarded action).
func (g *Guard) Plan(ctx context.Context, c lever.Change, extra ...string) (*lever.Planned, error) {
	_, action, _ := g.approvals.levers.Kinds().Action(c.Action)
	if c.DryRun || action.Unguarded {
		return g.svc.Plan(ctx, c, extra...)
	}
	p, err := g.svc.Plan(ctx, c, append(slices.Clone(extra), policy.Key)...)
	if err != nil {
		return p, err
	}
	return g.decide(ctx, c, p)
}

// decide decides the planned change p (of c) on the table's policy as the
// plan found it: absent (read, or taken as absent by a plan at the floor,
// whose transaction checks it is), or the item.
func (g *Guard) decide(ctx context.Context, c lever.Change, p *lever.Planned) (*lever.Planned, error) {
	it, ok := p.Extra[policy.Key]
	if !ok {
		if c.BreakGlass {
			return nil, ErrNothingToBreak
		}
		return p, nil
	}
	stored, err := policy.FromItem(g.approvals.schema, it)
	if err != nil {
		return nil, err
	}
	id, err := g.identity(ctx)
	if err != nil {
		return nil, err
	}
	d, noExpiry := p.Kind.Bounds(c, g.approvals.clock.Now())
	// A rollback is its own actor's when the record it rolls back names the
	// same actor (the record was written by this process's change, never
	// read back from the table).
	own := c.RollbackOf != nil && c.RollbackOf.Actor == id.Actor
	dec := policy.DecideAll(stored.Set, policy.Request{Actor: policy.Actor{ARN: id.Actor, Verified: id.Verified()}, Action: c.Action,
		Resource: p.Kind.Spec().Resource, Duration: d, NoExpiry: noExpiry, BreakGlass: c.BreakGlass, OwnRollback: own}, c.Targets)
	switch dec.Outcome {
	case policy.Deny:
		return nil, fmt.Errorf("%w: %s", ErrPolicyDenied, dec.Reason)
	case policy.NeedsApproval:
		if p.Writes() == 0 {
			return p, nil // nothing to change: nothing to ask for, and nothing is written
		}
		sub := Submission{Requester: id, Decision: dec, TTL: c.RequestTTL}
		if n := p.Writes(); n > MaxTargets {
			if !c.Chunked {
				return nil, &lever.TooLargeError{Levers: n, Max: MaxTargets, Item: human.Plural(int64(n), p.Kind.Spec().Item), Request: true}
			}
			return g.submitChunks(ctx, p, sub)
		}
		return g.submit(ctx, p, sub)
	case policy.Allow:
	}
	at := &lever.Attach{Approval: &audit.Approval{Decision: audit.DecisionAllowed, Policies: dec.Policies}}
	if c.BreakGlass {
		if at, _, err = g.approvals.BreakGlass(c.Action, c.Targets, c.Reason, id, dec.Policies); err != nil {
			return nil, err
		}
	}
	if c.NoNotify && at.Approval.BreakGlass() {
		return nil, audit.ErrBreakGlassQuiet
	}
	return p, p.Attach(at)
}

// Commit implements [lever.Changer]. A change planned at the floor (the
// policy taken as absent, unread) that met a policy is decided on it as the
// refusal showed it, planned again unread, and committed (or requested):
// the read a policy needs, paid only where there is one.
func (g *Guard) Commit(ctx context.Context, p *lever.Planned) (lever.Report, error) {
	rep, err := g.svc.Commit(ctx, p)
	var ae *lever.AssumedError
	if !errors.As(err, &ae) || !slices.Contains(ae.Keys, policy.Key) || len(rep.Written()) > 0 {
		// A change of several transactions whose first ones landed before
		// the policy came is not planned again: what landed is reported,
		// the rest refused with the policy named (run it again).
		return rep, err
	}
	extra := slices.DeleteFunc(slices.Clone(ae.Extra), func(k string) bool { return k == policy.Key })
	q, err := g.Plan(ctx, ae.Change, extra...)
	switch {
	case q == nil:
		return lever.Report{Change: p.Change}, err
	case err != nil:
		return q.Report(), err
	}
	return g.svc.Commit(ctx, q)
}

// submit stores the planned change as a pending request (sub's requester,
// decision and lifetime): p is returned pending, with the
// *[lever.PendingError] that says so.
func (g *Guard) submit(ctx context.Context, p *lever.Planned, sub Submission) (*lever.Planned, error) {
	c, err := g.approvals.changeOf(p)
	if err != nil {
		return nil, err
	}
	sub.Change = c
	r, rec, err := g.approvals.Submit(ctx, nil, sub)
	if err != nil {
		return nil, err
	}
	return g.pending(p, r, rec)
}

// submitChunks stores a change asked in chunks, of more targets than one
// approval applies in one transaction ([MaxTargets]), as one request per
// chunk of that many, in order: each approved and applied whole, none
// stored that could not be. p is returned pending with every request and
// the *[lever.PendingError] naming them all. A request that cannot be
// stored stops the rest; those stored are said in the error.
func (g *Guard) submitChunks(ctx context.Context, p *lever.Planned, sub Submission) (*lever.Planned, error) {
	writes := slices.DeleteFunc(slices.Clone(p.Plans), func(pl lever.Plan) bool { return pl.Noop })
	var stored []string
	for start := 0; start < len(writes); start += MaxTargets {
		part := *p
		part.Plans = writes[start:min(start+MaxTargets, len(writes))]
		part.Change.Targets = nil
		for _, pl := range part.Plans {
			part.Change.Targets = append(part.Change.Targets, pl.Target)
		}
		c, err := g.approvals.changeOf(&part)
		if err != nil {
			return nil, err
		}
		s := sub
		s.Change = c
		r, rec, err := g.approvals.Submit(ctx, nil, s)
		if err != nil {
			if len(stored) > 0 {
				return nil, fmt.Errorf("%w (requests %s were stored and wait for their approvals; deny or cancel them, or have them approved)", err, strings.Join(stored, ", "))
			}
			return nil, err
		}
		stored = append(stored, r.ID)
		var impact lever.Impact
		if p.Impact != nil {
			// Each request tells its own chunk's impact, as request show
			// does: what its approval would do.
			impact = g.approvals.Impact(ctx, r)
		}
		rep, _ := g.report(r, rec, p.Change.NoNotify, impact)
		if p.Pending == nil {
			p.Pending, p.Event = rep.Pending, rep.Event
		} else {
			p.RequestEvents = append(p.RequestEvents, rep.Event)
		}
		p.Requests = append(p.Requests, *rep.Pending)
	}
	return p, &lever.PendingError{Pending: p.Requests[0], More: p.Requests[1:]}
}

// Propose makes c a change request whatever the table's policy says (an
// agent's proposal through the MCP server, recorded with source mcp: a
// person applies it): c is planned as a dry run (every rule of the change,
// one batch read, nothing written), and the targets it would change are
// requested, waiting for at least one approval.
func (g *Guard) Propose(ctx context.Context, c lever.Change) (lever.Report, error) {
	if strings.TrimSpace(c.Reason) == "" {
		return lever.Report{Change: c}, ErrReasonRequired
	}
	c.DryRun = true
	p, err := g.svc.Plan(ctx, c)
	if err != nil {
		return lever.Report{Change: c}, err
	}
	ch, err := g.approvals.changeOf(p)
	if err != nil {
		return lever.Report{Change: c}, err
	}
	id, err := g.identity(ctx)
	if err != nil {
		return lever.Report{Change: c}, err
	}
	res, err := g.approvals.Propose(ctx, nil, Proposal{Change: ch, Requester: id, Source: audit.SourceMCP, PerHour: g.perHour})
	if err != nil {
		return lever.Report{Change: c}, err
	}
	if res.Coalesced {
		// The requester's identical proposal waits already: it is the
		// answer, and nothing new is announced.
		rep, _ := Pending(res.Request, audit.Record{}, true)
		rep.Pending.Coalesced = true
		rep.Pending.Impact = p.Impact
		p.Pending, p.Event = rep.Pending, nil
		return p.Report(), nil
	}
	p, _ = g.pending(p, res.Request, res.Record)
	return p.Report(), nil
}

// WithProposalsPerHour returns the guard whose proposals ([Guard.Propose])
// make at most n requests an hour for one identity (zero:
// [DefaultProposalsPerHour]).
func (g *Guard) WithProposalsPerHour(n int) *Guard {
	c := *g
	c.perHour = n
	return &c
}

// pending marks p as the request r (its record rec), with its
// announcement.
func (g *Guard) pending(p *lever.Planned, r Request, rec audit.Record) (*lever.Planned, error) {
	rep, err := g.report(r, rec, p.Change.NoNotify, p.Impact)
	p.Pending, p.Event = rep.Pending, rep.Event
	return p, err
}

// report is [Pending] as the guard's surface announces it, telling impact.
func (g *Guard) report(r Request, rec audit.Record, quiet bool, impact lever.Impact) (lever.Report, error) {
	rep, err := Pending(r, rec, quiet)
	rep.Pending.Impact = impact
	if rep.Event != nil {
		rep.Event.Source = g.source
		if impact != nil {
			rep.Event.Impact = impact.Lines()
		}
	}
	return rep, err
}

// Pending is the report of a new request r (its record rec): nothing
// changed yet, the request announced (unless quiet), and the
// *[lever.PendingError] it exits 12 with. What every surface that makes a
// request shows.
func Pending(r Request, rec audit.Record, quiet bool) (lever.Report, error) {
	p := lever.Pending{ID: r.ID, Summary: r.Change.Summary(), SHA256: r.SHA256, Requester: r.Requester, Needed: r.Needed,
		Policies: r.Policies, ExpiresAt: r.ExpiresAt, AuditID: rec.ID}
	rep := lever.Report{Pending: &p}
	if !quiet {
		ev := RequestedEvent(r, rec)
		rep.Event = &ev
	}
	return rep, &lever.PendingError{Pending: p}
}

// PendingRequest is the request p as a list shows it before its next read
// (the dashboard's pending pane, right after a lever became it).
func PendingRequest(p lever.Pending, now time.Time) Request {
	return Request{ID: p.ID, Change: Change{summary: p.Summary}, SHA256: p.SHA256, Requester: p.Requester, Status: StatusPending,
		CreatedAt: now, ExpiresAt: p.ExpiresAt, Needed: p.Needed, Approvers: []string{}, Policies: p.Policies}
}

// PolicySchema is the table's policy's schema for the lever kinds specs:
// each kind's entity, and its actions the policy is asked about (neither
// internal nor unguarded ones: a policy cannot name them).
func PolicySchema(specs []lever.Spec) *policy.Schema {
	levers := make([]policy.Lever, 0, len(specs))
	for _, sp := range specs {
		l := policy.Lever{Resource: sp.Resource, Doc: sp.About}
		for _, a := range sp.Actions {
			if !a.Internal && !a.Unguarded {
				l.Actions = append(l.Actions, a.Name)
			}
		}
		levers = append(levers, l)
	}
	return policy.NewSchema(levers...)
}

// Impact is what r's change does to the platform's tools, told now by the
// context's lever service (the matrix's, with the call rates of its
// metrics source): what `request show` puts before the person who
// approves it. It is told from the change the request's hash covers,
// never from anything else in the item, which its requester could have
// written. Nil for a request that is no longer pending, and for a change
// that forces nothing.
func (s *Service) Impact(ctx context.Context, r Request) lever.Impact {
	if r.StatusAt(s.clock.Now()) != StatusPending {
		return nil
	}
	c, _, err := s.leverChange(r)
	if err != nil {
		return nil
	}
	return s.levers.Impact(ctx, c)
}
