package kinds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/store"
)

// The bucket lever: a client's rate-limit bucket (rl#CLIENT), moved by
// ratelimit.drain, reset and set. This file holds all of it: the three
// kinds, their plan, the rollback (a run's and drill recover's: the same
// restore of the level before the drill), its journal record, and its
// rebuilding from the audit trail.

// rateLimitDrainKind is the ratelimit.drain step: empty a client's bucket
// so its next requests get 429s.
//
//	ratelimit.drain:
//	  client: drill-client   # required
//	  for: 30s               # keep it refused this long (at most 1h), bounded by the deadline
//	  reason: flood drill
//
// With for, the bucket is written with negative tokens that the data
// plane's refill brings back to zero after that long, so the client
// recovers on its own even if koshactl is killed. Rollback restores the
// level the bucket had before the drill.
var rateLimitDrainKind = bucketKind("ratelimit.drain", "empty a client's bucket (optionally held for a while); rollback restores its level",
	decodeDrain)

func decodeDrain(d *drill.Decoder, n *yaml.Node) drill.Spec {
	return decodeBucketStep(d, n, ratelimit.OpDrain, func(m *drill.Map, a *bucketStep) bool {
		hold, present := m.Duration("for", false)
		if present && ratelimit.CheckDrainHold(hold) != nil {
			m.Errorf("for", "%s is longer than the %s a drain may hold", hold, ratelimit.MaxDrainHold)
			return false
		}
		a.hold = hold
		return true
	}, "for")
}

// rateLimitResetKind is the ratelimit.reset step: refill a client's bucket
// to capacity, so its next requests are admitted.
//
//	ratelimit.reset:
//	  client: drill-client   # required
//	  reason: end of flood
//
// After a drain in the same drill it registers no new rollback: the
// drain's rollback restores the level from before the drill.
var rateLimitResetKind = bucketKind("ratelimit.reset", "refill a client's bucket to capacity; rollback restores its level", decodeReset)

func decodeReset(d *drill.Decoder, n *yaml.Node) drill.Spec {
	return decodeBucketStep(d, n, ratelimit.OpReset, nil)
}

// rateLimitSetKind is the ratelimit.set step: write an exact token count.
//
//	ratelimit.set:
//	  client: drill-client   # required
//	  tokens: 3              # required, 0 to the bucket's capacity
var rateLimitSetKind = bucketKind("ratelimit.set", "set a client's bucket to N tokens; rollback restores its level", decodeSet)

// bucketKind is a step kind that moves a rate-limit bucket.
func bucketKind(name, summary string, decode decodeFunc) leverKind {
	return leverKind{stepKind{name: name, summary: summary, outputs: bucketOutputs, decode: decode}, drill.LeverBucket}
}

func decodeSet(d *drill.Decoder, n *yaml.Node) drill.Spec {
	return decodeBucketStep(d, n, ratelimit.OpSet, func(m *drill.Map, a *bucketStep) bool {
		tokens, ok := m.Float("tokens", true)
		if ok && tokens < 0 {
			m.Errorf("tokens", "%g is negative: give 0 to the capacity (to hold a client refused, use ratelimit.drain with for)", tokens)
			ok = false
		}
		a.tokens = tokens
		return ok
	}, "tokens")
}

// bucketRollback restores a client's bucket to what it would hold now had
// the drill never touched it: the level read before the drill's first
// change, refilled by the time since at the bucket's rate. A bucket that
// had no item (full) is reset; one that was under a timed drain is drained
// again for what is left of it.
type bucketRollback struct{ leverUndo }

var (
	_ runtime.Rollback = (*bucketRollback)(nil)
)

func (r *bucketRollback) Describe() string {
	return fmt.Sprintf("restore the bucket of %s to its level before the drill (refilled since)", r.target)
}

// restoreChange returns the change that puts the bucket back at the level
// before describes, at now.
func restoreChange(client string, before ratelimit.Status, l ratelimit.Limits, now time.Time) (ratelimit.Change, float64) {
	level := l.Capacity
	if before.Exists {
		level = l.Refill(before.Stored.Tokens, before.Stored.UpdatedAtMs, now.UnixMilli())
	}
	level = math.Round(level*1e6) / 1e6
	switch {
	case level >= l.Capacity:
		return ratelimit.Change{Op: ratelimit.OpReset, Client: client}, l.Capacity
	case level >= 0:
		return ratelimit.Change{Op: ratelimit.OpSet, Client: client, Tokens: level}, level
	}
	hold := time.Duration(math.Ceil(-level / l.RefillPerSecond * float64(time.Second)))
	return ratelimit.Change{Op: ratelimit.OpDrain, Client: client, HoldFor: ratelimit.ClampDrainHold(hold)}, level
}

func (r *bucketRollback) Undo(ctx context.Context, rc *runtime.RunContext) (string, error) {
	b, err := buckets(rc)
	if err != nil {
		return "", err
	}
	before, _ := r.lever.Before.(ratelimit.Status)
	c, level := restoreChange(r.target, before, b.Limits(), rc.Now())
	res, o, err := changeBucket(ctx, rc, b, rc.Reason("rollback"), c)
	if err != nil {
		return "", err
	}
	if !res.Changed {
		return fmt.Sprintf("already at %s tokens", human.Number(level)), nil
	}
	rc.Recorded(o.Record)
	return fmt.Sprintf("restored to %s tokens (%s)", human.Number(level), c.Op) + confirmed(o.Confirmed), nil
}

// buckets is the context's bucket lever kind.
func buckets(rc *runtime.RunContext) (*ratelimit.Buckets, error) {
	return runtime.Kind[*ratelimit.Buckets](rc.Deps, ratelimit.Spec.Name)
}

// changeBucket makes c with its record, quietly (the run announces
// itself): the bucket lever's change of one client, decided on the bucket
// read here, and read and decided again while takes land in between.
func changeBucket(ctx context.Context, rc *runtime.RunContext, b *ratelimit.Buckets, reason string, c ratelimit.Change) (ratelimit.ChangeResult, lever.Outcome, error) {
	it, err := b.Item(ctx, c.Client)
	if err != nil {
		return ratelimit.ChangeResult{Change: c}, lever.Outcome{}, err
	}
	o, err := changeOne(ctx, rc, b.Change(c.Op, reason, ratelimit.Params{Tokens: c.Tokens, HoldFor: c.HoldFor}, c.Client), it)
	if o == nil {
		return ratelimit.ChangeResult{Change: c}, lever.Outcome{}, err
	}
	return ratelimit.ResultOf(*o), *o, err
}

// LeverRecord implements Rollback.
func (r *bucketRollback) LeverRecord() *drill.LeverRecord {
	rec := &drill.LeverRecord{Kind: drill.LeverBucket, Client: r.target, Inverse: "restore-level"}
	if b, ok := r.lever.Before.(ratelimit.Status); ok {
		rec.BeforeBucket = &drill.BucketState{Exists: b.Exists, Tokens: b.Stored.Tokens, UpdatedAtMs: b.Stored.UpdatedAtMs}
	}
	return rec
}

// bucketStep is what ratelimit.drain, reset and set share: the client, the
// lever and its rollback, the audited change, and the outputs.
type bucketStep struct {
	op     ratelimit.Op
	client drill.Template
	reason drill.Template
	tokens float64
	hold   time.Duration
}

var _ runtime.Mutating = (*bucketStep)(nil)

// decodeBucketStep decodes a step of op: the client and reason every
// bucket step has, and with more (nil: none) the fields only op has, more
// saying whether they are usable.
func decodeBucketStep(d *drill.Decoder, n *yaml.Node, op ratelimit.Op, more func(*drill.Map, *bucketStep) bool, fields ...string) drill.Spec {
	m := d.Fields(n, "ratelimit."+op.String(), append([]string{"client", "reason"}, fields...)...)
	if m == nil {
		return nil
	}
	a := &bucketStep{op: op}
	var ok bool
	a.client, ok = decodeClient(m)
	a.reason, _ = m.Template("reason", false)
	if more != nil && !more(m, a) || !ok {
		return nil
	}
	return a
}

// Plan implements Mutating.
func (a *bucketStep) Plan(rc *runtime.RunContext) *runtime.PlanLever {
	l := &runtime.PlanLever{Subject: ratelimit.Key(rc.Describe(a.client)), Inverse: "set the bucket back to its level before the drill, refilled since",
		Action: a.op.Action(), Target: policyTarget(rc, a.client)}
	oneToken := time.Second
	if b, err := buckets(rc); err == nil && b.Limits().RefillPerSecond > 0 {
		oneToken = time.Duration(float64(time.Second) / b.Limits().RefillPerSecond)
	}
	switch {
	case a.op == ratelimit.OpDrain && a.hold > 0:
		hold := max(min(a.hold, rc.Drill.Timeout-oneToken), 0)
		l.ExpiresWithinSeconds = drill.Seconds(hold + oneToken)
		l.Expiry = fmt.Sprintf("refused for min(for %s, the deadline less one refill interval %s); the next token one refill interval later", a.hold, oneToken)
	case a.op == ratelimit.OpDrain:
		l.ExpiresWithinSeconds = drill.Seconds(oneToken)
		l.Expiry = fmt.Sprintf("tokens 0: the next token arrives after one refill interval (%s)", oneToken)
	default:
		l.Expiry = "the bucket refills on its own at its rate"
	}
	return l
}

func (a *bucketStep) Describe(rc *runtime.RunContext) string {
	client := rc.Describe(a.client)
	switch a.op {
	case ratelimit.OpDrain:
		if a.hold > 0 {
			return fmt.Sprintf("drain the bucket of %s and hold it for %s", client, human.Duration(a.hold))
		}
		return fmt.Sprintf("drain the bucket of %s", client)
	case ratelimit.OpSet:
		return fmt.Sprintf("set the bucket of %s to %s tokens", client, human.Number(a.tokens))
	default:
		return fmt.Sprintf("reset the bucket of %s to capacity", client)
	}
}

// lever is the step's client, checked, and its bucket's lever when a step
// moved it already.
func (a *bucketStep) lever(rc *runtime.RunContext) (string, *runtime.Lever, error) {
	return storeTarget(rc, a.client, ratelimit.Key, ratelimit.ValidateClientID)
}

func (a *bucketStep) Prepare(ctx context.Context, rc *runtime.RunContext) (runtime.Rollback, error) {
	b, err := buckets(rc)
	if err != nil {
		return nil, err
	}
	client, moved, err := a.lever(rc)
	if err != nil || moved != nil {
		return nil, err
	}
	st, err := b.Get(ctx, client)
	if err != nil {
		return nil, err
	}
	l := rc.NewLever(ratelimit.Key(client), st)
	return &bucketRollback{leverUndo{client, l}}, nil
}

func (a *bucketStep) Run(ctx context.Context, rc *runtime.RunContext) (*runtime.Outputs, error) {
	b, err := buckets(rc)
	if err != nil {
		return nil, err
	}
	client, l, err := a.lever(rc)
	if err != nil {
		return nil, err
	}
	reason, err := stepReason(rc, a.reason)
	if err != nil {
		return nil, err
	}
	c := ratelimit.Change{Op: a.op, Client: client, Tokens: a.tokens}
	if a.op == ratelimit.OpDrain && a.hold > 0 {
		// Refused for at most the time left: the client's next token
		// arrives one refill interval after the hold, by the deadline.
		oneToken := time.Duration(float64(time.Second) / b.Limits().RefillPerSecond)
		c.HoldFor = max(min(a.hold, rc.Remaining()-oneToken), 0).Truncate(time.Millisecond)
	}
	res, o, err := changeBucket(ctx, rc, b, rc.Reason(reason), c)
	if l != nil && res.Changed && (err == nil || errors.Is(err, store.ErrOutcomeUnknown)) {
		l.SetWritten(res.After, rc.Now().Add(res.After.RetryAfter))
	}
	if err != nil {
		return nil, err
	}
	if res.Changed {
		rc.Recorded(o.Record)
	}
	out := runtime.NewOutputs().Set("client", client).
		Set("tokens_before", human.Number(res.Before.Tokens)).
		Set("tokens_after", human.Number(res.After.Tokens)).
		Set("admit", strconv.FormatBool(res.After.Admit)).
		Set("retry_after_seconds", strconv.FormatFloat(res.After.RetryAfter.Seconds(), 'f', -1, 64)).
		Set("changed", strconv.FormatBool(res.Changed))
	switch {
	case !res.Changed:
		out.Detail = fmt.Sprintf("already at %s tokens: nothing written", human.Number(res.Before.Tokens))
	case res.After.Admit:
		out.Detail = fmt.Sprintf("%s → %s tokens, admitted", human.Number(res.Before.Tokens), human.Number(res.After.Tokens))
	default:
		out.Detail = fmt.Sprintf("%s → %s tokens, refused for %s", human.Number(res.Before.Tokens), human.Number(res.After.Tokens), human.Duration(drill.DisplayPrecision(res.After.RetryAfter)))
	}
	out.Detail += confirmed(o.Confirmed)
	return out, nil
}

var bucketOutputs = []string{"client", "tokens_before", "tokens_after", "admit", "retry_after_seconds", "changed"}

func recoverBucket(in RecoverInput) (runtime.Rollback, []string, error) {
	rec, l := in.Record, in.Record.Lever
	subject := LeverSubject(l)
	trail := orderTrail(runRecords(in.Trail, in.RunID, subject, ratelimit.ActionReset, ratelimit.ActionDrain, ratelimit.ActionSet), bucketLink)
	if len(trail) == 0 {
		// A bucket change that changed nothing is not recorded (a reset
		// of a full bucket): nothing to undo, whatever the journal says.
		return unrecorded(subject, in.RunID), nil, nil
	}
	var lines []string
	if first := trail[0]; first.Actor != in.Actor {
		lines = append(lines, disagree(rec, subject, "the journal names the run's actor %q, but the audit trail records run %s's first change to it by %q", in.Actor, in.RunID, first.Actor))
	}
	var v ratelimit.AuditView
	if err := json.Unmarshal(trail[0].Before, &v); err != nil {
		return nil, append(lines, disagree(rec, subject, "the audit record %s of run %s cannot be read: %v", trail[0].ID, in.RunID, err)), nil
	}
	if b := l.BeforeBucket; b != nil && (b.Exists != v.Exists || b.Tokens != v.Tokens || b.UpdatedAtMs != v.UpdatedAtMs) {
		lines = append(lines, disagree(rec, subject, "the journal's bucket before the drill (exists %v, %v tokens at %d ms) differs from the audit trail's (exists %v, %v tokens at %d ms)",
			b.Exists, b.Tokens, b.UpdatedAtMs, v.Exists, v.Tokens, v.UpdatedAtMs))
	}
	if len(lines) > 0 {
		return nil, lines, nil
	}
	if v.Malformed != "" {
		return nil, nil, fmt.Errorf("rollback %s: the bucket of %s was malformed before the drill (%s): set it by hand", rec.ID, l.Client, v.Malformed)
	}
	var before ratelimit.Status
	if v.Exists {
		before = ratelimit.Status{Client: l.Client, Exists: true, Stored: ratelimit.Bucket{Client: l.Client, Tokens: v.Tokens, UpdatedAtMs: v.UpdatedAtMs}}
	}
	return &bucketRollback{leverUndo{l.Client, &runtime.Lever{Subject: subject, Before: before}}}, nil, nil
}

// bucketLink keys a bucket record by the stored level before and after.
func bucketLink(r audit.Record) link {
	key := func(doc json.RawMessage) string {
		var v ratelimit.AuditView
		if json.Unmarshal(doc, &v) != nil || !v.Exists {
			return ""
		}
		return fmt.Sprintf("%v@%d", v.Tokens, v.UpdatedAtMs)
	}
	return link{before: key(r.Before), after: key(r.After)}
}
