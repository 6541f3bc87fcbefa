package kinds

import (
	"context"
	"fmt"
	"time"

	"github.com/kosha-platform/koshactl/internal/bake"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/metrics"
)

// bakeSpec is a breaker.clear step's bake: after the clear (and its wait),
// watch the cleared dependency's gauges for a period and put the override
// back when its breaker re-opens on more than a share of the instances
// (internal/bake's rule, as `breaker clear --bake`). The drill's own alarm
// conditions are its stop conditions, so a step bakes on the gauges alone.
type bakeSpec struct {
	period time.Duration
	share  float64
}

func decodeBake(m *drill.Map) bakeSpec {
	b := bakeSpec{share: metrics.DefaultReopenShare}
	if d, ok := m.Duration("bake", false); ok {
		b.period = d // positive: the decoder's rule for a duration
	}
	if f, ok := m.Float("reopen_share", false); ok {
		switch {
		case b.period <= 0:
			m.Errorf("reopen_share", "reopen_share only applies with bake: add bake, or drop reopen_share")
		case f < 0 || f >= 1:
			m.Errorf("reopen_share", "reopen_share %v is not a share from 0 up to (not including) 1: 0.5 puts back when most instances re-open", f)
		}
		b.share = f
	}
	return b
}

func (b bakeSpec) describe() string {
	if b.period <= 0 {
		return ""
	}
	return ", then bake " + human.Duration(b.period)
}

// check refuses, before the clear, a bake the run cannot finish (past the
// drill's deadline) or judge (no metrics source).
func (b bakeSpec) check(rc *runtime.RunContext) error {
	if b.period <= 0 {
		return nil
	}
	if _, ok := runtime.SourcerOf(rc.Deps.Gauges); !ok {
		return runtime.NeedService(false, "metrics source to bake on (set metrics_url, or run with the context's metrics)")
	}
	if left := rc.Remaining(); b.period > left {
		return fmt.Errorf("bake %s is longer than the %s left before the drill's deadline: shorten it, or the drill's timeout", human.Duration(b.period), human.Duration(left))
	}
	return nil
}

// run bakes the clear o of the lever l, written at since: held, the step
// says so; not held, the override is put back (the drill's lever then
// holds the put-back, so its rollback undoes it) and the step fails with
// bake.Err's error.
func (b bakeSpec) run(ctx context.Context, rc *runtime.RunContext, out *runtime.Outputs, l *runtime.Lever, o lever.Outcome, since time.Time) error {
	if b.period <= 0 {
		return nil
	}
	gs, _ := runtime.SourcerOf(rc.Deps.Gauges)
	src, err := gs.Source(ctx)
	if err != nil {
		return fmt.Errorf("bake: %w", err)
	}
	dep := o.Target
	w := &bake.Watch{Gauges: src, Clock: rc.Clock(), Share: b.share}
	res := w.Run(ctx, []string{dep}, since, b.period)
	puts := bake.Rollback(context.WithoutCancel(ctx), rc.Levers(), rc.Deps.Actor, res,
		[]bake.Cleared{{Dependency: dep, Record: o.Record, Before: *breaker.ClearResultOf(o).Before}})
	for _, p := range puts {
		if r := p.Result.Restored; r != nil && p.Record.ID != "" {
			rc.Recorded(p.Record)
			// Loud, in the run's live log as the CLI's capitals are.
			rc.Notify("ROLLED BACK %s: the bake failed (%s); its override is forced open again (record %s, rollback of %s)",
				dep, res.Why, p.Record.ID, o.Record.ID)
			if l != nil {
				l.SetWritten(overrideWrite{change: p.Token, after: r}, r.ExpiresAt)
			}
		}
	}
	out.Set("baked", res.Verdict.String())
	out.Detail = joinDetail(out.Detail, rc.Redact(res.Why))
	return bake.Err(res, puts)
}

func joinDetail(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
