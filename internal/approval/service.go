package approval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/policy"
	"github.com/kosha-platform/koshactl/internal/proof"
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
	// more are writes of the request's transaction beyond its own, its
	// record and its proof of asking (a proposal's budget and pending
	// item), made for the request r by the change token.
	more func(r Request, token string) []store.Op
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
	if n := len(sub.Change.Targets); n > MaxTargets {
		return Request{}, audit.Record{}, exitcode.Errorf(exitcode.Usage, "a change request names at most %d targets (one approval applies them in one transaction, with the proofs it counts), not %d: split it",
			MaxTargets, n)
	}
	w, err := proof.WriterOf(sub.Requester)
	if err != nil {
		return Request{}, audit.Record{}, fmt.Errorf("ask for a change: %w", err)
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
	// The requester's proof of asking, written with the request: what
	// says who asked, whatever the item says later.
	ask := r.proofOf(w, proof.Ask, now)
	ask.Needed = r.Needed
	r.Proofs = []string{ask.Key()}
	rec, err := s.write(ctx, log, r, store.IfAbsent(), audit.Entry{Actor: r.Requester, ActorSource: r.RequesterSource,
		Action: ActionRequestCreate, Subject: RequestPrefix + id, Reason: sub.Change.Reason, Source: sub.Source, After: r.view()},
		func(token string) []store.Op {
			ops := []store.Op{ask.Put(token)}
			if sub.more != nil {
				ops = append(ops, sub.more(r, token)...)
			}
			return ops
		})
	return r, rec, err
}

// view is the request as its audit records show it.
func (r Request) view() map[string]any {
	return map[string]any{"change": r.Change.Summary(), "sha256": r.SHA256, "status": r.Status, "approvers": nonNil(r.Approvers),
		"approvals_needed": r.Needed, "expires_at": r.ExpiresAt.Format(time.RFC3339)}
}

// write stores r (conditional on cond) with one audit record, and the
// writes extra builds for the change's token (the proof it writes, the
// closed marker, the checks it relies on), in one transaction; its record
// is the change's proof (the request item is updated by later decisions).
func (s *Service) write(ctx context.Context, log audit.Appender, r Request, cond store.Condition, e audit.Entry, extra func(token string) []store.Op) (audit.Record, error) {
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
	ops := []store.Op{store.PutOp(it, cond)}
	if extra != nil {
		ops = append(ops, extra(token)...)
	}
	if _, err := store.Apply(ctx, s.store, store.Change{Token: token, Ops: append(ops, rop), Proof: rop.PK()}); err != nil {
		var tce *store.TxConflictError
		if errors.As(err, &tce) {
			return audit.Record{}, s.refusedAll(r, ops, tce)
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
			if r.Status == StatusApplied || r.Status == StatusApproved {
				return fmt.Errorf("%w: request %s was %s by %s meanwhile: nothing more to do (koshactl request show %s)",
					ErrChangedMeanwhile, id, r.Status, textsafe.Line(r.DecidedBy), id)
			}
			// Denied, canceled or expired meanwhile: closed, never applied.
			return fmt.Errorf("%w: %w: request %s was %s by %s meanwhile: it can never be applied (koshactl request show %s)",
				ErrChangedMeanwhile, ErrClosed, id, r.Status, textsafe.Line(r.DecidedBy), id)
		}
	}
	return fmt.Errorf("%w: request %s changed while koshactl was acting: review it with koshactl request show %s, then re-run: %w",
		ErrChangedMeanwhile, id, id, store.ErrConditionFailed)
}

// Get reads one request and what its proofs say of it (its
// Verification): the request, then its proofs and closed marker in one
// batch read.
func (s *Service) Get(ctx context.Context, id string) (Request, error) {
	it, err := s.store.Get(ctx, RequestPrefix+id)
	if errors.Is(err, store.ErrNotFound) {
		return Request{}, notFound(id)
	}
	if err != nil {
		return Request{}, fmt.Errorf("read request %s: %w", id, err)
	}
	r, err := s.decode(it)
	if err != nil {
		return Request{}, err
	}
	items, err := store.GetMany(ctx, s.store, append(slices.Clone(r.Proofs), ClosedKey(id)))
	if err != nil {
		return Request{}, fmt.Errorf("read the proofs of request %s: %w", id, err)
	}
	_, closed := items[ClosedKey(id)]
	r.verify(items, closed)
	return r, nil
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
	// More says a page of [Service.ListPages] is not the last: the
	// listing goes on after it.
	More bool
}

// listSegments is how many parallel segments each of List's scans reads:
// a read of a table of 10,000 buckets in one round trip of the store.
const listSegments = 4

// List reads every request and review, their proofs and the requests'
// closed markers (a scan of each prefix: they are few, but the scan
// examines the table), newest first, each checked against its proofs
// (its Verification). The prefixes are scanned at once, each in
// [listSegments] parallel segments.
func (s *Service) List(ctx context.Context) (Listing, error) {
	prefixes := []string{RequestPrefix, ReviewPrefix, proof.Prefix, ClosedPrefix}
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
	byKey := make(map[string]store.Item, len(items[2])+len(items[3]))
	for _, it := range slices.Concat(items[2], items[3]) {
		byKey[it.PK()] = it
	}
	var out Listing
	out.Requests = decodeEach(items[0], s.decode, &out)
	for i, r := range out.Requests {
		_, closed := byKey[ClosedKey(r.ID)]
		out.Requests[i].verify(byKey, closed)
	}
	out.Reviews = decodeEach(items[1], ReviewFromItem, &out)
	for i := range out.Reviews {
		out.Reviews[i].verify(byKey)
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
	// Identify, when set, establishes the approver (STS) while the request
	// is read, in parallel; Approver is then what it returns.
	Identify func(context.Context) (audit.Identity, error)
	// SHA256 is the hash (at least its first 12 hex digits) the approver
	// reviewed: a request that does not hash to it is refused.
	SHA256 string
	// Confirm, when SHA256 is empty, shows the approver the request as read
	// and returns the hash they confirm (an error stops: nothing is
	// written). Without either the approval is refused
	// ([ErrUnconfirmed]): an approver always confirms the change's hash.
	Confirm func(Request) (string, error)
	// Comment is what the approver says with the approval (one line of
	// plain text, audit.ValidateReason's rule): stored in their approval
	// proof, and in the request.approve record of an approval that does
	// not complete the approvals.
	Comment string
}

// ErrUnconfirmed refuses an approval without the hash of the change the
// approver reviewed.
var ErrUnconfirmed = exitcode.New(exitcode.Usage, "an approval needs the hash of the change the approver reviewed")

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
				out = append(out, s.question(l))
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

// judge asks the policy set (nil: the table has none) about r approved by
// approver, a verified identity's ARN, with approvals approvals in all
// (theirs included): the change, for requester, must not be denied, and
// approver must be permitted it with those approvals ([ErrPolicyDenied]
// otherwise). remaining is how many approvals it still needs after
// them.
func (s *Service) judge(set *policy.Set, r Request, requester audit.Identity, approver string, approvals int, now time.Time) (remaining int, err error) {
	questions, err := s.questions(r.Change, now)
	if err != nil {
		return 0, fmt.Errorf("%w: request %s: %v", ErrMalformed, r.ID, err)
	}
	for _, base := range questions {
		base.Actor, base.Approvals = policy.Actor{ARN: requester.Actor, Verified: requester.Verified()}, approvals
		if r.Change.Action == ActionDrillRun && base.Target == "" {
			return 0, fmt.Errorf("%w: request %s: a lever's target is unknown before the run, which the policy cannot judge: ask for a new one",
				ErrPolicyDenied, r.ID)
		}
		d := policy.Decide(set, base)
		if d.Outcome == policy.Deny {
			return 0, fmt.Errorf("%w: the policy no longer permits request %s: %s", ErrPolicyDenied, r.ID, d.Reason)
		}
		if d.Outcome == policy.NeedsApproval {
			remaining = max(remaining, d.Approvals-approvals)
		}
		as := base
		as.Actor = policy.Actor{ARN: approver, Verified: true}
		if d := policy.Decide(set, as); d.Outcome == policy.Deny {
			return 0, fmt.Errorf("%w: %s may not approve %s on %s: %s", ErrPolicyDenied, textsafe.Line(approver), base.Action, textsafe.Line(base.Target), d.Reason)
		}
	}
	return remaining, nil
}

// Approve records a's approval of its request and, when that completes the
// approvals the policy asks for, applies the change. It reads once (the
// request, its closed marker and the table's policy in one batch read,
// with the approver's identity established beside it) and writes once: one
// transaction holding every lever write (conditional on the lever as it
// was when the change was requested), its audit records naming the
// requester and the approvers, the approver's proof, the request's new
// status (conditional on the request as read), and the checks that make
// it hold only as decided: the request still not closed, every proof it
// counts (the asking, the approvals before) still binding the change's
// hash and expiry, the policy's proof still naming its text. Who asked and
// who approved are the proofs' writers, never what the item says.
// Refused: an unverified approver ([ErrUnverified]), the requester
// ([ErrSelf]), a request that is not there (store.ErrNotFound), without a
// proof of asking ([ErrApprovalUnproven]), whose item disagrees with its
// proofs ([ErrTampered]), whose change does not match its hash or the
// hash the approver confirmed ([ErrHashMismatch]), expired ([ErrExpired],
// and marked so), denied or canceled ([ErrClosed]), that the policy no
// longer permits ([ErrPolicyDenied]), or on a policy its proof does not
// prove (policy.ErrUnproven). An applied request changes nothing
// (AlreadyApplied).
func (s *Service) Approve(ctx context.Context, log audit.Appender, a Approval) (Approved, error) {
	key, ckey := RequestPrefix+a.ID, ClosedKey(a.ID)
	identified := make(chan error, 1)
	if a.Identify != nil {
		go func() {
			var err error
			a.Approver, err = a.Identify(ctx)
			identified <- err
		}()
	} else {
		identified <- nil
	}
	items, err := store.GetMany(ctx, s.store, []string{key, ckey, policy.Key})
	if ierr := <-identified; ierr != nil && err == nil {
		return Approved{}, ierr
	}
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
	_, closed := items[ckey]
	t, err := r.trailOf(nil, closed)
	if err != nil && (!errors.Is(err, ErrApprovalUnproven) || r.Status == StatusPending) {
		return res, err
	}
	// A request made before koshactl kept proofs and decided then says so
	// below (applied, closed); a pending one is refused above.
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
	w, err := proof.WriterOf(a.Approver)
	if err != nil {
		return res, fmt.Errorf("%w: %w", ErrUnverified, err)
	}
	requester := t.requester()
	switch {
	case w.Is(t.ask.Writer) || a.Approver.Actor == requester.Actor:
		return res, fmt.Errorf("%w: %s asked for request %s and cannot approve it", ErrSelf, textsafe.Line(a.Approver.Actor), r.ID)
	case w.SamePerson(t.ask.Writer):
		return res, fmt.Errorf("%w: %s is %s, who asked for request %s as %s: nobody approves their own request under another role; someone else approves it",
			ErrSelf, textsafe.Line(a.Approver.Actor), textsafe.Line(w.Person()), r.ID, textsafe.Line(requester.Actor))
	}
	if t.approvedBy(w) || slices.Contains(r.Approvers, a.Approver.Actor) {
		return res, fmt.Errorf("%w: %s approved request %s already; it needs %d more approval(s) from other people",
			ErrSelf, textsafe.Line(a.Approver.Actor), r.ID, r.Needed-len(r.Approvers))
	}
	var set *policy.Set
	var checks []store.Op
	if pit, ok := items[policy.Key]; ok {
		stored, err := policy.FromItem(s.schema, pit)
		if err != nil {
			return res, err
		}
		check, err := stored.Check()
		if err != nil {
			return res, err
		}
		set, checks = stored.Set, append(checks, check)
	} else if len(r.Policies) > 0 {
		return res, fmt.Errorf("%w: request %s was asked under the table's policy (%s), and the table has none now: it is not approved without the policy it was asked under; an admin sets it again with koshactl policy set FILE",
			policy.ErrUnproven, r.ID, textsafe.Line(strings.Join(r.Policies, ", ")))
	}
	if res.Remaining, err = s.judge(set, r, requester, a.Approver.Actor, len(t.approvals)+1, now); err != nil {
		return res, err
	}
	if n := len(r.Change.Targets); n > MaxTargets {
		return res, fmt.Errorf("%w: request %s names %d targets, more than one approval's transaction holds with its proofs (%d): deny it and ask for fewer",
			ErrPolicyDenied, r.ID, n, MaxTargets)
	}
	// The approver confirms the change's hash: the one they reviewed, or
	// the one shown to them now.
	sha := a.SHA256
	if sha == "" {
		if a.Confirm == nil {
			return res, fmt.Errorf("%w: request %s (%s) hashes to %s: confirm it", ErrUnconfirmed, r.ID, textsafe.Line(r.Change.Summary()), proof.Short(r.SHA256))
		}
		if sha, err = a.Confirm(r); err != nil {
			return res, err
		}
	}
	if err := r.Check(sha); err != nil {
		return res, err
	}
	next := r
	next.Approvers = append(slices.Clone(r.Approvers), a.Approver.Actor)
	mine := r.proofOf(w, proof.Approve, now)
	mine.Final, mine.Comment = res.Remaining == 0, strings.TrimSpace(a.Comment)
	next.Proofs = append(slices.Clone(r.Proofs), mine.Key())
	checks = append(checks, t.proofChecks(r)...)
	// extra are the approval's writes beside the request's: its proof,
	// the closed marker (put by the approval that completes the approvals,
	// else checked absent), and the checks.
	extra := func(token string) []store.Op {
		closedOp := store.CheckOp(ckey, store.IfAbsent())
		if mine.Final {
			closedOp = store.PutOp(closedItem(r, proof.Approve, token), store.IfAbsent())
		}
		return append([]store.Op{mine.Put(token), closedOp}, checks...)
	}
	cond := store.IfEquals(store.WriteIDAttr, it.WriteID())
	if res.Remaining > 0 || r.Change.approveOnly() {
		// An approval that applies nothing: one more approval recorded,
		// or a drill.run (levers.window) request's last, which makes it
		// approved.
		authorizes := res.Remaining == 0
		if authorizes {
			next.Status, next.DecidedBy, next.DecidedAt = StatusApproved, a.Approver.Actor, now.UTC().Truncate(time.Millisecond)
		}
		rec, err := s.write(ctx, log, next, cond, audit.Entry{Actor: a.Approver.Actor, ActorSource: a.Approver.Source,
			Action: ActionRequestApprove, Subject: key, Reason: r.Change.Reason, Before: r.view(), After: next.view()}, extra)
		if err != nil {
			res.AlreadyApplied = authorizes && errors.Is(err, ErrChangedMeanwhile) && !errors.Is(err, store.ErrConditionFailed) && !errors.Is(err, ErrClosed)
			return res, err
		}
		res.Request, res.Records, res.Authorized = next, []audit.Record{rec}, authorizes
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
			return append([]store.Op{store.PutOp(nit, cond)}, extra(token)...)
		},
		Refused: func(ce store.ConditionError) error { return s.refused(r, mine.Key(), ce) },
	}
	res.Request = next
	res, err = s.apply(ctx, log, r, attach, res)
	if errors.Is(err, ErrClosed) {
		// Closed by someone else between the read and the write: nothing
		// was applied, by anyone.
		res.AlreadyApplied, res.Request = false, r
		return res, err
	}
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
	case errors.Is(err, ErrMalformed):
		return lever.Change{}, nil, fmt.Errorf("request %s: %w", r.ID, err)
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
// about: a request for an unguarded one (never held, so never requested)
// is malformed.
func (s *Service) kind(action string) (lever.Kind, error) {
	spec, a, ok := s.levers.Kinds().Action(action)
	switch {
	case !ok || a.Internal:
		return nil, fmt.Errorf("%w %q", lever.ErrUnknownKind, action)
	case a.Unguarded:
		return nil, fmt.Errorf("%w: %s never waits for approvals, so no request asks for it", ErrMalformed, textsafe.Quote(action))
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

// decode is [RequestFromItem], its summary in its kind's words.
func (s *Service) decode(it store.Item) (Request, error) {
	r, err := RequestFromItem(it)
	if err != nil {
		return r, err
	}
	if c, kind, err := s.leverChange(r); err == nil {
		r.Change.summary = kind.Summary(c)
	}
	return r, nil
}

// expire marks a pending request found past its expiry as expired, with
// its audit record, the proof of who found it so and its closed marker
// (once: conditional on the request as read), so the expiry is recorded
// and announced once, and final.
func (s *Service) expire(ctx context.Context, log audit.Appender, r Request, by audit.Identity) (Request, error) {
	w, err := proof.WriterOf(by)
	if err != nil {
		return r, err
	}
	next, _, err := s.closeRequest(ctx, log, r, by, w, proof.Expire, "expired unapproved", "")
	return next, err
}

// closeAs are the status and audit action of a request closed by a verb.
var closeAs = map[string][2]string{proof.Deny: {StatusDenied, ActionRequestDeny}, proof.Cancel: {StatusCanceled, ActionRequestCancel},
	proof.Expire: {StatusExpired, ActionRequestExpire}}

// closeRequest closes r unapplied by w's verb (deny, cancel, expire), with note
// (its reason): in one transaction, conditional on the request as read,
// the request's status, its audit record (reason its reason), w's proof
// and r's closed marker.
func (s *Service) closeRequest(ctx context.Context, log audit.Appender, r Request, by audit.Identity, w proof.Writer, verb, reason, note string) (Request, audit.Record, error) {
	next := r
	next.Status, next.DecidedBy, next.DecidedAt, next.Note = closeAs[verb][0], by.Actor, s.clock.Now().UTC().Truncate(time.Millisecond), note
	p := r.proofOf(w, verb, next.DecidedAt)
	next.Proofs = append(slices.Clone(r.Proofs), p.Key())
	rec, err := s.write(ctx, log, next, store.IfEquals(store.WriteIDAttr, r.raw.WriteID()), audit.Entry{Actor: by.Actor, ActorSource: by.Source,
		Action: closeAs[verb][1], Subject: RequestPrefix + r.ID, Reason: reason, Before: r.view(), After: next.view()},
		func(token string) []store.Op {
			return []store.Op{p.Put(token), store.PutOp(closedItem(r, verb, token), store.IfAbsent())}
		})
	return next, rec, err
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
// the requester) or cancel (the requester alone), with a note. It reads
// the request and its closed marker in one batch read, and writes the
// request's status, its audit record, the decider's proof and the closed
// marker in one transaction: the request can never be approved after,
// whatever its item says later. Closing is allowed on a request whose
// item disagrees with its proofs, or that has none: it is always safe.
// The requester is the one its proof of asking names, where it has one.
func (s *Service) Decide(ctx context.Context, log audit.Appender, id string, by audit.Identity, cancel bool, note string) (Request, audit.Record, error) {
	items, err := store.GetMany(ctx, s.store, []string{RequestPrefix + id, ClosedKey(id)})
	if err != nil {
		return Request{}, audit.Record{}, fmt.Errorf("read request %s: %w", id, err)
	}
	it, ok := items[RequestPrefix+id]
	if !ok {
		return Request{}, audit.Record{}, notFound(id)
	}
	r, err := s.decode(it)
	if err != nil {
		return Request{}, audit.Record{}, err
	}
	w, err := proof.WriterOf(by)
	if err != nil {
		return r, audit.Record{}, err
	}
	verb := proof.Deny
	if cancel {
		verb = proof.Cancel
	}
	_, closed := items[ClosedKey(id)]
	requester := by.Actor == r.Requester
	if t, terr := r.trailOf(nil, closed); terr == nil {
		requester = w.Is(t.ask.Writer)
	}
	switch {
	case r.Status != StatusPending:
		return r, audit.Record{}, fmt.Errorf("%w: request %s is %s already: nothing to %s", ErrClosed, id, r.Status, verb)
	case closed:
		return r, audit.Record{}, fmt.Errorf("%w: request %s was decided already (its closed marker exists): nothing to %s", ErrClosed, id, verb)
	case cancel && !requester:
		return r, audit.Record{}, fmt.Errorf("%w: only the requester (%s) cancels request %s; deny it instead with koshactl request deny %s",
			ErrSelf, textsafe.Line(r.Requester), id, id)
	case !cancel && requester:
		return r, audit.Record{}, fmt.Errorf("%w: you asked for request %s: cancel it with koshactl request cancel %s", ErrSelf, id, id)
	}
	return s.closeRequest(ctx, log, r, by, w, verb, note, note)
}

// BreakGlass returns what a break-glass change attaches: its records marked
// break-glass and a review opened in the same transaction, and the review.
func (s *Service) BreakGlass(action string, targets []string, reason string, actor audit.Identity, policies []string) (*lever.Attach, *Review, error) {
	id, err := newID()
	if err != nil {
		return nil, nil, err
	}
	w, err := proof.WriterOf(actor)
	if err != nil {
		return nil, nil, fmt.Errorf("break the glass: %w", err)
	}
	rv := &Review{ID: id, Action: action, Targets: targets, Reason: reason, Actor: actor.Actor, ActorSource: actor.Source, Status: ReviewOpen}
	return &lever.Attach{
		Approval: &audit.Approval{Decision: audit.DecisionBreakGlass, Policies: policies, Review: id}, Review: id,
		Note: lever.Note{Outcome: "break-glass", Detail: fmt.Sprintf(
			"BREAK-GLASS: applied without approval under the table's policy (%v); review %s stays open until someone else runs koshactl request ack %s",
			policies, id, id)},
		Ops: func(token string, now time.Time) []store.Op {
			rv.CreatedAt, rv.Change = now.UTC().Truncate(time.Millisecond), token
			// The actor's proof of the break-glass change: who made it,
			// whatever the review item says later.
			glass := rv.proofOf(w, proof.Glass, rv.CreatedAt)
			rv.Proofs = []string{glass.Key()}
			return []store.Op{store.PutOp(rv.item(token), store.IfAbsent()), glass.Put(token)}
		},
	}, rv, nil
}

// Ack acknowledges an open break-glass review: someone other than its actor
// says they looked at it. It reads the review, then its proofs; who made
// the change is its break-glass proof's writer, and whether it was
// acknowledged already is whether an acknowledgement proof says so, never
// what the review item says. One transaction: the review, the
// acknowledger's proof and its audit record.
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
	items, err := store.GetMany(ctx, s.store, rv.Proofs)
	if err != nil {
		return Review{}, audit.Record{}, fmt.Errorf("read the proofs of review %s: %w", id, err)
	}
	w, err := proof.WriterOf(by)
	if err != nil {
		return rv, audit.Record{}, err
	}
	t := rv.trailOf(items, nil)
	var glass []proof.Proof
	if t.glass != nil {
		glass = []proof.Proof{*t.glass}
	} else {
		// A review naming no proof of who broke its glass was made
		// before koshactl kept proofs, or had it dropped from its item:
		// the proofs tell (a scan, on this rare path alone).
		if glass, err = s.glassProofs(ctx, id); err != nil {
			return rv, audit.Record{}, err
		}
		t = rv.trailOf(items, glass)
	}
	rv.Verification = verification(t.err)
	switch {
	case t.ack != nil && t.err == nil:
		return rv, audit.Record{}, nil
	case rv.Actor == by.Actor || slices.ContainsFunc(glass, func(g proof.Proof) bool { return g.Writer.SamePerson(w) }):
		return rv, audit.Record{}, fmt.Errorf("%w: %s made the break-glass change of review %s; someone else acknowledges it", ErrSelf, textsafe.Line(by.Actor), id)
	}
	next := rv
	next.Status, next.AckedBy, next.AckedAt, next.Note = ReviewAcknowledged, by.Actor, s.clock.Now().UTC().Truncate(time.Millisecond), note
	ack := rv.proofOf(w, proof.Ack, next.AckedAt)
	ack.Expires = next.AckedAt.Add(Retention)
	next.Proofs = append(slices.Clone(rv.Proofs), ack.Key())
	next.Verification = Verification{}
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
	ops := []store.Op{store.PutOp(nit, store.IfEquals(store.WriteIDAttr, it.WriteID())), ack.Put(token), rop}
	if _, err := store.Apply(ctx, s.store, store.Change{Token: token, Ops: ops, Proof: rop.PK()}); err != nil {
		if errors.Is(err, store.ErrConditionFailed) {
			return rv, audit.Record{}, fmt.Errorf("review %s changed while koshactl was acting: look again with koshactl request list --reviews: %w", id, err)
		}
		return rv, audit.Record{}, fmt.Errorf("acknowledge review %s: %w", id, err)
	}
	return next, rec, nil
}

// glassProofs scans the table's proofs for those of breaking review id's
// glass.
func (s *Service) glassProofs(ctx context.Context, id string) ([]proof.Proof, error) {
	items := map[string]store.Item{}
	if err := s.scanProofs(ctx, items); err != nil {
		return nil, fmt.Errorf("read the proofs of review %s: %w", id, err)
	}
	return glassOf(items, id), nil
}

// scanProofs adds every proof of the table to items (a scan).
func (s *Service) scanProofs(ctx context.Context, items map[string]store.Item) error {
	for it, err := range s.store.Scan(ctx, store.ScanQuery{Prefix: proof.Prefix, Segments: listSegments}) {
		if err != nil {
			return err
		}
		items[it.PK()] = it
	}
	return nil
}
