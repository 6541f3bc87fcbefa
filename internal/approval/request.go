package approval

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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
)

// Key prefixes of the items this package keeps.
const (
	RequestPrefix = "request#"
	ReviewPrefix  = "review#"
)

// Request lifetimes: how long a pending request may wait for approvals
// (--request-ttl). Requests that never expire pile up, and an approval hours
// later approves a situation that is gone.
const (
	DefaultTTL = time.Hour
	MinTTL     = time.Minute
	MaxTTL     = 24 * time.Hour
)

// Retention is how long decided requests and reviews stay in the table
// (their ttl attribute), as audit records do.
const Retention = audit.Retention

// Statuses of a request (and [StatusApproved], a drill.run request's).
// Expired is never stored as pending's successor by
// a lever change: a pending request past its expiry reads as expired, and
// is marked so (once, audited, announced) by the first command that sees
// it: request list, request show or an approval ([Service.ExpireDue]).
const (
	StatusPending  = "pending"
	StatusApplied  = "applied"
	StatusDenied   = "denied"
	StatusCanceled = "canceled"
	StatusExpired  = "expired"
)

// Audit actions of requests and reviews.
const (
	ActionRequestCreate  = "request.create"
	ActionRequestApprove = "request.approve"
	ActionRequestDeny    = "request.deny"
	ActionRequestCancel  = "request.cancel"
	ActionRequestExpire  = "request.expire"
	ActionReviewAck      = "review.ack"
)

// Change is exactly what a request asks for: a lever change (its action,
// targets, reason and its kind's params, internal/lever) and what was read
// when it was asked, or a drill run, or a levers file's window. Its
// canonical form, which its hash is taken of, is one JSON object: action,
// targets, reason, the params' members (the kind's encoding, in its order),
// drill, window, before (map keys sorted, no spaces): the form every
// request was stored in before params belonged to their kind, so a stored
// request reads and hashes as it always did. Before holds each target's
// lever as it was read when the change was requested (null when absent):
// for a kind whose approvals are conditional on it, what is approved is
// the change from that state.
type Change struct {
	Action  string
	Targets []string
	Reason  string
	// Params are the lever kind's, as it encodes them: a JSON object
	// (nil: none).
	Params json.RawMessage
	// Drill is the drill run a drill.run request approves (its Targets
	// are its levers, "ACTION TARGET"); it has no Before.
	Drill *DrillRun
	// Window is the levers file window a levers.window request approves
	// (its one Target is the window's dependency); it has no Before.
	Window *Window
	Before map[string]json.RawMessage

	// summary is what the lever's kind says of the change, set where the
	// change is made or read by a [Service].
	summary string
}

// approveOnly reports whether approving the change applies nothing: the
// request becomes approved, and the drill run or the levers apply that
// presents it may then act (until it expires).
func (c Change) approveOnly() bool {
	return c.Action == ActionDrillRun || c.Action == ActionLeversWindow
}

// Canonical is the change's canonical encoding.
func (c Change) Canonical() ([]byte, error) {
	before := make(map[string]json.RawMessage, len(c.Before))
	for k, v := range c.Before {
		if len(v) == 0 {
			v = json.RawMessage("null")
		}
		var b bytes.Buffer
		if err := json.Compact(&b, v); err != nil {
			return nil, fmt.Errorf("the change's before-image of %s is not JSON: %w", k, err)
		}
		before[k] = b.Bytes()
	}
	c.Before = before
	return c.encode()
}

// MarshalJSON encodes the change in its canonical order.
func (c Change) MarshalJSON() ([]byte, error) { return c.encode() }

func (c Change) encode() ([]byte, error) {
	var b bytes.Buffer
	put := func(sep, name string, v any) error {
		doc, err := json.Marshal(v)
		b.WriteString(sep + `"` + name + `":`)
		b.Write(doc)
		return err
	}
	if err := errors.Join(put("{", "action", c.Action), put(",", "targets", c.Targets), put(",", "reason", c.Reason)); err != nil {
		return nil, err
	}
	if len(c.Params) > 0 {
		var p bytes.Buffer
		if err := json.Compact(&p, c.Params); err != nil || p.Len() < 2 || p.Bytes()[0] != '{' {
			return nil, fmt.Errorf("the change's params are not a JSON object: %s", c.Params)
		}
		if inner := p.Bytes()[1 : p.Len()-1]; len(inner) > 0 {
			b.WriteByte(',')
			b.Write(inner)
		}
	}
	var errs []error
	if c.Drill != nil {
		errs = append(errs, put(",", "drill", c.Drill))
	}
	if c.Window != nil {
		errs = append(errs, put(",", "window", c.Window))
	}
	errs = append(errs, put(",", "before", c.Before))
	b.WriteByte('}')
	return b.Bytes(), errors.Join(errs...)
}

// UnmarshalJSON decodes a change: the members it does not name are its
// params, kept in their order.
func (c *Change) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return fmt.Errorf("a change is a JSON object")
	}
	var params bytes.Buffer
	*c = Change{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		name, _ := t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		var dst any
		switch name {
		case "action":
			dst = &c.Action
		case "targets":
			dst = &c.Targets
		case "reason":
			dst = &c.Reason
		case "drill":
			dst = &c.Drill
		case "window":
			dst = &c.Window
		case "before":
			dst = &c.Before
		default:
			key, _ := json.Marshal(name)
			if params.Len() > 0 {
				params.WriteByte(',')
			}
			params.Write(key)
			params.WriteByte(':')
			params.Write(raw)
			continue
		}
		strict := json.NewDecoder(bytes.NewReader(raw))
		strict.DisallowUnknownFields()
		if err := strict.Decode(dst); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	if params.Len() > 0 {
		c.Params = json.RawMessage("{" + params.String() + "}")
	}
	_, err := dec.Token()
	return err
}

// Hash is the hex SHA-256 of the change's canonical encoding.
func (c Change) Hash() (string, error) {
	b, err := c.Canonical()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// Summary says the change in a few words: "force open openai, core-api for
// 30m0s", "clear openai", as its lever's kind says it.
func (c Change) Summary() string {
	switch {
	case c.Action == ActionDrillRun:
		return drillSummary(c)
	case c.Action == ActionLeversWindow:
		return windowSummary(c)
	case c.summary != "":
		return c.summary
	}
	return c.Action + " " + strings.Join(c.Targets, ", ")
}

// Request is one change request as stored.
type Request struct {
	ID     string `json:"id"`
	Change Change `json:"change"`
	// SHA256 is the stored hash of Change; [Request.Check] compares it with
	// the change's own.
	SHA256          string            `json:"sha256"`
	Requester       string            `json:"requester"`
	RequesterSource audit.ActorSource `json:"requester_source,omitempty"`
	// Status is as stored: pending, applied, denied, canceled or expired
	// ([Request.StatusAt] reads a pending request past its expiry as
	// expired).
	Status    string    `json:"status"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	// Needed is how many approvals the policy asked for.
	Needed    int      `json:"approvals_needed"`
	Approvers []string `json:"approvers"`
	// Policies are the ids of the policies that asked for approval.
	Policies []string `json:"policies,omitempty"`
	// Context is the koshactl context it was requested from.
	Context   string    `json:"context,omitempty"`
	DecidedBy string    `json:"decided_by,omitempty"`
	DecidedAt time.Time `json:"decided_at,omitzero"`
	// Note is the reason given to deny or cancel it.
	Note string `json:"note,omitempty"`
	// AppliedChange is the token of the change that applied it (its audit
	// records' change).
	AppliedChange string `json:"applied_change,omitempty"`
	// Proofs are the keys of the request's proofs (internal/proof): its
	// asking, its approvals, what closed it. What is decided about the
	// request is decided from them; the rest of the item is a summary.
	Proofs []string `json:"proofs,omitempty"`
	// Comments are what the approvers said with their approvals
	// (--comment), read from their approval proofs: filled where the
	// proofs are read (request show, list).
	Comments []Comment `json:"comments,omitempty"`
	// Verification is what reading the proofs found (request show and
	// list read them; nothing else fills it).
	Verification
	// Place is where a listing read it: its lists index sort key as the
	// index listed it (not as its attributes claim), the [Cursor] a listing
	// resumed after it starts from. Set by [Service.ListPages] alone.
	Place string `json:"-"`

	raw store.Item
}

// StatusAt is the request's status at now: a pending request past its
// expiry is expired, and so is an approved drill.run request (the drill
// may no longer run with it).
func (r Request) StatusAt(now time.Time) string {
	if (r.Status == StatusPending || r.Status == StatusApproved) && !now.Before(r.ExpiresAt) {
		return StatusExpired
	}
	return r.Status
}

// Errors of requests; each has its own exit code (docs/exit-codes.md).
var (
	// ErrHashMismatch: the request's change does not hash to the hash it
	// carries, or to the hash the approver gave (--sha256): the item was
	// edited since, and it is never applied.
	ErrHashMismatch = exitcode.New(exitcode.Mismatch, "the request's change does not match its hash")
	// ErrExpired: the request waited past its expiry; it is never applied.
	ErrExpired = exitcode.New(exitcode.Closed, "the request has expired")
	// ErrClosed: the request was denied or canceled; it is never applied.
	ErrClosed = exitcode.New(exitcode.Closed, "the request is closed")
	// ErrUnverified: the approver's identity is not verified by STS.
	ErrUnverified = exitcode.New(exitcode.Auth, "approving needs a verified identity")
	// ErrSelf: the requester (or a break-glass actor) cannot approve
	// (acknowledge) their own change.
	ErrSelf = exitcode.New(exitcode.Refused, "four eyes: someone else must do it")
	// ErrPolicyDenied: the table's policy does not permit it.
	ErrPolicyDenied = exitcode.New(exitcode.Refused, "denied by the table's policy")
	// ErrMalformed: a request or review item does not follow its contract.
	ErrMalformed = errors.New("malformed item")
)

// Check compares the stored hash with the change's own hash and, when want
// is not empty, with want (the hash the approver reviewed).
func (r Request) Check(want string) error {
	got, err := r.Change.Hash()
	if err != nil {
		return fmt.Errorf("%w: request %s: %v: it cannot be applied; ask for a new one", ErrHashMismatch, r.ID, err)
	}
	if got != r.SHA256 {
		return fmt.Errorf("%w: request %s holds a change hashing to %s, not the stored %s: it was edited after it was made and can never be applied; ask for a new one",
			ErrHashMismatch, r.ID, got[:12], proof.Short(r.SHA256))
	}
	if want != "" && (len(want) < 12 || !strings.HasPrefix(r.SHA256, strings.ToLower(want))) {
		return fmt.Errorf("%w: request %s hashes to %s, not the %s you reviewed: review it again with koshactl request show %s",
			ErrHashMismatch, r.ID, proof.Short(r.SHA256), want, r.ID)
	}
	return nil
}

// Attributes of a request item (docs/contracts/policy.md).
const (
	attrChange          = "change"
	attrSHA256          = "sha256"
	attrRequester       = "requester"
	attrRequesterSource = "requester_source"
	attrStatus          = "status"
	attrCreatedAt       = "created_at"
	attrExpiresAt       = "expires_at"
	attrNeeded          = "approvals_needed"
	attrApprovers       = "approvers"
	attrPolicies        = "policies"
	attrContext         = "context"
	attrDecidedBy       = "decided_by"
	attrDecidedAt       = "decided_at"
	attrNote            = "note"
	attrAppliedChange   = "applied_change"
	attrProofs          = "proofs"
)

// item encodes the request, carrying token as its write_id.
func (r Request) item(token string) (store.Item, error) {
	change, err := r.Change.Canonical()
	if err != nil {
		return nil, err
	}
	approvers, _ := json.Marshal(nonNil(r.Approvers))
	policies, _ := json.Marshal(nonNil(r.Policies))
	it := store.Item{
		store.PK:          RequestPrefix + r.ID,
		attrChange:        string(change),
		attrSHA256:        r.SHA256,
		attrRequester:     r.Requester,
		attrStatus:        r.Status,
		attrCreatedAt:     r.CreatedAt.UnixMilli(),
		attrExpiresAt:     r.ExpiresAt.UnixMilli(),
		attrNeeded:        int64(r.Needed),
		attrApprovers:     string(approvers),
		attrPolicies:      string(policies),
		store.TTLAttr:     r.ExpiresAt.Add(Retention).Unix(),
		store.WriteIDAttr: token,
	}
	if len(r.Proofs) > 0 {
		proofs, _ := json.Marshal(r.Proofs)
		it[attrProofs] = string(proofs)
	}
	for k, v := range map[string]string{attrRequesterSource: string(r.RequesterSource), attrContext: r.Context, attrDecidedBy: r.DecidedBy, attrNote: r.Note,
		attrAppliedChange: r.AppliedChange} {
		if v != "" {
			it[k] = v
		}
	}
	if !r.DecidedAt.IsZero() {
		it[attrDecidedAt] = r.DecidedAt.UnixMilli()
	}
	listEntry(it, r.CreatedAt, r.ID)
	return it, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// RequestFromItem decodes a stored request. A request whose change or
// times cannot be read is an error wrapping [ErrMalformed]: it is never
// applied.
func RequestFromItem(it store.Item) (Request, error) {
	id, ok := strings.CutPrefix(it.PK(), RequestPrefix)
	if !ok || id == "" {
		return Request{}, fmt.Errorf("%w: %q is not a request key (request#<id>)", ErrMalformed, it.PK())
	}
	r := Request{ID: id, SHA256: it.Str(attrSHA256), Requester: it.Str(attrRequester), RequesterSource: audit.ActorSource(it.Str(attrRequesterSource)),
		Status: it.Str(attrStatus), Context: it.Str(attrContext), DecidedBy: it.Str(attrDecidedBy), Note: it.Str(attrNote),
		AppliedChange: it.Str(attrAppliedChange), raw: it}
	bad := func(attr string) (Request, error) {
		return Request{}, fmt.Errorf("%w: request %s: its %s attribute cannot be read: it can never be applied", ErrMalformed, id, attr)
	}
	dec := json.NewDecoder(strings.NewReader(it.Str(attrChange)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r.Change); err != nil || r.Change.Action == "" || len(r.Change.Targets) == 0 || (r.Change.Action == ActionDrillRun) != (r.Change.Drill != nil) ||
		(r.Change.Action == ActionLeversWindow) != (r.Change.Window != nil) || r.Change.approveOnly() && r.Change.Params != nil {
		return bad(attrChange)
	}
	if !slices.Contains([]string{StatusPending, StatusApplied, StatusApproved, StatusDenied, StatusCanceled, StatusExpired}, r.Status) ||
		(r.Status == StatusApproved && !r.Change.approveOnly()) {
		return bad(attrStatus)
	}
	for attr, dst := range map[string]*time.Time{attrCreatedAt: &r.CreatedAt, attrExpiresAt: &r.ExpiresAt} {
		ms, ok := it.Int(attr)
		if !ok {
			return bad(attr)
		}
		*dst = time.UnixMilli(ms).UTC()
	}
	if ms, ok := it.Int(attrDecidedAt); ok {
		r.DecidedAt = time.UnixMilli(ms).UTC()
	}
	n, ok := it.Int(attrNeeded)
	if !ok || n < 1 || n > policy.MaxApprovals {
		return bad(attrNeeded)
	}
	r.Needed = int(n)
	if err := json.Unmarshal([]byte(it.Str(attrApprovers)), &r.Approvers); err != nil {
		return bad(attrApprovers)
	}
	if s := it.Str(attrPolicies); s != "" {
		if err := json.Unmarshal([]byte(s), &r.Policies); err != nil {
			return bad(attrPolicies)
		}
	}
	if s := it.Str(attrProofs); s != "" {
		if err := json.Unmarshal([]byte(s), &r.Proofs); err != nil {
			return bad(attrProofs)
		}
	}
	return r, nil
}

// Comment is one approver's comment on a request, as their approval proof
// holds it.
type Comment struct {
	By   string    `json:"by"`
	At   time.Time `json:"at"`
	Text string    `json:"text"`
}
