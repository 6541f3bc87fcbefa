package lever

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/store"
)

// Change is one change of levers of one kind: what is asked (its kind,
// action, targets, reason and the kind's params: what a change request
// holds and hashes), and how it is made.
type Change struct {
	// Action names the kind too: its first word ([KindOf]).
	Action  string
	Targets []string
	Reason  string
	// Params are the kind's (a force's expiry, a set's token count); they
	// encode as one JSON object of the kind's.
	Params any

	// What follows is how the change is made, never what is asked: none
	// of it is stored in a request or hashed.

	// BreakGlass acts at once where the table's policy allows a
	// break-glass (recorded, announced and left for review).
	BreakGlass bool
	// DryRun decides every target and writes nothing.
	DryRun bool
	// AtOnce commits the change as soon as it is planned, its plan shown
	// to nobody in between (no prompt): the service may then plan it at
	// the floor, unread, its one transaction checking what a read would
	// have shown ([Service.Plan]).
	AtOnce bool
	// NoNotify keeps the change from being announced (--no-notify).
	NoNotify bool
	// RequestTTL is how long a change request waits for its approvals,
	// when the table's policy needs them (zero: the default).
	RequestTTL time.Duration
	// Actor, when set, is who acts (a drill's actor, an approved request's
	// requester); otherwise the service's actor resolves it while the
	// targets are read.
	Actor string
	// Known, when not nil, lists the targets the context knows: the kind
	// applies its rule for a name it does not list (a typo is refused).
	Known []string
	// MustExist refuses a target without an item (a drain of a client with
	// no bucket is more likely a typo than a client yet to come).
	MustExist bool
	// Read holds items the caller read and checked, by target (nil: the
	// target was absent): they are not read again, and their writes are
	// conditional on them, so a change since is a conflict.
	Read map[string]store.Item
	// Seen holds items by key (targets' and extra keys') as a refused
	// write's answer showed them (nil: absent; a key not held is read):
	// they are not read again, a target's write is conditional on its item
	// as seen, and an extra key seen absent is checked absent by the write
	// ([AssumedError.Change]).
	Seen map[string]store.Item
	// Always writes every target, even one already as asked: a change
	// with attached writes lands whole, records and all.
	Always bool
	// Chunked lets a change of more levers than one transaction holds
	// ([ChunkLevers]) be written in transactions of that many, each whole
	// and each with its own outcome (a clear of every override). Without
	// it such a change is refused before anything is written
	// ([*TooLargeError]): a change is whole, or asked in chunks.
	Chunked bool
	// Approval, when set, is how the table's policy let this change
	// through, on its records (a levers file's window; an [Attach]
	// replaces it).
	Approval *audit.Approval
	// Note is said with the change's announcement.
	Note Note
	// RollbackOf is the record of the change this one rolls back (a bake's
	// put-back of what a clear removed): the table's policy hears whether
	// the actor made that change (context.own_rollback).
	RollbackOf *audit.Record
}

// Kind is the name of the change's kind.
func (c Change) Kind() string { return KindOf(c.Action) }

// Note is what a change's announcement says besides its levers (a
// break-glass's loud words).
type Note struct {
	Outcome, Detail string
}

// Attach is what a change applied under the table's policy carries besides
// its levers (internal/approval): how the policy let it through, on every
// record of the change, and writes that go in the same transaction (a
// change request's new status, a break-glass review). A change with writes
// attached is one transaction: at most [MaxAttached] levers.
type Attach struct {
	Approval *audit.Approval
	// Actor, when set, is who applies the change (an approver): every
	// record's actor, with ActorSource; the levers keep their own actor.
	Actor       string
	ActorSource audit.ActorSource
	// Ops builds the attached writes for the change's token (the change's
	// first record is its proof). Called again for each attempt. Nil: none.
	Ops func(token string, now time.Time) []store.Op
	// Refused words the refusal of an attached write (the item as stored,
	// nil Current when the store did not say); it is final.
	Refused func(ce store.ConditionError) error
	// Note is said with the change's announcement instead of its own.
	Note Note
	// Review is the break-glass review the attached writes open ("": none).
	Review string
}

// Levers per transaction: each lever takes two of a transaction's actions,
// its item and its record.
const (
	// ChunkLevers is the most levers one transaction moves; a change of
	// more goes in chunks of it, each a transaction with its own outcome.
	ChunkLevers = store.MaxChangeOps / 2
	// MaxAttached is the most levers a change with attached writes moves:
	// one transaction, with room for them.
	MaxAttached = ChunkLevers - 1
	// chunkWorkers bounds the transactions one change has in flight (a
	// clear of thousands of overrides).
	chunkWorkers = 4
)

// Errors of the service.
var (
	// ErrNoAuditLog: a change asked of a service with no audit log bound
	// (a wiring bug); nothing is written, since nothing would record it.
	ErrNoAuditLog = errors.New("lever service: no audit log bound to record the change (a wiring bug)")
	// ErrNotWritten marks a target not written because the store refused
	// the change holding it for another write's sake.
	ErrNotWritten = errors.New("not written")
	// ErrConflict: a lever changed while koshactl was acting, or someone
	// else holds it; nothing of the change holding it was written.
	ErrConflict = exitcode.New(exitcode.Conflict, "lever conflict")
	// ErrNamedTwice: a target named twice in one change.
	ErrNamedTwice = errors.New("named twice")
)

// CheckTargets is the one check of the targets a change names: each by
// valid (nil: any name), none named twice (an error wrapping
// [ErrNamedTwice] that names the target as noun: `client "a" is named
// twice`). Targets are checked in order; the first problem is returned.
func CheckTargets(targets []string, noun string, valid func(string) error) error {
	seen := make(map[string]bool, len(targets))
	for _, t := range targets {
		if valid != nil {
			if err := valid(t); err != nil {
				return err
			}
		}
		if seen[t] {
			return fmt.Errorf("%s %q is %w", noun, t, ErrNamedTwice)
		}
		seen[t] = true
	}
	return nil
}

// TooLargeError refuses a change of more levers than one transaction
// holds, before anything is written: a change is one transaction (its
// levers, their records and any attached writes, all or none), unless
// asked in chunks ([Change.Chunked]). It exits 2.
type TooLargeError struct {
	// Levers is how many levers the change writes; Max the most one
	// transaction holds with what the change carries.
	Levers, Max int
	// Item names the kind's items, plural ("overrides").
	Item string
	// Attached is true when the change carries writes of the table's
	// policy (a break-glass review): it can only be one transaction.
	Attached bool
	// Request is true when the change would become a change request,
	// whose approval applies it in one transaction with the proofs it
	// counts: Max is then the most targets one request names.
	Request bool
}

func (e *TooLargeError) Error() string {
	if e.Request {
		return fmt.Sprintf("%d %s do not fit one change request (its approval applies at most %d levers in one transaction, with the proofs it counts), "+
			"so it could never be approved: nothing was stored; change at most %d at a time, or ask for it in chunks, one request per %d",
			e.Levers, e.Item, e.Max, e.Max, e.Max)
	}
	if e.Attached {
		return fmt.Sprintf("%d %s do not fit one transaction with the writes the table's policy attaches (at most %d levers, each with its audit record, "+
			"among DynamoDB's %d writes of a transaction), and such a change is never split: nothing was written; change at most %d at a time",
			e.Levers, e.Item, e.Max, store.MaxChangeOps, e.Max)
	}
	return fmt.Sprintf("%d %s do not fit one transaction (at most %d levers, each with its audit record, among DynamoDB's %d writes of a transaction), "+
		"so the change would not be whole: nothing was written; change at most %d at a time, or ask for it in chunks of %d, each whole and reported",
		e.Levers, e.Item, e.Max, store.MaxChangeOps, e.Max, e.Max)
}

// Is makes the refusal a usage error (exit 2): nothing was done.
func (e *TooLargeError) Is(target error) bool { return target == exitcode.Kind(exitcode.Usage) }

// Outcome is what became of one target of a change.
type Outcome struct {
	Target string
	// Result is the kind's account of the target (breaker.ForceResult,
	// ratelimit.ChangeResult), as decided, then as written.
	Result any
	// Noop is true when the target already was as asked: nothing written.
	Noop bool
	// Written is true when the target's write and its record landed.
	Written bool
	// Confirmed is true when the store's answer was lost and the change
	// was settled as landed ([store.Apply]).
	Confirmed bool
	// Record is the target's audit record (zero when none was written).
	Record audit.Record
	// Chunk is the transaction, counted from 1 in the change's order,
	// that carried it when the change was written in chunks
	// ([Change.Chunked], more levers than one transaction holds); 0
	// otherwise.
	Chunk int
	// Attempts counts the transactions sent for it (more than one when
	// its item changed between read and write); Token is the last one's.
	Attempts int
	Token    string
	// Err is why it was not written; it wraps [store.ErrOutcomeUnknown]
	// when nobody can tell.
	Err error
}

// Unknown reports whether nobody can tell whether the target was written.
func (o Outcome) Unknown() bool { return errors.Is(o.Err, store.ErrOutcomeUnknown) }

// Pending is a change the table's policy needs approvals for, stored as a
// change request: nothing changed yet.
type Pending struct {
	ID, Summary, SHA256, Requester string
	Needed                         int
	Policies                       []string
	ExpiresAt                      time.Time
	// AuditID is the request's record of asking ("" when coalesced).
	AuditID string
	// Coalesced is true when the request was the requester's identical
	// proposal, pending already: nothing was written or announced.
	Coalesced bool
	// Impact is what the requested change does to the platform's tools,
	// as told when it was requested (nil: none told).
	Impact Impact
}

// ApproveCommand is the command that approves the request.
func (p Pending) ApproveCommand() string { return "koshactl request approve " + p.ID }

// PendingError is what a change the table's policy needs approvals for
// returns: the request is stored (its [Report.Pending]), nothing changed
// yet. It exits 12.
type PendingError struct {
	Pending Pending
	// More are the other requests of a change asked in chunks that became
	// one request per chunk ([Report.Requests]).
	More []Pending
}

func (e *PendingError) Error() string {
	if len(e.More) > 0 {
		ids := []string{e.Pending.ID}
		for _, p := range e.More {
			ids = append(ids, p.ID)
		}
		return fmt.Sprintf("pending approval: nothing changed yet; the change is %d requests, each approved and applied whole (%s), each waiting for %d approval(s) until %s (koshactl request approve ID)",
			len(ids), strings.Join(ids, ", "), e.Pending.Needed, e.Pending.ExpiresAt.Format(time.RFC3339))
	}
	return fmt.Sprintf("pending approval: nothing changed yet; request %s waits for %d approval(s) until %s (%s)",
		e.Pending.ID, e.Pending.Needed, e.Pending.ExpiresAt.Format(time.RFC3339), e.Pending.ApproveCommand())
}

// ErrPending matches a *PendingError.
var ErrPending = exitcode.New(exitcode.Pending, "pending approval")

// Is makes errors.Is(err, ErrPending) true, and its exit code Pending's.
func (e *PendingError) Is(target error) bool { return errors.Is(ErrPending, target) }

// Report is what a change did: one outcome per target, in order, and how
// the change went (a dry run, pending approval, under review).
type Report struct {
	Change   Change
	Outcomes []Outcome
	// Pending is set when the change became a change request.
	Pending *Pending
	// Requests are every request the change became when it became
	// several (a change asked in chunks under the table's policy: one per
	// chunk an approval applies in one transaction), Pending first;
	// RequestEvents announce Requests[1:] (Event the first).
	Requests      []Pending
	RequestEvents []*notify.Event
	// Review is the break-glass review the change opened ("": none).
	Review string
	// Event is the announcement of what was written (nil: nothing to
	// announce, a dry run, --no-notify); the surface sends it once it has
	// shown the report.
	Event *notify.Event
	// Impact is what the change does to the platform's tools (nil: its
	// kind forces nothing, or no impact was told): [Planned.Impact].
	Impact Impact
}

// Written are the outcomes written.
func (r Report) Written() []Outcome {
	var out []Outcome
	for _, o := range r.Outcomes {
		if o.Written {
			out = append(out, o)
		}
	}
	return out
}

// Err is the first failed target's error (nil: none failed).
func (r Report) Err() error {
	for _, o := range r.Outcomes {
		if o.Err != nil {
			return o.Err
		}
	}
	return nil
}

// RefusedError is a change its kind's rules refuse before anything is
// read ([Kind.Check]): nothing was read or written.
type RefusedError struct{ Err error }

func (e *RefusedError) Error() string { return e.Err.Error() }

// Unwrap returns the kind's error.
func (e *RefusedError) Unwrap() error { return e.Err }

// SettingError is a refusal by a setting of the context (a force longer
// than its max-override, a bucket change asked under other limits): another
// context's may allow the change.
type SettingError struct {
	// Where says where the change can be made: "approve it from a context
	// whose max-override allows it".
	Where string
	Err   error
}

func (e *SettingError) Error() string { return e.Err.Error() }

// Unwrap returns the setting's refusal.
func (e *SettingError) Unwrap() error { return e.Err }
