package resilience

import (
	"math/rand/v2"
	"time"
)

// Rand is the random source of the backoff jitter. It must be safe for
// concurrent use when the policy is shared; a *rand.Rand from math/rand/v2 is
// not, so wrap one in a mutex for deterministic tests.
type Rand interface {
	// Int64N returns a uniform value in [0, n).
	Int64N(n int64) int64
}

// globalRand is math/rand/v2's goroutine-safe top-level source.
type globalRand struct{}

func (globalRand) Int64N(n int64) int64 { return rand.Int64N(n) } //nolint:gosec // G404: retry jitter needs spread, not unpredictability

// Backoff computes full-jitter retry delays: the delay before retry n
// (n ≥ 1) is uniform in [0, min(Cap, Base·2ⁿ)] (AWS Architecture Blog,
// "Exponential Backoff and Jitter"), which spreads retries evenly and avoids
// synchronized retry storms.
type Backoff struct {
	// Base is the unit of the exponential ceiling. Zero means no delay.
	Base time.Duration
	// Cap bounds the ceiling. Zero means no bound beyond overflow.
	Cap time.Duration
	// Rand is the jitter source. Nil means math/rand/v2's global source.
	Rand Rand
}

// Ceiling returns min(Cap, Base·2ⁿ), the upper end of retry n's delay,
// without overflowing.
func (b Backoff) Ceiling(n int) time.Duration {
	if b.Base <= 0 {
		return 0
	}
	limit := b.Cap
	if limit <= 0 {
		limit = time.Duration(1<<63 - 1)
	}
	n = max(n, 0)
	if n >= 63 || b.Base > limit>>n {
		return limit
	}
	return b.Base << n
}

// Delay returns the full-jitter delay before retry n (n ≥ 1): uniform in
// [0, Ceiling(n)], both ends included.
func (b Backoff) Delay(n int) time.Duration {
	c := b.Ceiling(n)
	if c <= 0 {
		return 0
	}
	r := b.Rand
	if r == nil {
		r = globalRand{}
	}
	if c == time.Duration(1<<63-1) {
		return time.Duration(r.Int64N(int64(c)))
	}
	return time.Duration(r.Int64N(int64(c) + 1))
}
