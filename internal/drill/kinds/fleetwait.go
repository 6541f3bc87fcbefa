package kinds

import (
	"context"
	"fmt"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/metrics"
)

// waitFleet waits until the gauges confirm c, within the source's bound plus
// a margin, bounded by the drill's deadline. It returns the words for the
// step's detail; not confirmed is the step's failure (the lever is already
// recorded, so the rollback runs).
func waitFleet(ctx context.Context, rc *drill.RunContext, c metrics.Change) (string, error) {
	gauges := rc.Deps.Gauges
	for {
		// The runner wraps the reader to journal what the conditions read.
		w, ok := gauges.(interface{ Unwrap() drill.GaugeReader })
		if !ok {
			break
		}
		gauges = w.Unwrap()
	}
	gs, ok := gauges.(drill.GaugeSourcer)
	if !ok || gauges == nil {
		return "", drill.NeedService(false, "metrics source to wait on (set metrics_url, or run with the context's metrics)")
	}
	src, err := gs.Source(ctx)
	if err != nil {
		return "", fmt.Errorf("wait for the fleet: %w", err)
	}
	timeout := metrics.DefaultWaitTimeout(metrics.LagOf(src))
	if left := rc.Remaining(); left < timeout {
		timeout = left
	}
	w := &metrics.Waiter{Gauges: src, Clock: rc.Clock(), Timeout: timeout}
	res, err := w.Wait(ctx, []metrics.Change{c})
	cv := res.Convergences[0]
	if err != nil {
		return "", fmt.Errorf("the fleet did not confirm %s %s within %s: %s", c.Dependency, c.Goal, human.Duration(timeout), cv.Summary())
	}
	return fmt.Sprintf("fleet confirmed: %s after %s", cv.Summary(), human.Duration(cv.Elapsed)), nil
}
