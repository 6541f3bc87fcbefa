package metrics_test

import (
	"strconv"
	"strings"
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

// The JSON tokens of the breakdown, goal and verdict round-trip, and a
// token that names none is refused with the ones wanted.
func TestTokensRoundTripAndNameWhatIsWanted(t *testing.T) {
	for _, tc := range []struct {
		v       interface{ MarshalText() ([]byte, error) }
		decode  func([]byte) (string, error)
		badWant string
	}{
		{metrics.BreakdownNotFetched, func(b []byte) (string, error) {
			var v metrics.Breakdown
			err := v.UnmarshalText(b)
			return v.String(), err
		},
			`parse breakdown "x": want complete, not_fetched or partial`},
		{metrics.GoalReleased, func(b []byte) (string, error) { var v metrics.Goal; err := v.UnmarshalText(b); return v.String(), err },
			`parse goal "x": want forced or released`},
		{metrics.NotObeyed, func(b []byte) (string, error) {
			var v metrics.Verdict
			err := v.UnmarshalText(b)
			return v.String(), err
		},
			`parse verdict "x": want converging, confirmed, not_obeyed or unconfirmed`},
	} {
		text, _ := tc.v.MarshalText()
		if got, err := tc.decode(text); err != nil || got != string(text) {
			t.Errorf("%s: decoded %q, %v", text, got, err)
		}
		for _, bad := range []string{"x", ""} {
			_, err := tc.decode([]byte(bad))
			if want := strings.Replace(tc.badWant, `"x"`, strconv.Quote(bad), 1); err == nil || err.Error() != want {
				t.Errorf("%q: error %v, want %s", bad, err, want)
			}
		}
	}
	if got := metrics.Goal(0).String(); got != "goal(0)" {
		t.Errorf("Goal(0) = %q, want goal(0)", got)
	}
	if got := metrics.State(9).String(); got != "state(9)" {
		t.Errorf("State(9) = %q, want state(9)", got)
	}
}
