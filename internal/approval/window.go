package approval

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/policy"
	"github.com/kosha-platform/koshactl/internal/proof"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// ActionLeversWindow is the action of a change request that approves one
// window of a levers file: its exact content (its SHA-256), on one
// context. Approving it applies nothing: the request becomes approved, and
// `koshactl apply` may then force the window's dependency during the
// window, until the request expires (at the window's end).
const ActionLeversWindow = "levers.window"

// MaxWindowAhead is how far ahead of its end a window can be asked for:
// a request waits at most this long.
const MaxWindowAhead = 31 * 24 * time.Hour

// Window is a levers file's window as a levers.window request holds it.
type Window struct {
	// File is the levers file's name (its markers'), Context the context.
	File    string `json:"file"`
	Context string `json:"context"`
	ID      string `json:"id"`
	// Dependency is forced open from Start to End (RFC 3339, UTC); with
	// Repeat weekly, every week from Start.
	Dependency string `json:"dependency"`
	Start      string `json:"start"`
	End        string `json:"end"`
	Repeat     string `json:"repeat,omitempty"`
	// Occurrence is the start of the occurrence approved (RFC 3339, UTC):
	// a weekly window's every occurrence is approved on its own.
	Occurrence string `json:"occurrence"`
	// SHA256 is the window's content hash (levers.Window.Hash): an edit of
	// the window is another hash, which this request does not approve.
	SHA256 string `json:"sha256"`
}

// Duration is how long each occurrence of the window lasts.
func (w Window) Duration() time.Duration {
	s, err1 := time.Parse(time.RFC3339Nano, w.Start)
	e, err2 := time.Parse(time.RFC3339Nano, w.End)
	if err1 != nil || err2 != nil {
		return 0
	}
	return e.Sub(s)
}

// WindowRequestID is the id of the request for w: named by the window's
// content, occurrence and context, so asking again finds the same request,
// and an edited window (or its next occurrence) is another request.
func WindowRequestID(w Window) string {
	sum := sha256.Sum256([]byte(w.Context + "\x00" + w.File + "\x00" + w.SHA256 + "\x00" + w.Occurrence))
	return "w" + hex.EncodeToString(sum[:])[:11]
}

// WindowChange is the change a levers.window request holds for w.
func WindowChange(w Window, reason string) Change {
	return Change{Action: ActionLeversWindow, Targets: []string{w.Dependency}, Reason: reason, Window: &w}
}

func windowSummary(c Change) string {
	w := c.Window
	if w == nil {
		return "apply a levers window"
	}
	s := fmt.Sprintf("levers %s window %s on %s: force open %s for %s from %s", w.File, w.ID, w.Context, w.Dependency, w.Duration(), w.Occurrence)
	if w.Repeat != "" {
		s += " (that occurrence of a " + w.Repeat + " window)"
	}
	return s + " (sha256 " + proof.Short(w.SHA256) + ")"
}

// ActionWindowForce is what a levers file's window does: force its
// dependency's breaker open (the breaker lever's force, looked up by name).
const ActionWindowForce = "breaker.force-open"

// windowQuestion is the policy's question of forcing w's dependency for
// one occurrence (no actor).
func windowQuestion(s *Service, w Window) policy.Request {
	return policy.Request{Action: ActionWindowForce, Resource: s.resource(ActionWindowForce), Target: w.Dependency, Duration: w.Duration()}
}

// decideWindow is the table's policy on forcing w's dependency for one
// occurrence by actor (a nil set: [policy.NoPolicy], as policy.Decide says).
func (s *Service) decideWindow(set *policy.Set, actor policy.Actor, w Window) policy.Decision {
	q := windowQuestion(s, w)
	q.Actor = actor
	return policy.Decide(set, q)
}

// ErrWindowNoApproval: a window's force needs approvals and its request
// is not approved (exit 12): nothing of the window is applied.
var ErrWindowNoApproval = exitcode.New(exitcode.Pending, "the window needs an approved request")

// ErrWindowNeedsNone: the table's policy lets the window through without
// approvals; there is nothing to ask for.
var ErrWindowNeedsNone = errors.New("needs no approval")

// SubmitWindow asks for w's approval: a pending levers.window request
// named by its content ([WindowRequestID]), waiting until until (the
// window's end; at most [MaxWindowAhead] ahead), in one transaction with
// its audit record. Asking again for the same content returns the request
// already stored (Existing); one the policy lets through needs none
// ([ErrWindowNeedsNone]); one it denies is refused ([ErrPolicyDenied]).
func (s *Service) SubmitWindow(ctx context.Context, log audit.Appender, w Window, requester audit.Identity, reason string, until time.Time) (Request, audit.Record, bool, error) {
	id := WindowRequestID(w)
	stored, it, err := s.readDrill(ctx, id)
	if err != nil {
		return Request{}, audit.Record{}, false, err
	}
	if it != nil {
		r, err := RequestFromItem(it)
		return r, audit.Record{}, true, err
	}
	dec := s.decideWindow(stored.Rules(), policy.Actor{ARN: requester.Actor, Verified: requester.Verified()}, w)
	switch dec.Outcome {
	case policy.Deny:
		return Request{}, audit.Record{}, false, fmt.Errorf("%w: window %s: %s", ErrPolicyDenied, textsafe.Line(w.ID), dec.Reason)
	case policy.Allow:
		return Request{}, audit.Record{}, false, fmt.Errorf("window %s %w (%s)", textsafe.Line(w.ID), ErrWindowNeedsNone, dec.Reason)
	case policy.NeedsApproval:
	}
	now := s.clock.Now()
	if !until.After(now) || until.Sub(now) > MaxWindowAhead {
		return Request{}, audit.Record{}, false, fmt.Errorf("window %s ends %s: a window's request can wait until its end, up to %s ahead; ask closer to it",
			textsafe.Line(w.ID), until.UTC().Format(time.RFC3339), MaxWindowAhead)
	}
	r, rec, err := s.Submit(ctx, log, Submission{Change: WindowChange(w, reason), Requester: requester, Decision: dec, ID: id, ExpiresAt: until})
	if errors.Is(err, ErrChangedMeanwhile) {
		// Someone asked for the same window meanwhile: that request is it.
		if it, gerr := s.store.Get(ctx, RequestPrefix+id); gerr == nil {
			r, err = RequestFromItem(it)
			return r, audit.Record{}, true, err
		}
	}
	return r, rec, false, err
}

// WindowAuthorization is what [Service.AuthorizeWindow] found: how the
// table's policy lets the window's force through.
type WindowAuthorization struct {
	Decision policy.Decision
	// Request is the approved levers.window request (nil when the policy
	// needs none).
	Request *Request
}

// Approval is the approval document the window's records carry.
func (a WindowAuthorization) Approval() *audit.Approval {
	switch {
	case a.Request != nil:
		r := a.Request
		return &audit.Approval{Decision: audit.DecisionApproved, Policies: r.Policies, Request: r.ID, Requester: r.Requester,
			RequesterSource: r.RequesterSource, Approvers: r.Approvers}
	case a.Decision.Outcome == policy.Allow:
		return &audit.Approval{Decision: audit.DecisionAllowed, Policies: a.Decision.Policies}
	}
	return nil
}

// WindowKeys are the keys [Service.AuthorizeWindow] decides on: the
// table's policy and the request of each of ws, for the caller to read in
// its own batch read (apply reads them beside the overrides, in one round
// trip): [Service.PolicyIn] finds the policy among them.
func WindowKeys(ws []Window) []string {
	keys := make([]string, 0, len(ws)+1)
	keys = append(keys, policy.Key)
	for _, w := range ws {
		keys = append(keys, RequestPrefix+WindowRequestID(w))
	}
	return keys
}

// PolicyIn is the table's policy among items read by key (nil: not there):
// with the keys of [WindowKeys] as read (absent ones left out), what
// [Service.AuthorizeWindow] decides on.
func (s *Service) PolicyIn(items map[string]store.Item) (*policy.Stored, error) {
	it, ok := items[policy.Key]
	if !ok {
		return nil, nil
	}
	return policy.FromItem(s.schema, it)
}

// AuthorizeWindow is the rule apply follows before it forces a window's
// dependency on a table with a policy (stored; nil: none): allowed as is, or
// approved by the window's levers.window request for exactly this content,
// occurrence and context, approved and not expired. items are the keys of
// [WindowKeys] as read; it writes nothing. Refused: a request
// missing or still pending ([ErrWindowNoApproval], exit 12), expired or
// closed (exit 13), for other content ([ErrHashMismatch], exit 14), one
// whose approval no approver's proof shows ([ErrApprovalUnproven], exit
// 14) or whose item disagrees with its proofs ([ErrTampered], exit 14), a
// policy its proof does not prove (policy.ErrUnproven), or a force the
// policy denies.
func (s *Service) AuthorizeWindow(ctx context.Context, stored *policy.Stored, items map[string]store.Item, w Window, applier audit.Identity) (WindowAuthorization, error) {
	dec := s.decideWindow(stored.Rules(), policy.Actor{ARN: applier.Actor, Verified: applier.Verified()}, w)
	res := WindowAuthorization{Decision: dec}
	switch dec.Outcome {
	case policy.Deny:
		return res, fmt.Errorf("%w: window %s: %s", ErrPolicyDenied, textsafe.Line(w.ID), dec.Reason)
	case policy.Allow:
		return res, nil
	case policy.NeedsApproval:
	}
	id := WindowRequestID(w)
	ask := "ask for it with koshactl apply -f FILE --request, and have another person approve it"
	it, ok := items[RequestPrefix+id]
	if !ok {
		return res, fmt.Errorf("%w: window %s (%s): no request for it as it is now; %s (it will be request %s)", ErrWindowNoApproval, textsafe.Line(w.ID), dec.Reason, ask, id)
	}

	r, err := RequestFromItem(it)
	if err != nil {
		return res, err
	}
	if err := r.Check(""); err != nil {
		return res, err
	}
	if r.Change.Action != ActionLeversWindow || r.Change.Window == nil || *r.Change.Window != w {
		return res, fmt.Errorf("%w: request %s does not approve window %s as it is now: %s", ErrHashMismatch, r.ID, textsafe.Line(w.ID), ask)
	}
	switch st := r.StatusAt(s.clock.Now()); st {
	case StatusApproved:
	case StatusPending:
		return res, fmt.Errorf("%w: request %s for window %s still waits for %d approval(s): %s", ErrWindowNoApproval, r.ID, textsafe.Line(w.ID),
			r.Needed-len(r.Approvers), ApproveCommand(r.ID))
	case StatusExpired:
		return res, fmt.Errorf("%w: request %s for window %s expired at %s: %s", ErrExpired, r.ID, textsafe.Line(w.ID), r.ExpiresAt.Format(time.RFC3339), ask)
	default:
		return res, fmt.Errorf("%w: request %s for window %s was %s by %s: %s", ErrClosed, r.ID, textsafe.Line(w.ID), st, textsafe.Line(r.DecidedBy), ask)
	}
	if err := s.proveApproved(ctx, r, stored); err != nil {
		return res, err
	}
	res.Request = &r
	return res, nil
}
