// Package audit records every control-plane mutation koshactl makes, in the
// same store as the state it changed, and lists those records back.
//
// A record is one item with pk "audit#<epoch ms, 13 digits>#<random id>",
// written with an IfAbsent condition and a ttl 90 days ahead (see
// docs/contracts/audit-record.md). Records never hold secrets: callers pass
// field summaries, never keys or signatures.
package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"sort"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/store"
)

// Prefix starts the pk of every audit record.
const Prefix = "audit#"

// DataPlanePrefix starts the pk of the records the data plane writes (the
// chaos headers it applied or ignored): "audit#dp#<epoch ms>#<id>". The
// data plane's role may write only these, so a record under it proves
// nothing about a lever: no lever decision (drill recover) trusts one, and
// they are listed marked as the data plane's.
const DataPlanePrefix = Prefix + "dp#"

// RequestPrefix starts the pk of the records of asking: a change request
// made or canceled ("audit#rq#<epoch ms>#<id>"). A role that may only ask
// (requester) may write these and no other audit key, so a record under it
// proves no approval: what an approved request lets happen is decided on
// the approver's record, under [Prefix] alone.
const RequestPrefix = Prefix + "rq#"

// Retention is how long records are kept before the store's TTL may collect them.
const Retention = 90 * 24 * time.Hour

// ErrAuditWrite marks a mutation whose audit record could not be written.
var ErrAuditWrite = exitcode.New(exitcode.Unknown, "audit record not written")

// ErrAuditUnknown marks a mutation whose audit append was sent but whose
// outcome is unknown (interrupted in flight, or the store went away before
// the answer and the re-read): the record may be there or not. It matches
// ErrAuditWrite (exit 8).
var ErrAuditUnknown error = auditUnknown{}

type auditUnknown struct{}

func (auditUnknown) Error() string        { return "audit record may not have been written" }
func (auditUnknown) Is(target error) bool { return errors.Is(ErrAuditWrite, target) }

// ActorSource says how koshactl established a record's actor. It is stored
// as the record's actor_source attribute (see docs/contracts/audit-record.md).
type ActorSource string

const (
	// ActorSTS: the actor is the caller ARN that STS GetCallerIdentity
	// returned for the credentials the change was made with (verified).
	ActorSTS ActorSource = "sts"
	// ActorUnverified: the actor is what the operator's environment says
	// ($KOSHACTL_ACTOR, else user@host); nothing checked it. Local contexts,
	// static credentials, and endpoints that do not serve STS record this.
	ActorUnverified ActorSource = "unverified"
	// ActorDemo: the actor is one of a local context's demo identities
	// (internal/identity's DemoUsers), picked with $KOSHACTL_DEMO_USER and
	// vouched for by the local context alone. It counts as verified, so four
	// eyes can be tried on the embedded store; nothing but the local
	// context stands behind it: a demonstration, not a security boundary.
	ActorDemo ActorSource = "demo"
)

// Verified reports whether something other than the actor's own word
// vouched for it: STS, or a local context's demo identities.
func (s ActorSource) Verified() bool { return s == ActorSTS || s == ActorDemo }

// Identity is who is acting and how koshactl knows.
type Identity struct {
	// Actor names the principal: a caller ARN, $KOSHACTL_ACTOR or user@host.
	Actor string
	// Source says whether STS vouched for Actor.
	Source ActorSource
	// UserID is the principal's unique id as STS GetCallerIdentity names it
	// (aws:userid: an IAM user's id, or ROLEID:SESSION for an assumed
	// role); empty for an unverified actor. The proofs a verified identity
	// writes are keyed by it (internal/proof), and an IAM policy lets each
	// principal write under its own alone.
	UserID string
}

// Verified reports whether STS (or a local context's demo identities)
// vouched for the actor.
func (i Identity) Verified() bool { return i.Source.Verified() }

// Record is one audited action.
type Record struct {
	ID    string    `json:"id"`
	Time  time.Time `json:"time"`
	Actor string    `json:"actor"`
	// ActorSource says how Actor was established; empty on records written
	// before koshactl recorded it, and on the sandbox's records.
	ActorSource ActorSource `json:"actor_source,omitempty"`
	Action      string      `json:"action"`
	Subject     string      `json:"subject"`
	Reason      string      `json:"reason,omitempty"`
	Context     string      `json:"context"`
	// RunID is the id of the drill run that made the change (the run_id
	// attribute); empty for changes made outside a drill. `drill recover`
	// acts only on what the records of the run it recovers name.
	RunID string `json:"run_id,omitempty"`
	// Source names the surface that made the record when it was not the
	// command line (the source attribute): [SourceMCP] for a change
	// proposed through `koshactl mcp`. Empty on the CLI's records and on
	// records written before koshactl recorded it.
	Source string `json:"source,omitempty"`
	// RollbackOf is the id of the record this change rolls back (the
	// rollback_of attribute): a bake's put-back of the override a clear
	// removed names the clear's record. Empty on every other record.
	RollbackOf string `json:"rollback_of,omitempty"`
	// Outcome is "ok" for a mutation that took effect, or a short word for
	// attempts that did not (the data plane's "ignored" chaos headers).
	Outcome string `json:"outcome"`
	// Before and After are JSON documents describing the subject's state.
	Before json.RawMessage `json:"before,omitempty"`
	After  json.RawMessage `json:"after,omitempty"`
	// DataPlane is true for a record the data plane wrote (keyed under
	// [DataPlanePrefix]): no lever decision trusts it.
	DataPlane bool `json:"data_plane,omitempty"`
	// Asked is true for a record of asking (keyed under [RequestPrefix]):
	// a request made or canceled, which a requester-only role may write.
	Asked bool `json:"asked,omitempty"`
	// Change is the token of the change the record was written with (its
	// write_id attribute): the records of one change (a force of several
	// dependencies) share it, and so do the lever items it wrote.
	Change string `json:"change,omitempty"`
	// Approval says how the table's policy let the change through (the
	// approval attribute); nil on records of changes made without asking a
	// policy (no policy stored, an older koshactl, a hand write).
	Approval *Approval `json:"approval,omitempty"`
	// Impact is what the change did to the platform's tools as koshactl
	// saw it when it wrote the record (the impact attribute): a force's or
	// a clear's of a dependency, with the call rates read then. Nil on
	// other records, and on those written without an impact assessed.
	Impact *Impact `json:"impact,omitempty"`
	// Unapproved is set by listings of a table with a policy: a lever change
	// recorded since the policy was set that carries no approval
	// (docs/contracts/policy.md, "What koshactl cannot prevent"). It is not
	// stored.
	Unapproved bool `json:"unapproved,omitempty"`
}

// How a change went through the table's policy ([Approval].Decision).
const (
	// DecisionAllowed: the policy allowed it at once.
	DecisionAllowed = "allowed"
	// DecisionApproved: it applies a change request other people approved.
	DecisionApproved = "approved"
	// DecisionBreakGlass: the actor acted at once under the policy's
	// break-glass permission; a review stays open until someone else
	// acknowledges it.
	DecisionBreakGlass = "break-glass"
)

// Approval is how the table's policy let a change through: stored as the
// record's approval attribute, a JSON document.
type Approval struct {
	// Decision is [DecisionAllowed], [DecisionApproved] or
	// [DecisionBreakGlass].
	Decision string `json:"decision"`
	// Policies are the ids of the policies that permitted it.
	Policies []string `json:"policies,omitempty"`
	// Request is the change request applied (approved changes).
	Request string `json:"request,omitempty"`
	// Requester and RequesterSource are who asked for the change and how
	// koshactl knew (approved changes).
	Requester       string      `json:"requester,omitempty"`
	RequesterSource ActorSource `json:"requester_source,omitempty"`
	// Approvers are the verified identities that approved it, in order; the
	// last one applied it (the record's actor).
	Approvers []string `json:"approvers,omitempty"`
	// Review is the review a break-glass change opened.
	Review string `json:"review,omitempty"`
}

// Describe says in a line how the policy let the change through: "approved
// by B, C (request ID, requested by A)", "break-glass (review ID)",
// "allowed (P, Q)". The names are as stored: render it through textsafe.
func (a *Approval) Describe() string {
	if a == nil {
		return ""
	}
	var s string
	switch a.Decision {
	case DecisionApproved:
		s = "approved by " + strings.Join(a.Approvers, ", ") + " (request " + a.Request + ", requested by " + a.Requester + ")"
	case DecisionBreakGlass:
		s = "break-glass (review " + a.Review + ")"
	default:
		s = a.Decision
		if len(a.Policies) > 0 {
			s += " (" + strings.Join(a.Policies, ", ") + ")"
		}
	}
	return s
}

// BreakGlass reports whether the change was a break-glass.
func (a *Approval) BreakGlass() bool { return a != nil && a.Decision == DecisionBreakGlass }

// ErrBreakGlassQuiet reports a break-glass change asked not to be
// announced (--no-notify): a change made without the approvals the table's
// policy asks is always announced, so the lever services write nothing.
var ErrBreakGlassQuiet = exitcode.New(exitcode.Usage, "a break-glass change is always announced: drop --no-notify")

type recordStore interface {
	Get(ctx context.Context, pk string) (store.Item, error)
	Put(ctx context.Context, item store.Item, cond store.Condition) error
	Transact(ctx context.Context, c store.Change) error
	Scan(ctx context.Context, q store.ScanQuery) iter.Seq2[store.Item, error]
}

// Appender is what a domain operation needs to record what it did: Stage
// for a change that writes a lever (its record goes into the lever's own
// transaction), Append for a record on its own. *[Log] implements it; tests
// pass a recorder. Declared here, once, like io.Writer, because breaker,
// ratelimit, drill and the dashboard all ask for exactly this.
type Appender interface {
	Append(ctx context.Context, e Entry) (Record, error)
	Stage(ctx context.Context, e Entry, token string, n int) (Record, store.Op, error)
}

var _ Appender = (*Log)(nil)

// Log appends and lists audit records on a store.
type Log struct {
	store recordStore
	clock clock.Clock
	// Context names the koshactl context records are written from.
	context string
	// attest says how an entry's actor was established ("" when unknown).
	attest func(ctx context.Context, actor string) ActorSource
	// prefix starts the pk of the records l writes: [Prefix], or
	// [DataPlanePrefix] for the data plane's log.
	prefix string
	// notices, when set, hears once that an index is missing (SetNotice);
	// a pointer, so copies made by Attest share it.
	notices *notices
}

// NewLog returns a Log writing into s, stamping records with contextName.
func NewLog(s recordStore, clk clock.Clock, contextName string) *Log {
	if clk == nil {
		clk = clock.Real{}
	}
	return &Log{store: s, clock: clk, context: contextName, prefix: Prefix}
}

// NewRequestLog is [NewLog] for the records of asking: keyed under
// [RequestPrefix], the only audit keys a requester-only role may write.
func NewRequestLog(s recordStore, clk clock.Clock, contextName string) *Log {
	l := NewLog(s, clk, contextName)
	l.prefix = RequestPrefix
	return l
}

// NewDataPlaneLog is [NewLog] for the data plane: its records are keyed
// under [DataPlanePrefix], the only audit keys its role may write.
func NewDataPlaneLog(s recordStore, clk clock.Clock, contextName string) *Log {
	l := NewLog(s, clk, contextName)
	l.prefix = DataPlanePrefix
	return l
}

// Attest returns a copy of l that stamps each record with source(ctx, actor):
// how that record's actor was established, or "" when source does not know
// it (the record then carries no actor_source). The command's wiring uses it
// so records name the caller identity's source without every caller
// carrying it; an [Entry.ActorSource] set by the caller wins.
func (l *Log) Attest(source func(ctx context.Context, actor string) ActorSource) *Log {
	c := *l
	c.attest = source
	return &c
}

// Entry is what a caller says about one action.
type Entry struct {
	Actor string
	// ActorSource says how Actor was established; empty asks the Log's
	// [Log.Attest] function, if any.
	ActorSource ActorSource
	Action      string
	Subject     string
	Reason      string
	// RunID names the drill run acting, when one is ([WithRunID] sets it).
	RunID string
	// Source names the surface acting when it is not the command line
	// ([SourceMCP]); empty for the CLI.
	Source string
	// RollbackOf names the record of the change this one rolls back (a
	// bake's put-back names the clear's).
	RollbackOf string
	Outcome    string
	Before     any
	After      any
	// Approval, when set, is how the table's policy let the change through.
	Approval *Approval
	// Impact, when set, is what the change does to the platform's tools,
	// with the call rates seen ([Record.Impact]).
	Impact *Impact
}

// WithRunID returns an Appender that stamps every entry it appends through a
// with runID (an entry that names a run of its own keeps it): what a drill
// run hands its steps and rollbacks, so each record it writes says which run
// wrote it.
func WithRunID(a Appender, runID string) Appender {
	if a == nil || runID == "" {
		return a
	}
	return runIDAppender{a: a, runID: runID}
}

type runIDAppender struct {
	a     Appender
	runID string
}

func (r runIDAppender) Append(ctx context.Context, e Entry) (Record, error) {
	if e.RunID == "" {
		e.RunID = r.runID
	}
	return r.a.Append(ctx, e)
}

func (r runIDAppender) Stage(ctx context.Context, e Entry, token string, n int) (Record, store.Op, error) {
	if e.RunID == "" {
		e.RunID = r.runID
	}
	return r.a.Stage(ctx, e, token, n)
}

// record builds the record e describes, with id.
func (l *Log) record(ctx context.Context, e Entry, id string) (Record, error) {
	now := l.clock.Now().UTC().Truncate(time.Millisecond)
	r := Record{ID: id, Time: now, Actor: e.Actor, Action: e.Action, Subject: e.Subject, Reason: e.Reason,
		Context: l.context, Outcome: e.Outcome, RunID: e.RunID, Source: e.Source, RollbackOf: e.RollbackOf, Approval: e.Approval, Impact: e.Impact}
	if r.Outcome == "" {
		r.Outcome = "ok"
	}
	r.ActorSource = e.ActorSource
	if r.ActorSource == "" && l.attest != nil {
		r.ActorSource = l.attest(ctx, e.Actor)
	}
	var err error
	if r.Before, err = marshalState(e.Before); err != nil {
		return Record{}, fmt.Errorf("%w: %w", ErrAuditWrite, err)
	}
	if r.After, err = marshalState(e.After); err != nil {
		return Record{}, fmt.Errorf("%w: %w", ErrAuditWrite, err)
	}
	return r, nil
}

func marshalState(v any) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	if raw, ok := v.(json.RawMessage); ok {
		return raw, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode audit state: %w", err)
	}
	if string(b) == "null" {
		return nil, nil
	}
	return b, nil
}

func key(prefix string, t time.Time, id string) string {
	return fmt.Sprintf("%s%013d#%s", prefix, t.UnixMilli(), id)
}

// prefix is the pk prefix r is stored under.
func (r Record) prefix() string {
	switch {
	case r.DataPlane:
		return DataPlanePrefix
	case r.Asked:
		return RequestPrefix
	}
	return Prefix
}

func (r Record) item() store.Item {
	it := store.Item{
		store.PK:      key(r.prefix(), r.Time, r.ID),
		attrTime:      r.Time.UnixMilli(),
		"actor":       r.Actor,
		"action":      r.Action,
		"subject":     r.Subject,
		"context":     r.Context,
		"outcome":     r.Outcome,
		store.TTLAttr: r.Time.Add(Retention).Unix(),
	}
	attrs, _ := indexAttrs(r.Time, it.PK(), r.ID, r.Subject, r.Actor) // what an index cannot take stays out of it
	for k, v := range attrs {
		it[k] = v
	}
	for k, v := range map[string]string{"reason": r.Reason, "actor_source": string(r.ActorSource), attrRunID: r.RunID, attrSource: r.Source,
		attrRollbackOf: r.RollbackOf, "before": string(r.Before), "after": string(r.After), store.WriteIDAttr: r.Change} {
		if v != "" {
			it[k] = v
		}
	}
	if r.Approval != nil {
		b, _ := json.Marshal(r.Approval)
		it[attrApproval] = string(b)
	}
	if r.Impact != nil {
		b, _ := json.Marshal(r.Impact)
		it[attrImpact] = string(b)
	}
	return it
}

// fromItem decodes a stored record. ok is false when the record cannot be
// listed at all (its pk or time cannot be read); problems lists every
// attribute that does not follow docs/contracts/audit-record.md, and the
// record is decoded without them (an unreadable before is left out).
func fromItem(it store.Item) (r Record, ok bool, problems []store.Problem) {
	pk := it.PK()
	d := store.NewDecoder(it)
	bad := func(attr, what string) {
		d.Problems = append(d.Problems, store.Problem{PK: pk, Attribute: attr, Problem: what})
	}
	ok = true
	rest, _ := strings.CutPrefix(pk, Prefix)
	if dp, ok := strings.CutPrefix(pk, DataPlanePrefix); ok {
		rest, r.DataPlane = dp, true
	}
	if rq, ok := strings.CutPrefix(pk, RequestPrefix); ok {
		rest, r.Asked = rq, true
	}
	if _, id, found := strings.Cut(rest, "#"); found && id != "" {
		r.ID = id
	} else {
		d.Problem(store.PK, "want audit#<epoch ms>#<id>")
		ok = false
	}
	switch ms, isInt := it[attrTime].(int64); {
	case !isInt:
		d.Problem(attrTime, "want N, whole epoch milliseconds")
		ok = false
	case ms < store.MinEpochMs || ms > store.MaxEpochMs:
		d.Problem(attrTime, "want N, whole epoch milliseconds between 1970 and 9999")
		ok = false
	default:
		r.Time = time.UnixMilli(ms).UTC()
	}
	str := d.Str
	r.Actor, r.Action, r.Subject = str("actor", true), str("action", true), str("subject", true)
	r.Reason, r.Context, r.Outcome = str("reason", false), str("context", true), str("outcome", true)
	r.ActorSource = ActorSource(str("actor_source", false))
	r.RunID = str(attrRunID, false)
	r.Source = str(attrSource, false)
	r.RollbackOf = str(attrRollbackOf, false)
	r.Change = str(store.WriteIDAttr, false)
	doc := func(attr string) json.RawMessage {
		v := str(attr, false)
		if v == "" {
			return nil
		}
		if !json.Valid([]byte(v)) {
			bad(attr, "found an S that is not a JSON document, want a JSON document (left out)")
			return nil
		}
		return json.RawMessage(v)
	}
	r.Before, r.After = doc("before"), doc("after")
	if raw := doc(attrApproval); raw != nil {
		var a Approval
		if err := json.Unmarshal(raw, &a); err != nil || a.Decision == "" {
			bad(attrApproval, "found a JSON document that is not an approval, want {\"decision\": ...} (left out)")
		} else {
			r.Approval = &a
		}
	}
	if raw := doc(attrImpact); raw != nil {
		var im Impact
		if err := json.Unmarshal(raw, &im); err != nil || im.Dependency == "" {
			bad(attrImpact, "found a JSON document that is not an impact, want {\"dependency\": ...} (left out)")
		} else {
			r.Impact = &im
		}
	}
	return r, ok, d.Problems
}

// attrTime is the record's time attribute (epoch ms).
const attrTime = "time"

// attrApproval is the record's approval attribute: how the table's policy
// let the change through (a JSON document).
const attrApproval = "approval"

// attrImpact is the record's impact attribute: what a force or a clear
// did to the platform's tools, with the call rates seen (a JSON document).
const attrImpact = "impact"

// attrRunID is the record's run_id attribute: the drill run that acted.
const attrRunID = "run_id"

// attrSource is the record's source attribute: the surface that acted,
// when it was not the command line.
const attrSource = "source"

// attrRollbackOf is the record's rollback_of attribute: the id of the
// record of the change it rolls back.
const attrRollbackOf = "rollback_of"

// SourceMCP is the source of the records of changes proposed through the
// MCP server (`koshactl mcp`): an agent asked, a person approves.
const SourceMCP = "mcp"

// Query filters [Log.List].
type Query struct {
	// Since keeps records at or after it; zero keeps all retained records.
	Since time.Time
	// Until keeps records before it (the window is [Since, Until)); zero
	// keeps records up to now.
	Until time.Time
	// Scan reads every audit item with a scan of the table instead of the
	// indexes: the complete answer, including records written without the
	// index attributes (by hand, by another tool) and records whose time
	// cannot be read, which no index can place. Its cost is the table's size.
	Scan bool
	// Stats, when set, counts the items the listing examined.
	Stats *store.ReadStats
	// Subject keeps records about this subject (exact match, e.g.
	// "breaker#openai"), or with this prefix when it ends in "*".
	Subject string
	// Action keeps records of this action when set.
	Action string
	// Actor keeps records by this actor (exact match), or with this prefix
	// when it ends in "*".
	Actor string
	// RunID keeps records of this drill run (exact match) when set.
	RunID string
	// Keep, when set, keeps only the records it is true of, after the
	// other filters (audit list --unapproved keeps the changes
	// policy.Unapproved flags); Limit counts the records it keeps, and the
	// problems of a record it leaves out are not reported. A record that
	// cannot be dated is not asked (it is reported whatever Keep says).
	Keep func(Record) bool
	// Limit keeps the newest Limit records; zero keeps all.
	Limit int
}

// Listing is what [Log.List] read.
type Listing struct {
	// Records are the matching records, newest first.
	Records []Record
	// Unreadable lists, in pk order, every attribute of a matching record
	// that does not follow the contract. A record whose pk or time cannot be
	// read is left out of Records (it cannot be dated, so it is reported
	// whatever Since says); one with another unreadable attribute is listed
	// without it.
	Unreadable []store.Problem
}

// Listed is one matching item [Log.Read] met: a record it can list (Dated),
// and the attributes of it that do not follow the contract. Past the
// query's Limit a scan reads on to report every unreadable record: those
// it yields with their problems alone (Dated false).
type Listed struct {
	Record Record
	// Dated is false for an item whose pk or time cannot be read: it is
	// not listed, only its Problems reported.
	Dated    bool
	Problems []store.Problem
}

// Read yields the matching records newest first (by time, then id), as the
// store returns them: a listing by index holds no more than a page of each
// of its queries (docs/contracts/store.md), so a caller that prints each
// record as it comes lists any number in bounded memory. A scan (q.Scan, a
// store without indexes) holds every record to sort them. One bad record
// never hides the others: it is yielded with its problems. Records past
// retention are left out even if the store has not collected them yet.
// Iteration stops at the first error, which is yielded.
func (l *Log) Read(ctx context.Context, q Query) iter.Seq2[Listed, error] {
	return func(yield func(Listed, error) bool) {
		now := l.clock.Now()
		listed := 0
		for it, err := range l.candidates(ctx, q, now) {
			if err != nil {
				yield(Listed{}, fmt.Errorf("list audit records: %w", err))
				return
			}
			if isLegacyClaim(it.PK()) {
				continue // a claim, not a record, whatever index placed it here
			}
			r, ok, problems := fromItem(it)
			if !q.matches(r, ok, now) {
				continue
			}
			if ok && q.Keep != nil && !q.Keep(r) {
				continue
			}
			rd := Listed{Record: r, Dated: ok, Problems: problems}
			if q.Limit > 0 && listed >= q.Limit {
				// Past the limit a scan reads on only to report every
				// unreadable record.
				if len(problems) == 0 {
					continue
				}
				rd = Listed{Problems: problems}
			}
			if !yield(rd, nil) {
				return
			}
			if rd.Dated {
				listed++
				// The indexes hold only dated records, so a listing by
				// index can stop at Limit.
				if q.Limit > 0 && listed >= q.Limit && !q.Scan {
					return
				}
			}
		}
	}
}

// List returns the matching records newest first, and the records it could
// not read ([Log.Read], collected).
func (l *Log) List(ctx context.Context, q Query) (Listing, error) {
	var out Listing
	for rd, err := range l.Read(ctx, q) {
		if err != nil {
			return Listing{}, err
		}
		out.Unreadable = append(out.Unreadable, rd.Problems...)
		if rd.Dated {
			out.Records = append(out.Records, rd.Record)
		}
	}
	sort.SliceStable(out.Unreadable, func(i, j int) bool { return out.Unreadable[i].PK < out.Unreadable[j].PK })
	return out, nil
}

// matches applies the query to r; dated is false when r's time is unknown,
// which only the action and subject filters can rule out.
func (q Query) matches(r Record, dated bool, now time.Time) bool {
	if dated && (now.Sub(r.Time) > Retention || (!q.Since.IsZero() && r.Time.Before(q.Since)) ||
		(!q.Until.IsZero() && !r.Time.Before(q.Until))) {
		return false
	}
	if q.Action != "" && r.Action != q.Action {
		return false
	}
	if q.RunID != "" && r.RunID != q.RunID {
		return false
	}
	return matchPattern(q.Subject, r.Subject) && matchPattern(q.Actor, r.Actor)
}

// matchPattern: an empty pattern matches everything, "x*" a prefix, else
// the exact value.
func matchPattern(pattern, v string) bool {
	if pattern == "" {
		return true
	}
	if p, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(v, p)
	}
	return v == pattern
}
