package kinds

import (
	"context"
	"fmt"
	"strings"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/metrics"
)

// waitFleet waits until the gauges confirm c, within the source's bound plus
// a margin, bounded by the drill's deadline. It adds what was confirmed to
// out's detail and the journal's record of it to out; not confirmed is the
// step's failure, a *runtime.FleetError carrying the record (the lever is
// already recorded, so the rollback runs).
func waitFleet(ctx context.Context, rc *runtime.RunContext, out *runtime.Outputs, c metrics.Change) error {
	gs, ok := runtime.SourcerOf(rc.Deps.Gauges)
	if !ok {
		return runtime.NeedService(false, "metrics source to wait on (set metrics_url, or run with the context's metrics)")
	}
	src, err := gs.Source(ctx)
	if err != nil {
		return fmt.Errorf("wait for the fleet: %w", err)
	}
	timeout := metrics.DefaultWaitTimeout(metrics.LagOf(src))
	if left := rc.Remaining(); left < timeout {
		timeout = left
	}
	w := &metrics.Waiter{Gauges: src, Clock: rc.Clock(), Timeout: timeout}
	res, err := w.Wait(ctx, []metrics.Change{c})
	cv := res.Convergences[0]
	rec := &drill.FleetRecord{Dependency: c.Dependency, Goal: c.Goal.String(), Confirmed: err == nil, Summary: rc.Redact(cv.Summary()),
		ElapsedSeconds: drill.Seconds(cv.Elapsed), TimeoutSeconds: drill.Seconds(timeout)}
	if err != nil {
		return &runtime.FleetError{Fleet: rec,
			Err: fmt.Errorf("the fleet did not confirm %s %s within %s: %s", c.Dependency, c.Goal, human.Duration(timeout), cv.Summary())}
	}
	out.Detail = strings.TrimPrefix(fmt.Sprintf("%s; fleet confirmed: %s after %s", out.Detail, cv.Summary(), human.Duration(cv.Elapsed)), "; ")
	out.Fleet = rec
	return nil
}
