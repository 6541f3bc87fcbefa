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
