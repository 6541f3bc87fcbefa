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

// FleetRecord is what the fleet's gauges confirmed of a breaker step with
// wait: true (the journal's StepRecord.Fleet): the change awaited, whether
// it was confirmed, after how long, within which bound, and the last
// summary (the instances and stragglers).
type FleetRecord struct {
	Dependency     string  `json:"dependency"`
	Goal           string  `json:"goal"`
	Confirmed      bool    `json:"confirmed"`
	Summary        string  `json:"summary"`
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	TimeoutSeconds float64 `json:"timeout_seconds"`
}

// FleetError is the failure of a breaker step whose wait for the fleet
// ended unconfirmed; the runner records its Fleet on the step.
type FleetError struct {
	Fleet *FleetRecord
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
