package drill

import (
	"context"
	"fmt"

	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/metrics"
)

// GaugeSourcer is implemented by a [GaugeReader] that can hand out the
// metrics source it reads ([MetricsGauges] does): the breaker steps' wait
// option polls it with metrics.Waiter, the rule and bound of `koshactl
// breaker force-open --wait`.
type GaugeSourcer interface {
	Source(ctx context.Context) (metrics.GaugeSource, error)
}

var _ GaugeSourcer = (*MetricsGauges)(nil)

// Source implements GaugeSourcer.
func (g *MetricsGauges) Source(ctx context.Context) (metrics.GaugeSource, error) { return g.New(ctx) }

// waitFleet waits until the gauges confirm c, within the source's bound plus
// a margin, bounded by the drill's deadline. It returns the words for the
// step's detail; not confirmed is the step's failure (the lever is already
// recorded, so the rollback runs).
func waitFleet(ctx context.Context, rc *RunContext, c metrics.Change) (string, error) {
	gs, ok := rc.Deps.Gauges.(GaugeSourcer)
	if !ok || rc.Deps.Gauges == nil {
		return "", need(false, "metrics source to wait on (set metrics_url, or run with the context's metrics)")
	}
	src, err := gs.Source(ctx)
	if err != nil {
		return "", fmt.Errorf("wait for the fleet: %w", err)
	}
	timeout := metrics.DefaultWaitTimeout(metrics.LagOf(src))
	if left := rc.Remaining(); left < timeout {
		timeout = left
	}
	w := &metrics.Waiter{Gauges: src, Clock: rc.clock, Timeout: timeout}
	res, err := w.Wait(ctx, []metrics.Change{c})
	cv := res.Convergences[0]
	if err != nil {
		return "", fmt.Errorf("the fleet did not confirm %s %s within %s: %s", c.Dependency, c.Goal, human.Duration(timeout), cv.Summary())
	}
	return fmt.Sprintf("fleet confirmed: %s after %s", cv.Summary(), human.Duration(cv.Elapsed)), nil
}
