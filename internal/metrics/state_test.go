package metrics_test

import (
	"testing"

	"github.com/kosha-platform/koshactl/internal/gauge"
	"github.com/kosha-platform/koshactl/internal/metrics"
)

// The display states of the four breaker states are the gauge's numbers, so
// a number means one thing on both sides of the contract.
func TestDisplayStatesKeepTheGaugeNumbers(t *testing.T) {
	for g, want := range map[gauge.State]metrics.State{
		gauge.Closed: metrics.Closed, gauge.HalfOpen: metrics.HalfOpen, gauge.Open: metrics.Open, gauge.ForcedOpen: metrics.Forced,
	} {
		if uint8(want) != uint8(g) || metrics.FromBreaker(g) != want {
			t.Errorf("%v: display %d (%v), FromBreaker %v; want the gauge value %d", g, uint8(want), want, metrics.FromBreaker(g), uint8(g))
		}
	}
	for _, v := range []float64{0, 1, 2, 3} {
		s, ok := metrics.GaugeState(v)
		if !ok || float64(metrics.FromBreaker(s)) != v {
			t.Errorf("gauge value %v reads as %v (%v)", v, metrics.FromBreaker(s), ok)
		}
	}
	if metrics.FromBreaker(gauge.State(7)) != metrics.NoData {
		t.Error("an unknown gauge state is not NoData")
	}
}
