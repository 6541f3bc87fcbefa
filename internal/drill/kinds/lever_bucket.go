package kinds

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/store"
)

// bucketRollback restores a client's bucket to what it would hold now had
// the drill never touched it: the level read before the drill's first
// change, refilled by the time since at the bucket's rate. A bucket that
// had no item (full) is reset; one that was under a timed drain is drained
// again for what is left of it.
type bucketRollback struct {
	client string
	lever  *drill.Lever
}

var (
	_ drill.Rollback = (*bucketRollback)(nil)
)

func (r *bucketRollback) Subject() string { return ratelimit.Key(r.client) }

func (r *bucketRollback) Describe() string {
	return fmt.Sprintf("restore the bucket of %s to its level before the drill (refilled since)", r.client)
}

func (r *bucketRollback) ExpiresAt() time.Time { return r.lever.ExpiresAt() }

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

func (r *bucketRollback) Undo(ctx context.Context, rc *drill.RunContext) (string, error) {
	svc := rc.Deps
	if err := drill.NeedService(svc.Buckets != nil && svc.Audit != nil, "store"); err != nil {
		return "", err
	}
	before, _ := r.lever.Before.(ratelimit.Status)
	c, level := restoreChange(r.client, before, svc.Buckets.Limits(), rc.Now())
	res, rec, err := svc.Buckets.ApplyAudited(ctx, rc.Audit(), svc.Actor, rc.Reason("rollback"), c)
	if err != nil {
		return "", err
	}
	if !res.Changed {
		return fmt.Sprintf("already at %s tokens", human.Number(level)), nil
	}
	rc.Recorded(rec)
	return fmt.Sprintf("restored to %s tokens (%s)", human.Number(level), c.Op) + confirmed(res.Confirmed), nil
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

var _ drill.Mutating = (*bucketStep)(nil)

func decodeBucketStep(d *drill.Decoder, n *yaml.Node, op ratelimit.Op, fields ...string) (*bucketStep, *drill.Map) {
	what := "ratelimit." + op.String()
	m := d.Map(n, what)
	if m == nil {
		return nil, nil
	}
	m.RejectUnknown(append([]string{"client", "reason"}, fields...)...)
	a := &bucketStep{op: op}
	var ok bool
	a.client, ok = m.Template("client", true)
	if ok {
		if s, static := a.client.Static(); static {
			if err := ratelimit.ValidateClientID(s); err != nil {
				m.Errorf("client", "%v", err)
				ok = false
			}
		}
	}
	a.reason, _ = m.Template("reason", false)
	if !ok {
		return nil, m
	}
	return a, m
}

func (a *bucketStep) Describe(rc *drill.RunContext) string {
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

func (a *bucketStep) clientID(rc *drill.RunContext) (string, error) {
	c, err := rc.Expand(a.client)
	if err != nil {
		return "", err
	}
	return c, ratelimit.ValidateClientID(c)
}

func (a *bucketStep) Prepare(ctx context.Context, rc *drill.RunContext) (drill.Rollback, error) {
	svc := rc.Deps
	if err := drill.NeedService(svc.Buckets != nil && svc.Audit != nil, "store"); err != nil {
		return nil, err
	}
	client, err := a.clientID(rc)
	if err != nil {
		return nil, err
	}
	if _, moved := rc.Lever(ratelimit.Key(client)); moved {
		return nil, nil
	}
	st, err := svc.Buckets.Get(ctx, client)
	if err != nil {
		return nil, err
	}
	l := rc.NewLever(ratelimit.Key(client), st)
	return &bucketRollback{client: client, lever: l}, nil
}

func (a *bucketStep) Run(ctx context.Context, rc *drill.RunContext) (*drill.Outputs, error) {
	svc := rc.Deps
	client, err := a.clientID(rc)
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
		oneToken := time.Duration(float64(time.Second) / svc.Buckets.Limits().RefillPerSecond)
		c.HoldFor = max(min(a.hold, rc.Remaining()-oneToken), 0).Truncate(time.Millisecond)
	}
	res, rec, err := svc.Buckets.ApplyAudited(ctx, rc.Audit(), svc.Actor, rc.Reason(reason), c)
	if l, ok := rc.Lever(ratelimit.Key(client)); ok && res.Changed && (err == nil || errors.Is(err, store.ErrOutcomeUnknown)) {
		l.SetWritten(res.After, rc.Now().Add(res.After.RetryAfter))
	}
	if err != nil {
		return nil, err
	}
	if res.Changed {
		rc.Recorded(rec)
	}
	out := drill.NewOutputs().Set("client", client).
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
	out.Detail += confirmed(res.Confirmed)
	return out, nil
}

// confirmed is the note a change whose first answer was lost carries.
func confirmed(c bool) string {
	if !c {
		return ""
	}
	return " (" + store.ConfirmedNote + ")"
}

var bucketOutputs = []string{"client", "tokens_before", "tokens_after", "admit", "retry_after_seconds", "changed"}
