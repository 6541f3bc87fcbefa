package breaker

import (
	"fmt"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock"
)

// Overrides is the override lever's rules on a store: it reads breaker
// overrides (one, a listing by index or by scan) and, as a [lever.Kind]
// (kind.go), decides what a force, a clear or a restore does to one. The
// lever service (internal/lever) writes what it decides, each write
// conditional on the item as read and with its audit record. It is built
// once per context with the context's duration policy bound in
// ([Overrides.WithDurations]).
type Overrides struct {
	store     OverrideStore
	clock     clock.Clock
	notices   *noticeSink
	durations DurationPolicy
}

// NewOverrides returns an Overrides on s with the default duration
// policy. A nil clk means the wall clock.
func NewOverrides(s OverrideStore, clk clock.Clock) *Overrides {
	if clk == nil {
		clk = clock.Real{}
	}
	return &Overrides{store: s, clock: clk, notices: &noticeSink{}}
}

// WithDurations returns the service applying p to every new override: a
// duration or an expiry outside it is refused with a *[DurationError]
// before anything is read.
func (s *Overrides) WithDurations(p DurationPolicy) *Overrides {
	c := *s
	c.durations = p
	return &c
}

// Durations is the duration policy the service applies.
func (s *Overrides) Durations() DurationPolicy { return s.durations }

// checkLifetime applies the service's duration policy to a new override
// asked at now: a duration (For), an expiry (ExpiresAt, as [LastUntil]), or
// none, which only a request that says so (NoExpiry, the operator's
// confirmation) may ask.
func (s *Overrides) checkLifetime(p ForceParams, now time.Time) error {
	switch {
	case p.For != 0:
		return s.durations.CheckFor(p.For)
	case !p.ExpiresAt.IsZero():
		_, _, err := s.durations.ExpiresAt(now, LastUntil(p.ExpiresAt))
		return err
	case !p.NoExpiry:
		return ErrNoExpiryUnconfirmed
	}
	return nil
}

// checkPlanned applies the rules of a force to one a levers file planned
// for a window: an expiry, still ahead and at most the policy's maximum
// away. The minimum does not apply: a window near its end has less than
// [MinOverride] left, and what is left of it is what the file asks.
func (s *Overrides) checkPlanned(p ForceParams) error {
	now := s.clock.Now()
	expires := p.ExpiresAt
	if p.For != 0 {
		expires = now.Add(p.For)
	}
	switch left := expires.Sub(now); {
	case expires.IsZero():
		return fmt.Errorf("a planned window has an end: %w", ErrNoExpiryUnconfirmed)
	case left <= 0:
		return &DurationError{Problem: ErrExpiryPast, Duration: left}
	case left > s.durations.MaxFor():
		return &DurationError{Problem: ErrDurationTooLong, Duration: left, Limit: s.durations.MaxFor()}
	}
	return nil
}
