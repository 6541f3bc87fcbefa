package approval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/policy"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// The bucket levers' changes (ratelimit reset, drain, set). Unlike an
// override, a bucket moves with every request the client sends, so a bucket
// change is not conditional on the level read when it was requested: it
// writes a level (full, empty or held below zero, N tokens), conditional on
// the bucket as the approval reads it, like any bucket change. Its Before
// shows the reviewer each bucket as it was when the change was requested.
// The level depends on the context's limits (capacity, refill rate): the
// change holds those it was requested under, and an approver whose context
// has others cannot apply it.

// bucketOps are the bucket levers' actions and their operations.
var bucketOps = map[string]ratelimit.Op{
	policy.ActionRateLimitReset: ratelimit.OpReset,
	policy.ActionRateLimitDrain: ratelimit.OpDrain,
	policy.ActionRateLimitSet:   ratelimit.OpSet,
}

// IsBucketAction reports whether action is a bucket lever's.
func IsBucketAction(action string) bool {
	_, ok := bucketOps[action]
	return ok
}

// BucketChange builds the change of bucket operations (one op, distinct
// clients) from their plans as read: the buckets the change writes, under
// limits l.
func BucketChange(reason string, l ratelimit.Limits, plans []ratelimit.ChangeResult) (Change, error) {
	if len(plans) == 0 {
		return Change{}, fmt.Errorf("no bucket to change")
	}
	l = l.WithDefaults()
	first := plans[0].Change
	c := Change{Action: first.Op.Action(), Reason: reason, Before: map[string]json.RawMessage{},
		Capacity: l.Capacity, RefillPerSecond: l.RefillPerSecond}
	switch first.Op {
	case ratelimit.OpSet:
		tokens := first.Tokens
		c.Tokens = &tokens
	case ratelimit.OpDrain:
		if first.HoldFor > 0 {
			c.HoldFor = first.HoldFor.String()
		}
	case ratelimit.OpReset:
	}
	for _, p := range plans {
		if !p.Changed {
			continue
		}
		doc, err := json.Marshal(p.AuditBefore())
		if err != nil {
			return Change{}, err
		}
		c.Targets = append(c.Targets, p.Change.Client)
		c.Before[p.Change.Client] = doc
	}
	return c, nil
}

// bucketChanges are c's bucket operations, checked against limits l (the
// approver's context's).
func (r Request) bucketChanges(l ratelimit.Limits) ([]ratelimit.Change, error) {
	c := r.Change
	op := bucketOps[c.Action]
	if l = l.WithDefaults(); c.Capacity != l.Capacity || c.RefillPerSecond != l.RefillPerSecond {
		return nil, fmt.Errorf("%w: request %s was made under capacity %s and refill %s/s, and this context's limits are %s and %s/s: approve it from a context with the requester's limits (context %s)",
			ErrLimits, r.ID, num(c.Capacity), num(c.RefillPerSecond), num(l.Capacity), num(l.RefillPerSecond), textsafe.Quote(r.Context))
	}
	var hold time.Duration
	if c.HoldFor != "" {
		d, err := time.ParseDuration(c.HoldFor)
		if err != nil {
			return nil, fmt.Errorf("%w: request %s: hold_for %s: %v", ErrMalformed, r.ID, textsafe.Quote(c.HoldFor), err)
		}
		hold = d
	}
	out := make([]ratelimit.Change, len(c.Targets))
	for i, client := range c.Targets {
		ch := ratelimit.Change{Op: op, Client: client, HoldFor: hold}
		if op == ratelimit.OpSet {
			if c.Tokens == nil {
				return nil, fmt.Errorf("%w: request %s sets tokens without a count", ErrMalformed, r.ID)
			}
			ch.Tokens = *c.Tokens
		}
		if err := ch.Validate(l); err != nil {
			return nil, fmt.Errorf("%w: request %s: %v", ErrMalformed, r.ID, err)
		}
		out[i] = ch
	}
	return out, nil
}

// ErrLimits: a bucket change requested under other limits than the
// approver's context has; it is not applied from there.
var ErrLimits = errors.New("the context's rate-limit limits differ from the request's")

func num(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// BucketAttach is a as the bucket levers take it.
func BucketAttach(a *breaker.Attach) *ratelimit.Attach {
	if a == nil {
		return nil
	}
	return &ratelimit.Attach{Approval: a.Approval, Actor: a.Actor, ActorSource: a.ActorSource, Ops: a.Ops, Refused: a.Refused,
		Note: ratelimit.Note(a.Note)}
}

// applyBuckets writes r's bucket change with attach through the bucket
// levers.
func (s *Service) applyBuckets(ctx context.Context, log audit.Appender, r Request, attach *breaker.Attach, res Approved) (Approved, error) {
	if s.buckets == nil {
		return res, fmt.Errorf("request %s changes rate-limit buckets, and this context has no bucket limits koshactl can use: fix its ratelimit settings (koshactl config set-context)", r.ID)
	}
	changes, err := r.bucketChanges(s.buckets.Limits())
	if err != nil {
		return res, err
	}
	requester := r.Requester
	// The approval is announced as one event by its caller.
	res.Buckets, err = s.buckets.WithLog(log).ApplyAll(ctx, ratelimit.ApplyAll{Changes: changes, Reason: r.Change.Reason,
		Actor: func(context.Context) (string, error) { return requester, nil }, Attach: BucketAttach(attach), NoNotify: true})
	for _, o := range res.Buckets {
		if o.Written {
			res.Records = append(res.Records, o.Record)
		}
	}
	return res, err
}

// bucketSummary says a bucket change in a few words.
func bucketSummary(c Change) string {
	who := strings.Join(c.Targets, ", ")
	switch c.Action {
	case policy.ActionRateLimitReset:
		return "reset the rate-limit bucket of " + who
	case policy.ActionRateLimitDrain:
		s := "drain the rate-limit bucket of " + who
		if c.HoldFor != "" {
			s += " for " + c.HoldFor
		}
		return s
	}
	n := "?"
	if c.Tokens != nil {
		n = num(*c.Tokens)
	}
	return "set the rate-limit bucket of " + who + " to " + n + " tokens"
}
