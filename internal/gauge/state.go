package gauge

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// State is a breaker's state. Its numeric value is the value of the
// breaker_state gauge (docs/contracts/breaker-state-metric.md): 0 closed,
// 1 half-open, 2 open, 3 forced.
type State uint8

// The four states of a breaker, numbered as the breaker_state gauge.
const (
	// Closed admits every call and records outcomes in the sliding window.
	Closed State = 0
	// HalfOpen admits a limited number of probe calls; other calls fail fast.
	HalfOpen State = 1
	// Open rejects every call until the open duration has elapsed.
	Open State = 2
	// ForcedOpen rejects every call until the operator's override is cleared.
	ForcedOpen State = 3
)

// ErrUnknownState is wrapped by [ParseState] when its input names no state.
var ErrUnknownState = errors.New("unknown breaker state")

var stateNames = [...]string{
	Closed:     "closed",
	HalfOpen:   "half_open",
	Open:       "open",
	ForcedOpen: "forced_open",
}

// String returns the state's name as the design writes it: "closed",
// "half_open", "open" or "forced_open". Out-of-range values print as
// "state(N)".
func (s State) String() string {
	if s.Valid() {
		return stateNames[s]
	}
	return "state(" + strconv.Itoa(int(s)) + ")"
}

// Valid reports whether s is one of the four defined states.
func (s State) Valid() bool { return s <= ForcedOpen }

// Rejecting reports whether the state fails every call fast (open or
// forced_open). Half-open is not rejecting: it still admits probes.
func (s State) Rejecting() bool { return s == Open || s == ForcedOpen }

// ParseState parses a state name as printed by [State.String]. It is lenient
// where people are: case is ignored, "-" and " " may stand for "_", and
// "forced" and "half" alone are accepted, as are the gauge values "0".."3".
func ParseState(text string) (State, error) {
	norm := strings.ToLower(strings.TrimSpace(text))
	norm = strings.NewReplacer("-", "_", " ", "_").Replace(norm)
	switch norm {
	case "closed", "0":
		return Closed, nil
	case "half_open", "halfopen", "half", "1":
		return HalfOpen, nil
	case "open", "2":
		return Open, nil
	case "forced_open", "forcedopen", "forced", "3":
		return ForcedOpen, nil
	}
	return 0, fmt.Errorf("parse breaker state %q: %w", text, ErrUnknownState)
}

// MarshalText encodes the state as its name, so states read well in JSON and
// YAML.
func (s State) MarshalText() ([]byte, error) {
	if !s.Valid() {
		return nil, fmt.Errorf("marshal breaker state %d: %w", uint8(s), ErrUnknownState)
	}
	return []byte(stateNames[s]), nil
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
