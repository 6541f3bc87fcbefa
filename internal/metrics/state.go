package metrics

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/kosha-platform/koshactl/internal/gauge"
)

// State is the state shown for a dependency: one of the four breaker states
// when the fleet agrees, [Mixed] when instances disagree, [NoData] when no
// gauge reports. The four breaker states keep the breaker_state gauge's
// numbers ([gauge.State]: 0 closed, 1 half-open, 2 open, 3 forced), so a
// gauge value and a display state never disagree on what a number means;
// NoData and Mixed come after them.
type State uint8

// Display states.
const (
	// Closed: every reporting instance is closed.
	Closed = State(gauge.Closed)
	// HalfOpen: every reporting instance is half-open (probing).
	HalfOpen = State(gauge.HalfOpen)
	// Open: every reporting instance is open.
	Open = State(gauge.Open)
	// Forced: an override is active, or every reporting instance reports forced.
	Forced = State(gauge.ForcedOpen)
	// NoData: no instance reported the gauge recently and no override is active.
	NoData State = 4
	// Mixed: reporting instances disagree.
	Mixed State = 5
)

var stateTokens = [...]string{
	NoData:   "no_data",
	Closed:   "closed",
	HalfOpen: "half_open",
	Open:     "open",
	Forced:   "forced_open",
	Mixed:    "mixed",
}

var stateLabels = [...]string{
	NoData:   "no data",
	Closed:   "closed",
	HalfOpen: "half-open",
	Open:     "open",
	Forced:   "forced",
	Mixed:    "mixed",
}

// String returns the state's stable token, as JSON output writes it:
// no_data, closed, half_open, open, forced_open or mixed (the breaker states
// keep the design's names).
func (s State) String() string { return token(stateTokens[:], s, "state") }

// Label returns the state as the screen writes it: "no data", "closed",
// "half-open", "open", "forced" or "mixed".
func (s State) Label() string { return token(stateLabels[:], s, "state") }

// MarshalText encodes the state as its token.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// ErrUnknownState reports text that names no display state.
var ErrUnknownState = errors.New("unknown display state")

// ParseState reads a state's token or label ("half_open" or "half-open").
func ParseState(text string) (State, error) {
	for i := range stateTokens {
		if text == stateTokens[i] || text == stateLabels[i] {
			return State(i), nil
		}
	}
	return 0, fmt.Errorf("parse state %q: %w", text, ErrUnknownState)
}

// UnmarshalText decodes a state with [ParseState].
func (s *State) UnmarshalText(text []byte) error {
	v, err := ParseState(string(text))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// FromBreaker converts a breaker state to a display state: the same number
// for the four states, NoData for anything else.
func FromBreaker(b gauge.State) State {
	if !b.Valid() {
		return NoData
	}
	return State(b)
}

// GaugeState converts a gauge value to the breaker state it encodes. Values
// are rounded to the nearest integer (a per-minute Maximum or Minimum of an
// integral gauge is integral); anything outside 0..3, NaN or infinite is not
// a state and returns false.
func GaugeState(v float64) (gauge.State, bool) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	r := math.Round(v)
	if r < 0 || r > 3 {
		return 0, false
	}
	return gauge.State(r), true
}

// shortLabel is a state's label in at most six characters, for narrow columns.
func shortLabel(b gauge.State) string {
	switch b {
	case gauge.HalfOpen:
		return "half"
	case gauge.ForcedOpen:
		return "forced"
	case gauge.Closed, gauge.Open:
		// "closed" and "open" already fit.
	}
	return FromBreaker(b).Label()
}

// GaugeLabel renders a gauge value as a short state name ("closed", "half",
// "open", "forced"), or "-" when it is not a state.
func GaugeLabel(v float64) string {
	b, ok := GaugeState(v)
	if !ok {
		return "-"
	}
	return shortLabel(b)
}

// exactState converts a gauge value to a state only when it is exactly one
// of 0, 1, 2 and 3. Confirmation ([Goal.Stand], [Judge]) reads values this
// way: a value a publisher rounded wrong (3.4), not finite or out of range
// is not a state it could confirm by, where the display ([GaugeState])
// shows the nearest state.
func exactState(v float64) (gauge.State, bool) {
	if math.IsNaN(v) || math.IsInf(v, 0) || v != math.Trunc(v) || v < 0 || v > 3 {
		return 0, false
	}
	return gauge.State(v), true
}

// token is an enumeration's token as JSON writes it: names[v], or
// "kind(v)" for a value without one.
func token[T ~uint8](names []string, v T, kind string) string {
	if int(v) < len(names) && names[v] != "" {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", kind, uint8(v))
}

// parseToken sets *dst to the value whose token in names is text, or says
// which tokens are wanted.
func parseToken[T ~uint8](names []string, text []byte, kind string, dst *T) error {
	var want []string
	for i, tok := range names {
		if tok == "" {
			continue
		}
		if tok == string(text) {
			*dst = T(i)
			return nil
		}
		want = append(want, tok)
	}
	return fmt.Errorf("parse %s %q: want %s or %s", kind, text, strings.Join(want[:len(want)-1], ", "), want[len(want)-1])
}
