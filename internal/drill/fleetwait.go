package drill

import (
	"context"

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
