package circuit

import "github.com/kosha-platform/koshactl/internal/gauge"

// State is a breaker's state: the breaker_state gauge's enum, [gauge.State]
// (0 closed, 1 half-open, 2 open, 3 forced).
type State = gauge.State

// The four states of a [Breaker], numbered as the breaker_state gauge.
const (
	// Closed admits every call and records outcomes in the sliding window.
	Closed = gauge.Closed
	// HalfOpen admits a limited number of probe calls; other calls fail fast.
	HalfOpen = gauge.HalfOpen
	// Open rejects every call until the open duration has elapsed.
	Open = gauge.Open
	// ForcedOpen rejects every call until the operator's override is cleared.
	ForcedOpen = gauge.ForcedOpen
)
