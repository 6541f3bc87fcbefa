package approval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/policy"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Store is what the service needs of the table.
type Store interface {
	store.Transactor
	Scan(ctx context.Context, q store.ScanQuery) iter.Seq2[store.Item, error]
	Put(ctx context.Context, item store.Item, cond store.Condition) error
}

// Service keeps the requests and reviews of one table and applies approved
// changes through the lever service, whatever their kind (looked up in its
// registry).
type Service struct {
	store   Store
	clock   clock.Clock
	levers  *lever.Service
	schema  *policy.Schema
	context string
	// asking records requests made and canceled (audit.RequestPrefix);
	// trail reads the approvers' records an approved request is proven by.
	asking, trail *audit.Log
}

// NewService returns the requests of the table s, applying approved
// changes through levers; contextName is recorded on new requests. A nil
// clk is the wall clock.
func NewService(s Store, clk clock.Clock, levers *lever.Service, contextName string) *Service {
	if clk == nil {
		clk = clock.Real{}
	}
	return &Service{store: s, clock: clk, levers: levers, schema: PolicySchema(levers.Kinds().Specs()), context: contextName,
		asking: audit.NewRequestLog(s, clk, contextName), trail: audit.NewLog(s, clk, contextName)}
}

// newID is a request's or review's id: 12 hex digits of a fresh token.
func newID() (string, error) {
	t, err := store.NewWriteID()
	if err != nil {
		return "", err
	}
	return t[:12], nil
}

// Submission is a change the policy asked approvals for.
type Submission struct {
	Change    Change
	Requester audit.Identity
	Decision  policy.Decision
	// TTL is how long it may wait: [DefaultTTL] when zero, within
	// [MinTTL]..[MaxTTL].
	TTL time.Duration
	// Source names the surface asking on the request's audit record, when
	// it is not the command line (audit.SourceMCP).
	Source string
	// ID and ExpiresAt, when set, are the request's own (a levers window's
	// request: named by its content, waiting until the window ends);
	// otherwise a fresh id, and TTL.
	ID        string
	ExpiresAt time.Time
}

// CheckTTL applies the bounds of a request's lifetime.
func CheckTTL(ttl time.Duration) error {
	if ttl < MinTTL || ttl > MaxTTL {
		return fmt.Errorf("a request waits %s to %s for its approvals, not %s", human.Duration(MinTTL), human.Duration(MaxTTL), human.Duration(ttl))
	}
	return nil
}

// Submit stores a pending request for sub in one transaction with its
// audit record.
func (s *Service) Submit(ctx context.Context, log audit.Appender, sub Submission) (Request, audit.Record, error) {
	ttl := sub.TTL
	if ttl == 0 {
		ttl = DefaultTTL
	}
	if err := CheckTTL(ttl); err != nil && sub.ExpiresAt.IsZero() {
		return Request{}, audit.Record{}, err
	}
	hash, err := sub.Change.Hash()
	if err != nil {
		return Request{}, audit.Record{}, err
	}
	id := sub.ID
	if id == "" {
		if id, err = newID(); err != nil {
			return Request{}, audit.Record{}, err
		}
	}
	now := s.clock.Now().UTC().Truncate(time.Millisecond)
	expires := now.Add(ttl)
	if !sub.ExpiresAt.IsZero() {
		expires = sub.ExpiresAt.UTC().Truncate(time.Millisecond)
	}
	r := Request{ID: id, Change: sub.Change, SHA256: hash, Requester: sub.Requester.Actor, RequesterSource: sub.Requester.Source,
		Status: StatusPending, CreatedAt: now, ExpiresAt: expires, Needed: sub.Decision.Approvals, Approvers: []string{},
		Policies: sub.Decision.Policies, Context: s.context}
	rec, err := s.write(ctx, log, r, store.IfAbsent(), audit.Entry{Actor: r.Requester, ActorSource: r.RequesterSource,
		Action: ActionRequestCreate, Subject: RequestPrefix + id, Reason: sub.Change.Reason, Source: sub.Source, After: r.view()})
	return r, rec, err
}

// view is the request as its audit records show it.
func (r Request) view() map[string]any {
	return map[string]any{"change": r.Change.Summary(), "sha256": r.SHA256, "status": r.Status, "approvers": nonNil(r.Approvers),
		"approvals_needed": r.Needed, "expires_at": r.ExpiresAt.Format(time.RFC3339)}
}

// write stores r (conditional on cond) with one audit record, in one
// transaction; the request item is the change's proof.
func (s *Service) write(ctx context.Context, log audit.Appender, r Request, cond store.Condition, e audit.Entry) (audit.Record, error) {
	token, err := store.NewWriteID()
	if err != nil {
		return audit.Record{}, err
	}
	it, err := r.item(token)
	if err != nil {
		return audit.Record{}, err
	}
	if e.Action == ActionRequestCreate || e.Action == ActionRequestCancel {
		// Asking is recorded where a requester-only role may write:
		// never where an approver's record is.
		log = s.asking
	}
	rec, rop, err := log.Stage(ctx, e, token, 0)
	if err != nil {
		return audit.Record{}, err
	}
	if _, err := store.Apply(ctx, s.store, store.Change{Token: token, Ops: []store.Op{store.PutOp(it, cond), rop}, Proof: it.PK()}); err != nil {
		var tce *store.TxConflictError
		if errors.As(err, &tce) {
			if ce, ok := tce.On(it.PK()); ok {
				return audit.Record{}, s.changedMeanwhile(r.ID, ce.Current)
			}
		}
		if errors.Is(err, store.ErrOutcomeUnknown) {
			return audit.Record{}, fmt.Errorf("%w: check with koshactl request show %s", err, r.ID)
		}
		return audit.Record{}, fmt.Errorf("write request %s: %w", r.ID, err)
	}
	return rec, nil
}

// ErrChangedMeanwhile wraps a request decided by someone else between
// koshactl's read and its write.
var ErrChangedMeanwhile = errors.New("the request changed meanwhile")

func (s *Service) changedMeanwhile(id string, cur store.Item) error {
	if cur != nil {
		if r, err := RequestFromItem(cur); err == nil && r.Status != StatusPending {
			return fmt.Errorf("%w: request %s was %s by %s meanwhile: nothing more to do (koshactl request show %s)",
				ErrChangedMeanwhile, id, r.Status, textsafe.Line(r.DecidedBy), id)
		}
	}
	return fmt.Errorf("%w: request %s changed while koshactl was acting: review it with koshactl request show %s, then re-run: %w",
		ErrChangedMeanwhile, id, id, store.ErrConditionFailed)
}

// Get reads one request.
func (s *Service) Get(ctx context.Context, id string) (Request, error) {
	it, err := s.store.Get(ctx, RequestPrefix+id)
	if errors.Is(err, store.ErrNotFound) {
		return Request{}, notFound(id)
	}
	if err != nil {
		return Request{}, fmt.Errorf("read request %s: %w", id, err)
	}
	return s.decode(it)
}

func notFound(id string) error {
	return fmt.Errorf("request %s: %w: list the requests with koshactl request list", textsafe.Quote(id), store.ErrNotFound)
}

// Listing is what [Service.List] read.
type Listing struct {
	Requests []Request
	Reviews  []Review
	// Unreadable names the items that could not be decoded.
	Unreadable []store.Problem
}

// listSegments is how many parallel segments each of List's scans reads:
// a read of a table of 10,000 buckets in one round trip of the store.
const listSegments = 4

// List reads every request and review (a scan of their prefixes: they are
// few, but the scan examines the table), newest first. The two prefixes
// are scanned at once, each in [listSegments] parallel segments.
func (s *Service) List(ctx context.Context) (Listing, error) {
	prefixes := []string{RequestPrefix, ReviewPrefix}
	items := make([][]store.Item, len(prefixes))
	errs := make([]error, len(prefixes))
	var wg sync.WaitGroup
	for i, prefix := range prefixes {
		wg.Go(func() {
			for it, err := range s.store.Scan(ctx, store.ScanQuery{Prefix: prefix, Segments: listSegments}) {
				if err != nil {
					errs[i] = fmt.Errorf("list %sitems: %w", prefix, err)
					return
				}
				items[i] = append(items[i], it)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return Listing{}, err
	}
	var out Listing
	for _, it := range items[0] {
		r, err := s.decode(it)
		if err != nil {
			out.Unreadable = append(out.Unreadable, store.Problem{PK: it.PK(), Problem: err.Error()})
			continue
		}
		out.Requests = append(out.Requests, r)
	}
	for _, it := range items[1] {
		r, err := ReviewFromItem(it)
		if err != nil {
			out.Unreadable = append(out.Unreadable, store.Problem{PK: it.PK(), Problem: err.Error()})
			continue
		}
		out.Reviews = append(out.Reviews, r)
	}
	sort.Slice(out.Requests, func(i, j int) bool { return out.Requests[i].CreatedAt.After(out.Requests[j].CreatedAt) })
	sort.Slice(out.Reviews, func(i, j int) bool { return out.Reviews[i].CreatedAt.After(out.Reviews[j].CreatedAt) })
	sort.SliceStable(out.Unreadable, func(i, j int) bool { return out.Unreadable[i].PK < out.Unreadable[j].PK })
	return out, nil
}

// Approval is one approval of a request.
type Approval struct {
	ID       string
	Approver audit.Identity
	// SHA256, when set, is the hash (at least its first 12 hex digits)
	// the approver reviewed: a request that does not hash to it is refused.
	SHA256 string
}

// Approved is what an approval did.
type Approved struct {
	Request Request
	// Applied is true when this approval applied the change.
	Applied bool
	// AlreadyApplied is true when the request had been applied before:
	// nothing was written.
	AlreadyApplied bool
	// Remaining is how many more approvals the request needs (when this
	// approval was recorded without applying it).
	Remaining int
	// Report is what the applied change wrote.
	Report  lever.Report
	Records []audit.Record
	// Expired is true when this approval found the request expired and
	// marked it so (the error is ErrExpired).
	Expired bool
	// Authorized is true when this approval completed a drill.run
	// request's approvals: it is approved, and nothing was applied.
	Authorized bool
}

// questions are the policy questions of the change, one per target (a
// drill.run's: one per lever), without actor or approvals.
func (s *Service) questions(c Change, now time.Time) ([]policy.Request, error) {
	var out []policy.Request
	if c.Action == ActionDrillRun {
		if c.Drill != nil {
			for _, l := range c.Drill.Levers {
				out = append(out, policy.Request{Action: l.Action, Resource: s.resource(l.Action), Target: l.Target,
					Duration: time.Duration(l.DurationSeconds) * time.Second})
			}
		}
		return out, nil
	}
	if w := c.Window; c.Action == ActionLeversWindow && w != nil {
		return []policy.Request{windowQuestion(s, *w)}, nil
	}
	lc, kind, err := s.leverChange(Request{Change: c})
	if err != nil {
		return nil, err
	}
	d, noExpiry := kind.Bounds(lc, now)
	for _, t := range c.Targets {
		out = append(out, policy.Request{Action: c.Action, Resource: kind.Spec().Resource, Target: t, Duration: d, NoExpiry: noExpiry})
	}
	return out, nil
}

// Approve records a's approval of its request and, when that completes the
// approvals the policy asks for, applies the change. It reads once (the
// request and the table's policy in one batch read) and writes once: one
// transaction holding every lever write (conditional on the lever as it
// was when the change was requested), its audit records naming the
// requester and the approvers, and the request's new status (conditional on
// the request as read: pending, with the hash checked). Refused: an
// unverified approver ([ErrUnverified]), the requester ([ErrSelf]), a
// request that is not there (store.ErrNotFound), whose change does not
// match its hash ([ErrHashMismatch]), expired ([ErrExpired], and marked so),
// denied or canceled ([ErrClosed]), or that the policy no longer permits
// ([ErrPolicyDenied]). An applied request changes nothing
// (AlreadyApplied).
func (s *Service) Approve(ctx context.Context, log audit.Appender, a Approval) (Approved, error) {
	key := RequestPrefix + a.ID
	items, err := store.GetMany(ctx, s.store, []string{key, policy.Key})
	if err != nil {
		return Approved{}, fmt.Errorf("read request %s: %w", a.ID, err)
	}
	it, ok := items[key]
	if !ok {
		return Approved{}, notFound(a.ID)
	}
	r, err := s.decode(it)
	if err != nil {
		return Approved{}, err
	}
	res := Approved{Request: r}
	if err := r.Check(a.SHA256); err != nil {
		return res, err
	}
	now := s.clock.Now()
	switch st := r.StatusAt(now); st {
	case StatusApplied, StatusApproved:
		res.AlreadyApplied = true
		return res, nil
	case StatusDenied, StatusCanceled:
		return res, fmt.Errorf("%w: request %s was %s by %s (%s): it can never be applied; ask for a new one",
			ErrClosed, r.ID, st, textsafe.Line(r.DecidedBy), textsafe.Line(r.Note))
	case StatusExpired:
		if r.Status == StatusPending {
			_, xerr := s.expire(ctx, log, r, a.Approver)
			res.Expired = xerr == nil
		}
		return res, fmt.Errorf("%w: request %s expired at %s without its approvals: it can never be applied; ask for a new one",
			ErrExpired, r.ID, r.ExpiresAt.Format(time.RFC3339))
	}
	if !a.Approver.Verified() {
		return res, fmt.Errorf("%w: %s is not verified by STS (a local context, static credentials, or an endpoint without STS); approve from a context whose credentials STS verifies",
			ErrUnverified, textsafe.Line(a.Approver.Actor))
	}
	if a.Approver.Actor == r.Requester {
		return res, fmt.Errorf("%w: %s asked for request %s and cannot approve it", ErrSelf, textsafe.Line(a.Approver.Actor), r.ID)
	}
	if slices.Contains(r.Approvers, a.Approver.Actor) {
		return res, fmt.Errorf("%w: %s approved request %s already; it needs %d more approval(s) from other people",
			ErrSelf, textsafe.Line(a.Approver.Actor), r.ID, r.Needed-len(r.Approvers))
	}
	var set *policy.Set
	if pit, ok := items[policy.Key]; ok {
		stored, err := policy.FromItem(s.schema, pit)
		if err != nil {
			return res, err
		}
		set = stored.Set
	}
	approvals := len(r.Approvers) + 1
	questions, err := s.questions(r.Change, now)
	if err != nil {
		return res, fmt.Errorf("%w: request %s: %v", ErrMalformed, r.ID, err)
	}
	for _, base := range questions {
		base.Actor, base.Approvals = policy.Actor{ARN: r.Requester, Verified: r.RequesterSource == audit.ActorSTS}, approvals
		if r.Change.Action == ActionDrillRun && base.Target == "" {
			return res, fmt.Errorf("%w: request %s: a lever's target is unknown before the run, which the policy cannot judge: ask for a new one",
				ErrPolicyDenied, r.ID)
		}
		d := policy.Decide(set, base)
		if d.Outcome == policy.Deny {
			return res, fmt.Errorf("%w: the policy no longer permits request %s: %s", ErrPolicyDenied, r.ID, d.Reason)
		}
		if d.Outcome == policy.NeedsApproval {
			res.Remaining = max(res.Remaining, d.Approvals-approvals)
		}
		as := base
		as.Actor = policy.Actor{ARN: a.Approver.Actor, Verified: true}
		if d := policy.Decide(set, as); d.Outcome == policy.Deny {
			return res, fmt.Errorf("%w: %s may not approve %s on %s: %s", ErrPolicyDenied, textsafe.Line(a.Approver.Actor), base.Action, textsafe.Line(base.Target), d.Reason)
		}
	}
	next := r
	next.Approvers = append(slices.Clone(r.Approvers), a.Approver.Actor)
	cond := store.IfEquals(store.WriteIDAttr, it.WriteID())
	if res.Remaining == 0 && r.Change.approveOnly() {
		next.DecidedBy, next.DecidedAt = a.Approver.Actor, now.UTC().Truncate(time.Millisecond)
		return s.approveDrill(ctx, log, r, next, cond, a, res)
	}
	if res.Remaining > 0 {
		rec, err := s.write(ctx, log, next, cond, audit.Entry{Actor: a.Approver.Actor, ActorSource: a.Approver.Source,
			Action: ActionRequestApprove, Subject: key, Reason: r.Change.Reason, Before: r.view(), After: next.view()})
		if err != nil {
			return res, err
		}
		res.Request, res.Records = next, []audit.Record{rec}
		return res, nil
	}
	next.Status, next.DecidedBy, next.DecidedAt = StatusApplied, a.Approver.Actor, now.UTC().Truncate(time.Millisecond)
	attach := &lever.Attach{
		Approval: &audit.Approval{Decision: audit.DecisionApproved, Policies: r.Policies, Request: r.ID, Requester: r.Requester,
			RequesterSource: r.RequesterSource, Approvers: next.Approvers},
		Actor: a.Approver.Actor, ActorSource: a.Approver.Source,
		Ops: func(token string, _ time.Time) []store.Op {
			next.AppliedChange = token
			nit, _ := next.item(token) // r.item succeeded above: the change encodes
			return []store.Op{store.PutOp(nit, cond)}
		},
		Refused: func(ce store.ConditionError) error { return s.changedMeanwhile(r.ID, ce.Current) },
	}
	res.Request = next
	res, err = s.apply(ctx, log, r, attach, res)
	// The token is known once the change is built (attach.Ops ran).
	res.Request.AppliedChange = next.AppliedChange
	return res, err
}

// apply writes r's change with attach through the lever service: the
// lever's kind reads its params, each target is written conditional on the
// item the requester read (for a kind whose approvals are), and the levers
// keep the requester as their actor. The approval is announced as one
// event by its caller.
func (s *Service) apply(ctx context.Context, log audit.Appender, r Request, attach *lever.Attach, res Approved) (Approved, error) {
	c, _, err := s.leverChange(r)
	if err != nil {
		return res, err
	}
	c.Actor, c.NoNotify = r.Requester, true
	svc := s.levers.WithLog(log)
	p, err := svc.Plan(ctx, c)
	if err == nil {
		err = p.Attach(attach)
	}
	var se *lever.SettingError
	var re *lever.RefusedError
	switch {
	case errors.As(err, &se):
		// Nothing was written. The approver's context applies its own
		// settings (its operator's rails), which may differ from the
		// requester's.
		return res, fmt.Errorf("request %s cannot be applied from this context (%w): %s, or deny it (koshactl request deny %s)", r.ID, err, se.Where, r.ID)
	case errors.As(err, &re):
		return res, fmt.Errorf("request %s cannot be applied as asked (%w): deny it (koshactl request deny %s) and ask again", r.ID, err, r.ID)
	case err != nil:
		return res, err
	}
	res.Report, err = svc.Commit(ctx, p)
	for _, o := range res.Report.Written() {
		res.Records = append(res.Records, o.Record)
	}
	if err != nil {
		if errors.Is(err, ErrChangedMeanwhile) && !errors.Is(err, store.ErrConditionFailed) {
			// Another approver applied (or someone decided) it first.
			res.AlreadyApplied = true
		}
		return res, err
	}
	res.Applied = true
	return res, nil
}

// leverChange is r's change as its lever's kind makes it: its params
// decoded, and for a kind whose approvals are conditional on what the
// requester read, each target's item as read then.
func (s *Service) leverChange(r Request) (lever.Change, lever.Kind, error) {
	ch := r.Change
	kind, err := s.kind(ch.Action)
	switch {
	case errors.Is(err, lever.ErrUnknownKind):
		return lever.Change{}, nil, fmt.Errorf("%w: request %s asks for %s, which this koshactl cannot apply: upgrade koshactl", ErrMalformed, r.ID, textsafe.Quote(ch.Action))
	case err != nil:
		// The context's settings for the kind are unusable (its bucket
		// limits): the approver fixes them, or approves elsewhere.
		return lever.Change{}, nil, fmt.Errorf("request %s changes %s levers, which this context cannot move: %w", r.ID, lever.KindOf(ch.Action), err)
	}
	params, err := kind.Params(ch.Action, ch.Params)
	if err != nil {
		return lever.Change{}, nil, fmt.Errorf("%w: request %s: %v", ErrMalformed, r.ID, err)
	}
	c := lever.Change{Action: ch.Action, Targets: ch.Targets, Reason: ch.Reason, Params: params}
	for _, t := range ch.Targets {
		it, ok, err := kind.Requested(t, ch.Before[t])
		if err != nil {
			return lever.Change{}, nil, fmt.Errorf("%w: request %s: %v", ErrMalformed, r.ID, err)
		}
		if ok {
			if c.Read == nil {
				c.Read = map[string]store.Item{}
			}
			c.Read[t] = it
		}
	}
	return c, kind, nil
}

// kind is the lever kind of action, which must be one the policy is asked
// about.
func (s *Service) kind(action string) (lever.Kind, error) {
	spec, a, ok := s.levers.Kinds().Action(action)
	if !ok || a.Internal {
		return nil, fmt.Errorf("%w %q", lever.ErrUnknownKind, action)
	}
	return s.levers.Kinds().Kind(spec.Name)
}

// resource is the policy's entity type of action's targets ("" for an
// action no kind has).
func (s *Service) resource(action string) string {
	spec, _, _ := s.levers.Kinds().Action(action)
	return spec.Resource
}

// changeOf is the change a request holds for the planned change p: its
// kind's params, and each target it would write with its item as read.
func (s *Service) changeOf(p *lever.Planned) (Change, error) {
	lc := p.Change
	params, err := p.Kind.Encode(lc)
	if err != nil {
		return Change{}, err
	}
	c := Change{Action: lc.Action, Reason: lc.Reason, Params: params, Before: map[string]json.RawMessage{}, summary: ""}
	for _, pl := range p.Plans {
		if pl.Noop {
			continue
		}
		c.Targets = append(c.Targets, pl.Target)
		c.Before[pl.Target] = pl.Image
	}
	lc.Targets = c.Targets
	c.summary = p.Kind.Summary(lc)
	return c, nil
}

// describe sets r's summary, in its kind's words.
func (s *Service) describe(r Request) Request {
	if c, kind, err := s.leverChange(r); err == nil {
		r.Change.summary = kind.Summary(c)
	}
	return r
}

// decode is [RequestFromItem], summarized.
func (s *Service) decode(it store.Item) (Request, error) {
	r, err := RequestFromItem(it)
	if err != nil {
		return r, err
	}
	return s.describe(r), nil
}

// expire marks a pending request found past its expiry as expired, with
// its audit record (once: conditional on the request as read), so the
// expiry is recorded and announced once.
func (s *Service) expire(ctx context.Context, log audit.Appender, r Request, by audit.Identity) (Request, error) {
	next := r
	next.Status, next.DecidedBy, next.DecidedAt = StatusExpired, by.Actor, s.clock.Now().UTC().Truncate(time.Millisecond)
	_, err := s.write(ctx, log, next, store.IfEquals(store.WriteIDAttr, r.raw.WriteID()), audit.Entry{Actor: by.Actor, ActorSource: by.Source,
		Action: ActionRequestExpire, Subject: RequestPrefix + r.ID, Reason: "expired unapproved", Before: r.view(), After: next.view()})
	return next, err
}

// ExpireDue marks every request of rs that is still stored pending past
// its expiry as expired, each in one transaction with its audit record
// (request.expire, by who sees it), conditional on the request as read: an
// expiry is recorded once, by whoever sees it first, and announced by that
// one alone. It returns the requests it marked (as marked). A request that
// changed since it was read (another reader marked it, an approver decided
// it) is skipped: nothing to announce. Who is asked only when a request is
// due. Any other failure stops and is returned with the ones marked so far.
func (s *Service) ExpireDue(ctx context.Context, log audit.Appender, who func(context.Context) (audit.Identity, error), rs []Request) ([]Request, error) {
	now := s.clock.Now()
	var by *audit.Identity
	var marked []Request
	for _, r := range rs {
		if r.Status != StatusPending || r.StatusAt(now) != StatusExpired {
			continue
		}
		if by == nil {
			id, err := who(ctx)
			if err != nil {
				return marked, err
			}
			by = &id
		}
		next, err := s.expire(ctx, log, r, *by)
		if errors.Is(err, ErrChangedMeanwhile) {
			continue
		}
		if err != nil {
			return marked, err
		}
		marked = append(marked, next)
	}
	return marked, nil
}

// Decide closes a pending request without applying it: deny (anyone but
// the requester) or cancel (the requester alone), with a note.
func (s *Service) Decide(ctx context.Context, log audit.Appender, id string, by audit.Identity, cancel bool, note string) (Request, audit.Record, error) {
	r, err := s.Get(ctx, id)
	if err != nil {
		return Request{}, audit.Record{}, err
	}
	verb, status, action := "deny", StatusDenied, ActionRequestDeny
	if cancel {
		verb, status, action = "cancel", StatusCanceled, ActionRequestCancel
	}
	switch {
	case r.Status != StatusPending:
		return r, audit.Record{}, fmt.Errorf("%w: request %s is %s already: nothing to %s", ErrClosed, id, r.Status, verb)
	case cancel && by.Actor != r.Requester:
		return r, audit.Record{}, fmt.Errorf("%w: only the requester (%s) cancels request %s; deny it instead with koshactl request deny %s",
			ErrSelf, textsafe.Line(r.Requester), id, id)
	case !cancel && by.Actor == r.Requester:
		return r, audit.Record{}, fmt.Errorf("%w: you asked for request %s: cancel it with koshactl request cancel %s", ErrSelf, id, id)
	}
	next := r
	next.Status, next.DecidedBy, next.DecidedAt, next.Note = status, by.Actor, s.clock.Now().UTC().Truncate(time.Millisecond), note
	rec, err := s.write(ctx, log, next, store.IfEquals(store.WriteIDAttr, r.raw.WriteID()), audit.Entry{Actor: by.Actor, ActorSource: by.Source,
		Action: action, Subject: RequestPrefix + id, Reason: note, Before: r.view(), After: next.view()})
	return next, rec, err
}

// BreakGlass returns what a break-glass change attaches: its records marked
// break-glass and a review opened in the same transaction, and the review.
func (s *Service) BreakGlass(action string, targets []string, reason string, actor audit.Identity, policies []string) (*lever.Attach, *Review, error) {
	id, err := newID()
	if err != nil {
		return nil, nil, err
	}
	rv := &Review{ID: id, Action: action, Targets: targets, Reason: reason, Actor: actor.Actor, ActorSource: actor.Source, Status: ReviewOpen}
	return &lever.Attach{
		Approval: &audit.Approval{Decision: audit.DecisionBreakGlass, Policies: policies, Review: id}, Review: id,
		Note: lever.Note{Outcome: "break-glass", Detail: fmt.Sprintf(
			"BREAK-GLASS: applied without approval under the table's policy (%v); review %s stays open until someone else runs koshactl request ack %s",
			policies, id, id)},
		Ops: func(token string, now time.Time) []store.Op {
			rv.CreatedAt, rv.Change = now.UTC().Truncate(time.Millisecond), token
			return []store.Op{store.PutOp(rv.item(token), store.IfAbsent())}
		},
	}, rv, nil
}

// Ack acknowledges an open break-glass review: someone other than its actor
// says they looked at it. One transaction with its audit record.
func (s *Service) Ack(ctx context.Context, log audit.Appender, id string, by audit.Identity, note string) (Review, audit.Record, error) {
	it, err := s.store.Get(ctx, ReviewPrefix+id)
	if errors.Is(err, store.ErrNotFound) {
		return Review{}, audit.Record{}, fmt.Errorf("review %s: %w: list the open reviews with koshactl request list --reviews", textsafe.Quote(id), store.ErrNotFound)
	}
	if err != nil {
		return Review{}, audit.Record{}, fmt.Errorf("read review %s: %w", id, err)
	}
	rv, err := ReviewFromItem(it)
	if err != nil {
		return Review{}, audit.Record{}, err
	}
	switch {
	case rv.Status == ReviewAcknowledged:
		return rv, audit.Record{}, nil
	case rv.Actor == by.Actor:
		return rv, audit.Record{}, fmt.Errorf("%w: %s made the break-glass change of review %s; someone else acknowledges it", ErrSelf, textsafe.Line(by.Actor), id)
	}
	next := rv
	next.Status, next.AckedBy, next.AckedAt, next.Note = ReviewAcknowledged, by.Actor, s.clock.Now().UTC().Truncate(time.Millisecond), note
	token, err := store.NewWriteID()
	if err != nil {
		return rv, audit.Record{}, err
	}
	nit := next.item(token)
	rec, rop, err := log.Stage(ctx, audit.Entry{Actor: by.Actor, ActorSource: by.Source, Action: ActionReviewAck, Subject: nit.PK(), Reason: note,
		Before: map[string]any{"status": rv.Status, "actor": rv.Actor}, After: map[string]any{"status": next.Status, "acknowledged_by": by.Actor}}, token, 0)
	if err != nil {
		return rv, audit.Record{}, err
	}
	if _, err := store.Apply(ctx, s.store, store.Change{Token: token, Ops: []store.Op{store.PutOp(nit, store.IfEquals(store.WriteIDAttr, it.WriteID())), rop}, Proof: nit.PK()}); err != nil {
		if errors.Is(err, store.ErrConditionFailed) {
			return rv, audit.Record{}, fmt.Errorf("review %s changed while koshactl was acting: look again with koshactl request list --reviews: %w", id, err)
		}
		return rv, audit.Record{}, fmt.Errorf("acknowledge review %s: %w", id, err)
	}
	return next, rec, nil
}
