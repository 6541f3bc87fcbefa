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
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"sort"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/store"
)

// Prefix starts the pk of every audit record.
const Prefix = "audit#"

// Retention is how long records are kept before the store's TTL may collect them.
const Retention = 90 * 24 * time.Hour

// ErrAuditWrite marks a mutation whose audit record could not be written.
var ErrAuditWrite = errors.New("audit record not written")

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
)

// Identity is who is acting and how koshactl knows.
type Identity struct {
	// Actor names the principal: a caller ARN, $KOSHACTL_ACTOR or user@host.
	Actor string
	// Source says whether STS vouched for Actor.
	Source ActorSource
}

// Verified reports whether STS vouched for the actor.
func (i Identity) Verified() bool { return i.Source == ActorSTS }

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
	// Outcome is "ok" for a mutation that took effect, or a short word for
	// attempts that did not (the data plane's "ignored" chaos headers).
	Outcome string `json:"outcome"`
	// Before and After are JSON documents describing the subject's state.
	Before json.RawMessage `json:"before,omitempty"`
	After  json.RawMessage `json:"after,omitempty"`
}

type recordStore interface {
	Put(ctx context.Context, item store.Item, cond store.Condition) error
	Scan(ctx context.Context, q store.ScanQuery) iter.Seq2[store.Item, error]
}

// Log appends and lists audit records on a store.
type Log struct {
	store recordStore
	clock clock.Clock
	// Context names the koshactl context records are written from.
	context string
	// attest says how an entry's actor was established ("" when unknown).
	attest func(ctx context.Context, actor string) ActorSource
	// notices, when set, hears once that an index is missing (SetNotice);
	// a pointer, so copies made by Attest share it.
	notices *notices
}

// NewLog returns a Log writing into s, stamping records with contextName.
func NewLog(s recordStore, clk clock.Clock, contextName string) *Log {
	if clk == nil {
		clk = clock.Real{}
	}
	return &Log{store: s, clock: clk, context: contextName}
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
	Outcome     string
	Before      any
	After       any
}

// Append writes one record. Its error wraps ErrAuditWrite, so callers can tell
// "the change happened but was not audited" from other failures.
func (l *Log) Append(ctx context.Context, e Entry) (Record, error) {
	now := l.clock.Now().UTC().Truncate(time.Millisecond)
	id, err := newID()
	if err != nil {
		return Record{}, fmt.Errorf("%w: %w", ErrAuditWrite, err)
	}
	r := Record{ID: id, Time: now, Actor: e.Actor, Action: e.Action, Subject: e.Subject, Reason: e.Reason,
		Context: l.context, Outcome: e.Outcome}
	if r.Outcome == "" {
		r.Outcome = "ok"
	}
	r.ActorSource = e.ActorSource
	if r.ActorSource == "" && l.attest != nil {
		r.ActorSource = l.attest(ctx, e.Actor)
	}
	if r.Before, err = marshalState(e.Before); err != nil {
		return Record{}, fmt.Errorf("%w: %w", ErrAuditWrite, err)
	}
	if r.After, err = marshalState(e.After); err != nil {
		return Record{}, fmt.Errorf("%w: %w", ErrAuditWrite, err)
	}
	if err := l.store.Put(ctx, r.item(), store.IfAbsent()); err != nil {
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

func newID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate audit id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

func key(t time.Time, id string) string {
	return fmt.Sprintf("%s%013d#%s", Prefix, t.UnixMilli(), id)
}

func (r Record) item() store.Item {
	it := store.Item{
		store.PK:      key(r.Time, r.ID),
		"time":        r.Time.UnixMilli(),
		"actor":       r.Actor,
		"action":      r.Action,
		"subject":     r.Subject,
		"context":     r.Context,
		"outcome":     r.Outcome,
		store.TTLAttr: r.Time.Add(Retention).Unix(),
	}
	for k, v := range indexAttrs(r.Time, r.Subject, r.Actor) {
		it[k] = v
	}
	if r.Reason != "" {
		it["reason"] = r.Reason
	}
	if r.ActorSource != "" {
		it["actor_source"] = string(r.ActorSource)
	}
	if len(r.Before) > 0 {
		it["before"] = string(r.Before)
	}
	if len(r.After) > 0 {
		it["after"] = string(r.After)
	}
	return it
}

func fromItem(it store.Item) (Record, error) {
	rest, ok := strings.CutPrefix(it.PK(), Prefix)
	_, id, ok2 := strings.Cut(rest, "#")
	ms, ok3 := it.Int("time")
	if !ok || !ok2 || !ok3 {
		return Record{}, fmt.Errorf("malformed audit item %q", it.PK())
	}
	r := Record{ID: id, Time: time.UnixMilli(ms).UTC(), Actor: it.Str("actor"), Action: it.Str("action"),
		Subject: it.Str("subject"), Reason: it.Str("reason"), Context: it.Str("context"), Outcome: it.Str("outcome"),
		ActorSource: ActorSource(it.Str("actor_source"))}
	if b := it.Str("before"); b != "" {
		r.Before = json.RawMessage(b)
	}
	if a := it.Str("after"); a != "" {
		r.After = json.RawMessage(a)
	}
	return r, nil
}

// Query filters [Log.List].
type Query struct {
	// Since keeps records at or after it; zero keeps all retained records.
	Since time.Time
	// Until keeps records before it; zero keeps records up to now.
	Until time.Time
	// Actor keeps records of this actor (exact match) when set.
	Actor string
	// Stats, when set, counts the items the listing examined.
	Stats *store.ReadStats
	// Subject keeps records about this subject (exact match, e.g.
	// "breaker#openai"), or with this prefix when it ends in "*".
	Subject string
	// Action keeps records of this action when set.
	Action string
	// Limit keeps the newest Limit records; zero keeps all.
	Limit int
}

// List returns matching records, newest first. Records past retention are
// left out even if the store has not collected them yet.
func (l *Log) List(ctx context.Context, q Query) ([]Record, error) {
	now := l.clock.Now()
	var out []Record
	// Candidates come newest first, so the listing stops at Limit matches.
	for it, err := range l.candidates(ctx, q, now) {
		if err != nil {
			return nil, fmt.Errorf("list audit records: %w", err)
		}
		r, err := fromItem(it)
		if err != nil {
			return nil, err
		}
		if now.Sub(r.Time) > Retention || (!q.Since.IsZero() && r.Time.Before(q.Since)) {
			continue
		}
		if (!q.Until.IsZero() && !r.Time.Before(q.Until)) || (q.Action != "" && r.Action != q.Action) ||
			(q.Actor != "" && r.Actor != q.Actor) {
			continue
		}
		if q.Subject != "" {
			if p, ok := strings.CutSuffix(q.Subject, "*"); ok {
				if !strings.HasPrefix(r.Subject, p) {
					continue
				}
			} else if r.Subject != q.Subject {
				continue
			}
		}
		out = append(out, r)
		if q.Limit > 0 && len(out) >= q.Limit {
			break
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Time.Equal(out[j].Time) {
			return out[i].Time.After(out[j].Time)
		}
		return out[i].ID > out[j].ID
	})
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out, nil
}
