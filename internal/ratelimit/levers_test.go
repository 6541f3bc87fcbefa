package ratelimit_test

import (
	"context"
	"testing"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
)

// buckets is a Buckets and the lever service moving them on the same
// store, recording in log: what these tests change buckets through.
type buckets struct {
	*ratelimit.Buckets
	s   ratelimit.ListStore
	clk clock.Clock
	log audit.Appender
}

func newBuckets(t *testing.T, s ratelimit.ListStore, clk clock.Clock) buckets {
	t.Helper()
	b, err := ratelimit.NewBuckets(s, clk, ratelimit.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return buckets{Buckets: b, s: s, clk: clk}
}

// WithLog is b recording in log.
func (b buckets) WithLog(log audit.Appender) buckets {
	b.log = log
	return b
}

func (b buckets) svc() *lever.Service {
	return lever.NewService(b.s, b.clk, lever.NewRegistry(lever.Entry{Spec: ratelimit.Spec, New: func() (lever.Kind, error) { return b.Buckets, nil }})).
		WithLog(b.log)
}

// applyAll is one operation on several buckets, as these tests ask it.
type applyAll struct {
	Changes []ratelimit.Change
	Reason  string
	Actor   func(ctx context.Context) (string, error)
	DryRun  bool
	// Confirm sees the plans and how many buckets will be written, only
	// when some will.
	Confirm  func(plans []ratelimit.ChangeResult, writes int) error
	Existing bool
	NoNotify bool
	// Chunked asks for a change of more buckets than one transaction
	// holds in chunks (lever.Change.Chunked); without it it is refused.
	Chunked bool
}

// applied is a change's result with how it was written.
type applied struct {
	ratelimit.ChangeResult
	Attempts  int
	Confirmed bool
	WriteID   string
}

// outcome is what became of one change of an applyAll.
type outcome struct {
	Result  applied
	Record  audit.Record
	Written bool
	Unknown bool
	Err     error
}

func (b buckets) change(op applyAll) lever.Change {
	var o ratelimit.Op
	var p ratelimit.Params
	var clients []string
	for _, c := range op.Changes {
		o, p = c.Op, ratelimit.Params{Tokens: c.Tokens, HoldFor: c.HoldFor}
		clients = append(clients, c.Client)
	}
	c := b.Change(o, op.Reason, p, clients...)
	c.DryRun, c.MustExist, c.NoNotify, c.Chunked = op.DryRun, op.Existing, op.NoNotify, op.Chunked
	return c
}

// Report makes op, and says what it did.
func (b buckets) Report(ctx context.Context, op applyAll) (lever.Report, error) {
	svc := b.svc()
	if op.Actor != nil {
		svc = svc.WithActor(op.Actor)
	}
	return lever.Do(ctx, svc, b.change(op), func(p *lever.Planned) error {
		if op.Confirm == nil || p.Writes() == 0 {
			return nil
		}
		plans := make([]ratelimit.ChangeResult, len(p.Plans))
		for i, pl := range p.Plans {
			plans[i] = pl.Result.(ratelimit.ChangeResult)
		}
		return op.Confirm(plans, p.Writes())
	})
}

// ApplyAll makes op: one outcome per change, in order.
func (b buckets) ApplyAll(ctx context.Context, op applyAll) ([]outcome, error) {
	rep, err := b.Report(ctx, op)
	var outs []outcome
	for _, o := range rep.Outcomes {
		outs = append(outs, outcome{Result: applied{ChangeResult: ratelimit.ResultOf(o), Attempts: o.Attempts, Confirmed: o.Confirmed, WriteID: o.Token},
			Record: o.Record, Written: o.Written, Unknown: o.Unknown(), Err: o.Err})
	}
	return outs, err
}

// ApplyAudited makes one change as actor, with its record.
func (b buckets) ApplyAudited(ctx context.Context, actor, reason string, c ratelimit.Change) (applied, audit.Record, error) {
	outs, err := b.ApplyAll(ctx, applyAll{Changes: []ratelimit.Change{c}, Reason: reason,
		Actor: func(context.Context) (string, error) { return actor, nil }})
	if len(outs) == 0 {
		return applied{ChangeResult: ratelimit.ChangeResult{Change: c}}, audit.Record{}, err
	}
	return outs[0].Result, outs[0].Record, err
}

// Plan is what c would do now, writing nothing.
func (b buckets) Plan(ctx context.Context, c ratelimit.Change) (applied, error) {
	outs, err := b.ApplyAll(ctx, applyAll{Changes: []ratelimit.Change{c}, DryRun: true})
	if len(outs) == 0 {
		return applied{ChangeResult: ratelimit.ChangeResult{Change: c}}, err
	}
	return outs[0].Result, err
}
