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
	"github.com/kosha-platform/koshactl/internal/policy"
	"github.com/kosha-platform/koshactl/internal/proof"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// A request's item (request#<id>) is a summary that may be wrong: the
// requester's role may write it. What is decided about a request is
// decided from its proofs (internal/proof), each written by the one whose
// unique id keys it, in the transaction of what it proves, and from its
// closed marker. The item names its proofs' keys (its proofs attribute),
// so they are read by key, strongly consistent, never looked for: an
// approval reads the item and the marker in one batch read and checks, in
// its one transaction, that every proof it counts still binds the
// request's hash and expiry (a proof the item names that does not exist,
// or binds another change, refuses the approval as tampered). A request
// whose item disagrees with its proofs is reported as tampered and never
// acted on.

// ClosedPrefix starts the key of a request's closed marker
// (closed#<request id>): written, never deleted (no role may delete it),
// by the transaction that applies, denies, cancels or expires the request.
// It carries no ttl, and no role may write it with one (the IAM policies
// limit its writes to its own attributes, iam.ClosedAttributes): DynamoDB's
// TTL deletes any item whose ttl has passed, so a marker dated in the past
// by a role that may write markers would be deleted, and its request
// revived. Markers are a few bytes each, one per request decided.
// Its existence alone closes the request: an approval checks it is absent
// in its own transaction, so a summary set back to pending, or an index
// or a listing that has not seen a deny yet, never lets a closed request
// be applied.
const ClosedPrefix = "closed#"

// ClosedKey is the key of request id's closed marker.
func ClosedKey(id string) string { return ClosedPrefix + id }

// closedItem is the marker of r closed by verb, written by the change
// whose token is token.
func closedItem(r Request, verb, token string) store.Item {
	return store.Item{store.PK: ClosedKey(r.ID), "verb": verb, store.WriteIDAttr: token}
}

// Errors of proofs; both exit 14 (docs/exit-codes.md).
var (
	// ErrTampered: a request's or review's item disagrees with its proofs
	// (an approver, a requester or a status no proof shows): it was
	// written without koshactl, and it is never acted on.
	ErrTampered = exitcode.New(exitcode.Mismatch, "the item disagrees with its proofs")
	// ErrApprovalUnproven: a request carries no proof of who asked (made
	// before koshactl kept proofs, or written by hand): it is never
	// approved nor used; ask for it again.
	ErrApprovalUnproven = exitcode.New(exitcode.Mismatch, "the request carries no proof of asking")
)

// binding is what r's proofs bind: its hash and expiry.
func (r Request) binding() string { return r.SHA256 + "@" + proof.FormatMillis(r.ExpiresAt) }

// trail is what a request's proofs say.
type trail struct {
	ask proof.Proof
	// approvals are the approvals counted: by verified writers, not the
	// requester, one per writer, in the order the item names them.
	approvals []proof.Proof
	// final is the approval that completed them (applied or approved it).
	final *proof.Proof
	// closing is the deny, cancel or expire that closed it.
	closing *proof.Proof
}

// requester is the actor the policy judges the request's requester as.
func (t trail) requester() audit.Identity {
	src := audit.ActorUnverified
	if t.ask.Writer.Verified() {
		src = audit.ActorSTS
	}
	return audit.Identity{Actor: t.ask.Writer.Name, Source: src, UserID: t.ask.Writer.ID}
}

// approvedBy reports whether w (the person: [proof.Writer.SamePerson])
// approved already.
func (t trail) approvedBy(w proof.Writer) bool {
	return slices.ContainsFunc(t.approvals, func(p proof.Proof) bool { return p.Writer.SamePerson(w) })
}

// tampered is the refusal of request id's item for why.
func tampered(id, why string) error {
	return fmt.Errorf("%w: request %s %s: its item was written without koshactl, and it is never acted on; ask for a new request if the change is still needed",
		ErrTampered, id, why)
}

// trailOf is what r's proofs say, checked against r. items are the proofs
// as read, by key (nil: not read; then only their keys are known, and the
// change that relies on them checks their bindings, [Request.proofChecks]);
// closed is whether r's closed marker exists. A request without a proof of
// asking is [ErrApprovalUnproven]; one whose item disagrees with its
// proofs, [ErrTampered].
func (r Request) trailOf(items map[string]store.Item, closed bool) (trail, error) {
	var t trail
	if len(r.Proofs) == 0 {
		return t, fmt.Errorf("%w: request %s names no proof of who asked for it (made before koshactl kept proofs, or written by hand): it can never be approved nor used; ask for it again",
			ErrApprovalUnproven, r.ID)
	}
	var asks []proof.Proof
	seen := map[string]bool{}
	for _, pk := range r.Proofs {
		if seen[pk] {
			return t, tampered(r.ID, "names the proof "+textsafe.Quote(pk)+" twice")
		}
		seen[pk] = true
		p, err := proof.ParseKey(pk)
		if err != nil || p.Kind != proof.KindRequest || p.Subject != r.ID {
			return t, tampered(r.ID, "names "+textsafe.Quote(pk)+", which is no proof of it")
		}
		if items != nil {
			it, ok := items[pk]
			if !ok {
				return t, tampered(r.ID, "names the proof "+textsafe.Quote(pk)+", which does not exist")
			}
			if p, err = proof.FromItem(it); err != nil {
				return t, tampered(r.ID, "names a proof that cannot be read ("+textsafe.Line(err.Error())+")")
			}
			if p.Binding != r.binding() {
				return t, tampered(r.ID, fmt.Sprintf("holds a change or expiry other than its proof %s binds (the change was edited after it was made)", p))
			}
		} else {
			p.Binding = r.binding()
		}
		switch p.Verb {
		case proof.Ask:
			asks = append(asks, p)
		case proof.Approve:
			t.approvals = append(t.approvals, p)
		default:
			if t.closing != nil {
				return t, tampered(r.ID, fmt.Sprintf("names two proofs that closed it (%s, %s)", t.closing, p))
			}
			t.closing = &p
		}
	}
	if len(asks) != 1 {
		return t, tampered(r.ID, fmt.Sprintf("names %d proofs of asking, not one", len(asks)))
	}
	t.ask = asks[0]
	if t.ask.Writer.Name != r.Requester || t.ask.Writer.Verified() != r.RequesterSource.Verified() {
		return t, tampered(r.ID, fmt.Sprintf("says %s asked for it, and its proof of asking is %s's", textsafe.Line(r.Requester), textsafe.Line(t.ask.Writer.Name)))
	}
	var names []string
	for i, a := range t.approvals {
		switch {
		case !a.Writer.Verified():
			return t, tampered(r.ID, "counts an approval by "+textsafe.Line(a.Writer.Name)+", whom STS did not verify")
		case a.Writer.SamePerson(t.ask.Writer):
			return t, tampered(r.ID, "counts its requester's own approval ("+textsafe.Line(a.Writer.Name)+")")
		case slices.ContainsFunc(t.approvals[:i], func(b proof.Proof) bool { return b.Writer.SamePerson(a.Writer) }):
			return t, tampered(r.ID, "counts "+textsafe.Line(a.Writer.Name)+"'s approval twice")
		}
		if items != nil && a.Final {
			if i != len(t.approvals)-1 {
				return t, tampered(r.ID, "names approvals after the one that completed them")
			}
			t.final = &t.approvals[i]
		}
		names = append(names, a.Writer.Name)
	}
	if !slices.Equal(names, r.Approvers) {
		return t, tampered(r.ID, fmt.Sprintf("names the approvers %s, and its proofs show %s", textsafe.Line(fmt.Sprint(r.Approvers)), textsafe.Line(fmt.Sprint(names))))
	}
	if c := t.closing; c != nil {
		switch {
		case c.Verb == proof.Cancel && !c.Writer.Is(t.ask.Writer):
			return t, tampered(r.ID, "was canceled by "+textsafe.Line(c.Writer.Name)+", not by its requester")
		case c.Verb == proof.Deny && c.Writer.Is(t.ask.Writer):
			return t, tampered(r.ID, "was denied by its requester")
		}
	}
	return t, t.agrees(r, closed, items != nil)
}

// agrees checks r's status and decider against its trail and closed
// marker. Without the proofs' contents (read false) an approval's final
// mark is unknown: an applied or approved status then needs only the
// marker and an approval.
func (t trail) agrees(r Request, closed, read bool) error {
	want := StatusPending
	by := ""
	switch {
	case t.closing != nil:
		want, by = map[string]string{proof.Deny: StatusDenied, proof.Cancel: StatusCanceled, proof.Expire: StatusExpired}[t.closing.Verb], t.closing.Writer.Name
	case t.final != nil || !read && closed && len(t.approvals) > 0 && (r.Status == StatusApplied || r.Status == StatusApproved):
		want = StatusApplied
		if r.Change.approveOnly() {
			want = StatusApproved
		}
		by = t.approvals[len(t.approvals)-1].Writer.Name
	}
	switch {
	case r.Status != want:
		return tampered(r.ID, fmt.Sprintf("says it is %s, and its proofs say %s", textsafe.Line(r.Status), want))
	case want == StatusPending && closed:
		return tampered(r.ID, "says it is pending, and its closed marker ("+ClosedKey(r.ID)+") says it was decided")
	case want != StatusPending && !closed:
		return tampered(r.ID, "is "+want+" without its closed marker ("+ClosedKey(r.ID)+")")
	case by != "" && r.DecidedBy != by:
		return tampered(r.ID, fmt.Sprintf("says %s decided it, and its proofs say %s", textsafe.Line(r.DecidedBy), textsafe.Line(by)))
	}
	return nil
}

// proofChecks are the checks, in the change that relies on t, that each
// proof of r it counts still binds r's hash and expiry.
func (t trail) proofChecks(r Request) []store.Op {
	ops := []store.Op{proof.Check(t.ask.Key(), r.binding())}
	for _, a := range t.approvals {
		ops = append(ops, proof.Check(a.Key(), r.binding()))
	}
	return ops
}

// proofOf is the proof of r by w's verb, made at at.
func (r Request) proofOf(w proof.Writer, verb string, at time.Time) proof.Proof {
	return proof.Proof{Writer: w, Verb: verb, Kind: proof.KindRequest, Subject: r.ID, Binding: r.binding(), At: at.UTC().Truncate(time.Millisecond),
		Expires: r.ExpiresAt.Add(Retention)}
}

// Verification is what reading a request's proofs found (request show,
// list): empty when its item agrees with them.
type Verification struct {
	// Tampered says how the item disagrees with its proofs.
	Tampered string `json:"tampered,omitempty"`
	// Unproven says the request has no proof of asking (made before
	// koshactl kept proofs): it can never be approved.
	Unproven string `json:"unproven,omitempty"`
}

// verify reads what r's trail says into r's Verification.
func (r *Request) verify(items map[string]store.Item, closed bool) {
	t, err := r.trailOf(items, closed)
	r.Verification = verification(err)
	r.Comments = nil
	if err != nil || items == nil {
		return
	}
	for _, a := range t.approvals {
		if a.Comment != "" {
			r.Comments = append(r.Comments, Comment{By: a.Writer.Name, At: a.At, Text: a.Comment})
		}
	}
}

func verification(err error) Verification {
	msg := func() string {
		s := err.Error()
		if _, rest, ok := strings.Cut(s, ": "); ok {
			return rest
		}
		return s
	}
	switch {
	case err == nil:
		return Verification{}
	case errors.Is(err, ErrApprovalUnproven):
		return Verification{Unproven: msg()}
	}
	return Verification{Tampered: msg()}
}

// attachedOps is how many writes an approval attaches to the levers it
// applies, at most: the request, the approver's proof, the closed marker,
// the policy's proof's check and the checks of the proofs it counts (the
// asking and up to policy.MaxApprovals-1 approvals).
const attachedOps = 4 + policy.MaxApprovals

// MaxTargets is the most targets one change request names: its approval
// applies them in one transaction (a lever write and a record each) with
// the writes it attaches.
const MaxTargets = (store.MaxChangeOps - attachedOps) / 2

// refusedAll words a change about r refused by its conditions: the first
// of ops (in their order: the request, the writer's own proof, the closed
// marker, the checks) that tce names. mine is the key of the proof the
// change writes.
func (s *Service) refusedAll(r Request, ops []store.Op, tce *store.TxConflictError) error {
	mine := ""
	if len(ops) > 1 && ops[1].Put != nil && strings.HasPrefix(ops[1].PK(), proof.Prefix) {
		mine = ops[1].PK()
	}
	for _, op := range ops {
		if ce, ok := tce.On(op.PK()); ok {
			return s.refused(r, mine, ce)
		}
	}
	return fmt.Errorf("write request %s: %w", r.ID, tce)
}

// refused words the refusal of one write of a change about r: the
// request changed or was decided meanwhile, its writer did this already
// (mine, the key of the proof the change writes), or a proof it relies on
// does not bind what the request says (tampered).
func (s *Service) refused(r Request, mine string, ce store.ConditionError) error {
	switch pk := ce.PK; {
	case pk == RequestPrefix+r.ID:
		return s.changedMeanwhile(r.ID, ce.Current)
	case pk == ClosedKey(r.ID):
		return fmt.Errorf("%w: request %s was decided meanwhile (its closed marker exists): nothing more to do (koshactl request show %s)",
			ErrChangedMeanwhile, r.ID, r.ID)
	case strings.HasPrefix(pk, ProposalsPrefix):
		return fmt.Errorf("%w: %s", errProposalsMoved, textsafe.Quote(pk))
	case pk == mine:
		p, _ := proof.ParseKey(pk)
		return fmt.Errorf("%w: %s's proof of %s request %s exists already: it was done once, by them", ErrSelf, textsafe.Line(p.Writer.Name), p.Verb, r.ID)
	case strings.HasPrefix(pk, proof.Prefix):
		if p, err := proof.ParseKey(pk); err == nil && p.Kind == proof.KindPolicy {
			return fmt.Errorf("%w: %s: the policy.set proof %s does not name the table's policy text (it was written without koshactl policy set): nothing was written",
				policy.ErrUnproven, policy.Key, textsafe.Quote(pk))
		}
		return tampered(r.ID, "names the proof "+textsafe.Quote(pk)+", which does not exist or does not bind its change and expiry")
	}
	return fmt.Errorf("write request %s: %w", r.ID, &ce)
}

// proveApproved checks r, stored approved, against its proofs and the
// table's policy (stored; nil: none) against its own: r's proofs, its
// closed marker and the policy's proof, in one batch read. r is approved
// only when an approver's proof completed its approvals (its final
// approval), for r's hash and expiry, nothing closed it, and the people
// whose proofs approved it are as many as the policy in force asks of its
// requester: a final mark is its writer's word, and one approver could
// write it on the first of two approvals. The policy is used only when
// its proof names its text. A request stored approved without such
// proofs (by hand, or edited since) is refused.
func (s *Service) proveApproved(ctx context.Context, r Request, stored *policy.Stored) error {
	keys := append(slices.Clone(r.Proofs), ClosedKey(r.ID))
	ppk := ""
	if stored != nil {
		if ppk = stored.ProofKey(); ppk != "" {
			keys = append(keys, ppk)
		}
	}
	items, err := store.GetMany(ctx, s.store, keys)
	if err != nil {
		return fmt.Errorf("read the proofs of request %s: %w", r.ID, err)
	}
	if stored != nil {
		if err := stored.Verify(items[ppk]); err != nil {
			return err
		}
	}
	_, closed := items[ClosedKey(r.ID)]
	t, err := r.trailOf(items, closed)
	if err != nil {
		return err
	}
	if t.final == nil || t.closing != nil {
		return fmt.Errorf("%w: request %s is stored approved, and no approver's proof completed its approvals: it cannot be used; ask for a new one and have it approved with koshactl request approve",
			ErrApprovalUnproven, r.ID)
	}
	requester := t.requester()
	questions, err := s.questions(r.Change, s.clock.Now())
	if err != nil {
		return fmt.Errorf("%w: request %s: %v", ErrMalformed, r.ID, err)
	}
	for _, q := range questions {
		q.Actor, q.Approvals = policy.Actor{ARN: requester.Actor, Verified: requester.Verified()}, len(t.approvals)
		switch d := policy.Decide(stored.Rules(), q); d.Outcome {
		case policy.Deny:
			return fmt.Errorf("%w: the policy no longer permits request %s: %s", ErrPolicyDenied, r.ID, d.Reason)
		case policy.NeedsApproval:
			return fmt.Errorf("%w: request %s is stored approved by %d person(s) its proofs show, and the table's policy asks %d for %s on %s: it cannot be used; ask for a new one and have it approved by as many people",
				ErrApprovalUnproven, r.ID, len(t.approvals), d.Approvals, q.Action, textsafe.Line(q.Target))
		case policy.Allow:
		}
	}
	return nil
}
