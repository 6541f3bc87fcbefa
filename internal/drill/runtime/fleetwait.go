package runtime

import (
	"context"
	"github.com/kosha-platform/koshactl/internal/drill"

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

// FleetError is the failure of a breaker step whose wait for the fleet
// ended unconfirmed; the runner records its Fleet on the step.
type FleetError struct {
	Fleet *drill.FleetRecord
	Err   error
}

func (e *FleetError) Error() string { return e.Err.Error() }
func (e *FleetError) Unwrap() error { return e.Err }

// Source implements GaugeSourcer.
func (g *MetricsGauges) Source(ctx context.Context) (metrics.GaugeSource, error) { return g.New(ctx) }

// SourcerOf returns the [GaugeSourcer] behind r, looking through readers
// that wrap another (an Unwrap() GaugeReader method, as the runner's
// journaling reader has).
func SourcerOf(r GaugeReader) (GaugeSourcer, bool) {
	for r != nil {
		if gs, ok := r.(GaugeSourcer); ok {
			return gs, true
		}
		u, ok := r.(interface{ Unwrap() GaugeReader })
		if !ok {
			break
		}
		r = u.Unwrap()
	}
	return nil, false
}
