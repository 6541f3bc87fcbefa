package ratelimit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/store"
)

// The bucket lever as a kind of [lever.Kind]. Unlike an override, a bucket
// moves with every request its client sends, so a bucket change is not
// conditional on the level read when it was asked: it writes a level (full,
// empty or held below zero, N tokens), conditional on the bucket as read
// when it is written, and is read and decided again, as a new change, when
// a take lands in between ([MutationAttempts]). The level depends on the
// limits (capacity, refill rate): a change keeps those it was asked under,
// and a context with others does not apply it.

// Spec is the bucket lever's spec.
var Spec = lever.Spec{Name: "ratelimit", Prefix: KeyPrefix, Resource: "Client", Noun: "client", Item: "bucket", Lever: "rate-limit bucket",
	About: "A rate-limit client whose bucket a lever resets, drains or sets.",
	Actions: []lever.Action{
		{Name: ActionReset, Verb: "reset", Attempts: MutationAttempts, Propose: &lever.Proposal{Tool: "propose_ratelimit_reset", Title: "Propose a bucket reset",
			About:   "Propose refilling clients' rate-limit buckets. Nothing is changed: a change request is made; a person applies it with the approve command in the result.",
			Targets: "clients", TargetsAbout: "the client ids whose rate-limit bucket to reset"}},
		{Name: ActionDrain, Verb: "drain", Attempts: MutationAttempts, Propose: &lever.Proposal{Tool: "propose_ratelimit_drain", Title: "Propose a bucket drain",
			About:   "Propose draining clients' rate-limit buckets (optionally holding them refused). Nothing is changed: a change request is made; a person applies it with the approve command in the result.",
			Targets: "clients", TargetsAbout: "the client ids whose rate-limit bucket to drain",
			Params: []lever.Param{{Name: "hold_for", Type: lever.ParamString, About: "keep the clients refused this long, a Go duration like 5m (default: drain to zero)"}}}},
		{Name: ActionSet, Verb: "set", Attempts: MutationAttempts, Propose: &lever.Proposal{Tool: "propose_ratelimit_set", Title: "Propose a bucket level",
			About:   "Propose setting clients' rate-limit buckets to a token count. Nothing is changed: a change request is made; a person applies it with the approve command in the result.",
			Targets: "clients", TargetsAbout: "the client ids whose rate-limit bucket to set",
			Params: []lever.Param{{Name: "tokens", Type: lever.ParamNumber, About: "the token count to set, from 0 to the capacity", Required: true}}}},
	}}

var (
	_ lever.Kind     = (*Buckets)(nil)
	_ lever.Proposer = (*Buckets)(nil)
)

// Spec implements [lever.Kind].
func (b *Buckets) Spec() lever.Spec { return Spec }

// Params are a bucket change's params: the count a set writes, how long a
// drain holds its clients refused, and the limits the change was asked
// under (zero: the service's).
type Params struct {
	Tokens                    float64
	HoldFor                   time.Duration
	Capacity, RefillPerSecond float64
}

// paramsWire is how a change request holds them (docs/contracts/policy.md).
type paramsWire struct {
	Tokens          *float64 `json:"tokens,omitempty"`
	HoldFor         string   `json:"hold_for,omitempty"`
	Capacity        float64  `json:"capacity,omitempty"`
	RefillPerSecond float64  `json:"refill_per_second,omitempty"`
}

// ops are the bucket levers' actions and their operations.
var ops = map[string]Op{ActionReset: OpReset, ActionDrain: OpDrain, ActionSet: OpSet}

// Change is the change applying op to clients with reason, under the
// service's limits: the CLI's, the dashboard's, an agent's and a drill's.
func (b *Buckets) Change(op Op, reason string, p Params, clients ...string) lever.Change {
	p.Capacity, p.RefillPerSecond = b.limits.Capacity, b.limits.RefillPerSecond
	return lever.Change{Action: op.Action(), Targets: clients, Reason: reason, Params: p}
}

// Proposed implements [lever.Proposer]: an agent's reset, drain
// ("hold_for", a duration) or set ("tokens") of clients, each a valid id
// named once, under the service's limits.
func (b *Buckets) Proposed(action string, a lever.Args) (lever.Change, error) {
	if err := CheckClients(a.Targets); err != nil {
		return lever.Change{}, err
	}
	op, ok := ops[action]
	if !ok {
		return lever.Change{}, fmt.Errorf("%s is not proposed by an agent", action)
	}
	var p Params
	if v := a.String("hold_for"); op == OpDrain && v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return lever.Change{}, fmt.Errorf("hold_for %q is not a duration: give one like 5m", v)
		}
		p.HoldFor = d
	}
	if op == OpSet {
		p.Tokens, _ = a.Number("tokens")
	}
	return b.Change(op, a.Reason, p, a.Targets...), nil
}

// Params implements [lever.Kind]: the params as a request holds them.
func (b *Buckets) Params(action string, raw json.RawMessage) (any, error) {
	var w paramsWire
	if err := lever.DecodeParams(raw, &w); err != nil {
		return nil, err
	}
	p := Params{Capacity: w.Capacity, RefillPerSecond: w.RefillPerSecond}
	if w.HoldFor != "" {
		d, err := time.ParseDuration(w.HoldFor)
		if err != nil {
			return nil, fmt.Errorf("hold_for %q: %v", w.HoldFor, err)
		}
		p.HoldFor = d
	}
	if ops[action] == OpSet {
		if w.Tokens == nil {
			return nil, errors.New("a set without a token count")
		}
		p.Tokens = *w.Tokens
	}
	return p, nil
}

// opParams returns c's operation and params.
func opParams(c lever.Change) (Op, Params) {
	p, _ := c.Params.(Params)
	return ops[c.Action], p
}

// Encode implements [lever.Kind]: the params as a request holds them;
// only a set has a count, only a held drain a hold.
func (b *Buckets) Encode(c lever.Change) (json.RawMessage, error) {
	op, p := opParams(c)
	w := paramsWire{Capacity: p.Capacity, RefillPerSecond: p.RefillPerSecond}
	if op == OpDrain && p.HoldFor > 0 {
		w.HoldFor = p.HoldFor.String()
	}
	if op == OpSet {
		t := p.Tokens
		w.Tokens = &t
	}
	return json.Marshal(w)
}

// ErrLimits: a bucket change asked under other limits than the context's;
// it is not applied from there.
var ErrLimits = errors.New("the context's rate-limit limits differ from the request's")

func num(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// one is c's change of client.
func one(c lever.Change, client string) Change {
	op, p := opParams(c)
	return Change{Op: op, Client: client, Tokens: p.Tokens, HoldFor: p.HoldFor, always: c.Always}
}

// Check implements [lever.Kind]: the reason, the limits the change was
// asked under, and each client's change against the service's limits.
func (b *Buckets) Check(c lever.Change) error {
	if err := audit.ValidateReason(c.Reason); err != nil {
		return err
	}
	_, p := opParams(c)
	if l := b.limits; (p.Capacity != 0 || p.RefillPerSecond != 0) && (p.Capacity != l.Capacity || p.RefillPerSecond != l.RefillPerSecond) {
		return &lever.SettingError{Where: "approve it from a context with the requester's limits",
			Err: fmt.Errorf("%w: it was asked under capacity %s and refill %s/s, and this context's limits are %s and %s/s",
				ErrLimits, num(p.Capacity), num(p.RefillPerSecond), num(l.Capacity), num(l.RefillPerSecond))}
	}
	for _, client := range c.Targets {
		if err := one(c, client).Validate(b.limits); err != nil {
			return err
		}
	}
	return nil
}

// Plan implements [lever.Kind]: the bucket's level at now, and the write
// of the level asked, conditional on the bucket as read.
func (b *Buckets) Plan(c lever.Change, client string, it store.Item, now time.Time) (lever.Plan, error) {
	ch := one(c, client)
	res, next, cond := b.decide(ch, it, now)
	doc, err := json.Marshal(res.AuditBefore())
	if err != nil {
		return lever.Plan{}, err
	}
	p := lever.Plan{Target: client, Item: it, Result: res, Noop: !res.Changed, Image: doc}
	p.Write = func(st lever.Stamp) (store.Op, audit.Entry, any) {
		next.WriteID = st.Token
		return store.PutOp(next.Item(), cond), audit.Entry{Actor: c.Actor, Action: ch.Op.Action(), Subject: Key(client), Reason: c.Reason,
			Before: auditView(res.Before, res.Malformed), After: auditView(res.After, nil)}, res
	}
	return p, nil
}

// Admit implements [lever.Kind]: with [lever.Change.MustExist], a change
// of a client without a bucket is refused with the existing client it is
// likely a typo of (a *[NoBucketError], exit 3). A drain or set of one is
// refused even with no client near (it would write a bucket nobody asked
// for); a reset of one is refused only when a client is near (a missing
// bucket is full, so resetting it is truly nothing, unless the operator
// meant the near client).
func (b *Buckets) Admit(ctx context.Context, c lever.Change, plans []lever.Plan) error {
	if !c.MustExist {
		return nil
	}
	for _, p := range plans {
		res, _ := p.Result.(ChangeResult)
		if res.Before.Exists {
			continue
		}
		near, err := b.Closest(ctx, p.Target, b.segments)
		if err != nil {
			return fmt.Errorf("%s %s: no bucket, and looking for a near client failed: %w", res.Change.Op, p.Target, err)
		}
		if near == "" && res.Change.Op == OpReset {
			continue
		}
		return &NoBucketError{Op: res.Change.Op, Client: p.Target, Suggestion: near}
	}
	return nil
}

// Conflict implements [lever.Kind]: a bucket that changed on every attempt.
func (b *Buckets) Conflict(client string, _ store.Item) error {
	return fmt.Errorf("%s: %w; re-run the command", Key(client), ErrBusy)
}

// Summary implements [lever.Kind]: "drain the rate-limit bucket of a, b
// for 5m0s".
func (b *Buckets) Summary(c lever.Change) string {
	op, p := opParams(c)
	who := strings.Join(c.Targets, ", ")
	switch op {
	case OpReset:
		return "reset the rate-limit bucket of " + who
	case OpDrain:
		s := "drain the rate-limit bucket of " + who
		if p.HoldFor > 0 {
			s += " for " + p.HoldFor.String()
		}
		return s
	case OpSet:
	}
	return "set the rate-limit bucket of " + who + " to " + num(p.Tokens) + " tokens"
}

// Bounds implements [lever.Kind]: a drain's hold.
func (b *Buckets) Bounds(c lever.Change, _ time.Time) (time.Duration, bool) {
	_, p := opParams(c)
	return p.HoldFor, false
}

// Requested implements [lever.Kind]: a bucket is read afresh when an
// approved change is applied (its image shows the reviewer the level
// asked from).
func (b *Buckets) Requested(string, json.RawMessage) (store.Item, bool, error) {
	return nil, false, nil
}

// Notice implements [lever.Kind]: "drained to -30 tokens (requests refused
// for 30s)"; a bucket held below zero lapses when it admits again.
func (b *Buckets) Notice(c lever.Change, o lever.Outcome) notify.Lever {
	r, _ := o.Result.(ChangeResult)
	tokens := human.Number(r.After.Tokens)
	l := notify.Lever{Subject: Key(o.Target), AuditID: o.Record.ID}
	switch r.Change.Op {
	case OpReset:
		l.Change = "reset to " + tokens + " tokens"
	case OpDrain:
		l.Change = "drained to " + tokens + " tokens"
	default:
		l.Change = "set to " + tokens + " tokens"
	}
	if !r.After.Admit && r.After.RetryAfter > 0 {
		l.Change += fmt.Sprintf(" (requests refused for %s)", human.Age(r.After.RetryAfter))
		l.ExpiresAt = notify.Time(r.After.At.Add(r.After.RetryAfter))
	}
	return l
}

// ResultOf is a bucket change's result in an outcome.
func ResultOf(o lever.Outcome) ChangeResult {
	r, _ := o.Result.(ChangeResult)
	return r
}
