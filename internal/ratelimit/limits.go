package ratelimit

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// The LLD's bucket settings (section 6).
const (
	// DefaultCapacity is the bucket size: the burst a client may send at once.
	DefaultCapacity = 20
	// DefaultRefillPerSecond is how many tokens a bucket regains per second.
	DefaultRefillPerSecond = 1
	// IdleTTL is how long an unused bucket is kept before DynamoDB TTL may
	// collect it (longer when the bucket needs longer to refill; see [Limits.TTL]).
	IdleTTL = time.Hour
)

// MaxCapacity bounds a configured capacity, so token counts stay exact in a
// float64 and printable.
const MaxCapacity = 1e9

// ErrInvalidLimits reports a capacity or refill rate that cannot work.
var ErrInvalidLimits = errors.New("invalid rate limits")

// Limits are a bucket's capacity and refill rate.
type Limits struct {
	// Capacity is the most tokens a bucket holds. Zero means DefaultCapacity.
	Capacity float64
	// RefillPerSecond is the tokens regained per second. Zero means
	// DefaultRefillPerSecond.
	RefillPerSecond float64
}

// DefaultLimits returns the LLD's limits: capacity 20, 1 token per second.
func DefaultLimits() Limits {
	return Limits{Capacity: DefaultCapacity, RefillPerSecond: DefaultRefillPerSecond}
}

// NewLimits returns the limits a context configures (zero fields take the
// LLD's defaults), checked by [Limits.Validate]: the one way a caller turns
// configured numbers into Limits.
func NewLimits(capacity, refillPerSecond float64) (Limits, error) {
	l := Limits{Capacity: capacity, RefillPerSecond: refillPerSecond}
	if err := l.Validate(); err != nil {
		return Limits{}, err
	}
	return l.WithDefaults(), nil
}

// WithDefaults returns l with zero fields replaced by the LLD's defaults.
func (l Limits) WithDefaults() Limits {
	if l.Capacity == 0 {
		l.Capacity = DefaultCapacity
	}
	if l.RefillPerSecond == 0 {
		l.RefillPerSecond = DefaultRefillPerSecond
	}
	return l
}

// Validate checks that l (after defaults) can run a bucket: a capacity of at
// least 1 (otherwise nothing is ever admitted) and a positive, finite rate.
func (l Limits) Validate() error {
	l = l.WithDefaults()
	if math.IsNaN(l.Capacity) || l.Capacity < 1 || l.Capacity > MaxCapacity {
		return fmt.Errorf("%w: capacity %g: use a number from 1 to %g", ErrInvalidLimits, l.Capacity, float64(MaxCapacity))
	}
	if math.IsNaN(l.RefillPerSecond) || math.IsInf(l.RefillPerSecond, 0) || l.RefillPerSecond <= 0 {
		return fmt.Errorf("%w: refill rate %g per second: use a positive number", ErrInvalidLimits, l.RefillPerSecond)
	}
	return nil
}

// String renders the limits for humans: "capacity 20, 1 token/s".
func (l Limits) String() string {
	l = l.WithDefaults()
	return fmt.Sprintf("capacity %g, %g token/s", l.Capacity, l.RefillPerSecond)
}

// Refill is the contract's formula: the tokens a bucket holds at nowMs, given
// the stored tokens and updated_at (both epoch ms). A negative elapsed time
// (the reader's clock is behind the writer's) counts as zero, so a lagging
// reader never takes tokens away.
//
//	min(capacity, tokens + max(0, now - updated_at) / 1000 * rate)
func (l Limits) Refill(tokens float64, updatedAtMs, nowMs int64) float64 {
	return l.refill(tokens, max(0, nowMs-updatedAtMs))
}

func (l Limits) refill(tokens float64, elapsedMs int64) float64 {
	l = l.WithDefaults()
	return min(l.Capacity, tokens+float64(elapsedMs)/1000*l.RefillPerSecond)
}

// maxWait is the longest wait a bucket reports (time.Duration's range, about
// 292 years): a stored bucket so deep in debt, or stamped so far ahead, that
// it would need longer reports maxWait instead of overflowing.
const maxWait = time.Duration(math.MaxInt64)

// TimeUntil returns how long a bucket holding level tokens takes to hold
// target tokens at l's rate (zero when it already does), rounded up to the
// millisecond so a caller that waits that long is never early, and at most
// [maxWait].
func (l Limits) TimeUntil(level, target float64) time.Duration {
	l = l.WithDefaults()
	if level >= target {
		return 0
	}
	ms := (target - level) * 1000 / l.RefillPerSecond
	// Float error must not turn an exact 1000 ms into 1001.
	return msWait(math.Ceil(ms - 1e-6))
}

// msWait converts a whole, non-negative number of milliseconds to a
// duration, saturating at [maxWait].
func msWait(ms float64) time.Duration {
	if !(ms < float64(maxWait/time.Millisecond)) {
		return maxWait
	}
	return time.Duration(ms) * time.Millisecond
}

// addWait adds two non-negative waits, saturating at [maxWait].
func addWait(a, b time.Duration) time.Duration {
	if a > maxWait-b {
		return maxWait
	}
	return a + b
}

// RetryAfter is the LLD's retry_after for a refused request: the time until
// the bucket holds one whole token.
func (l Limits) RetryAfter(level float64) time.Duration { return l.TimeUntil(level, 1) }

// UntilFull is the time until a bucket holding level tokens is full.
func (l Limits) UntilFull(level float64) time.Duration {
	return l.TimeUntil(level, l.WithDefaults().Capacity)
}

// NextToken is the time until the bucket gains its next whole token (from 3.4
// to 4, say); zero when it is full.
func (l Limits) NextToken(level float64) time.Duration {
	l = l.WithDefaults()
	if level >= l.Capacity {
		return 0
	}
	next := math.Floor(level) + 1
	return l.TimeUntil(level, min(next, l.Capacity))
}

// TTL returns the ttl attribute (epoch seconds) of a bucket written with
// updated_at updatedAtMs and level tokens: IdleTTL after that write, or later
// if the bucket needs longer than that to refill, so that DynamoDB collecting
// the item can never change what a reader sees (a missing item reads as full).
func (l Limits) TTL(updatedAtMs int64, level float64) int64 {
	hold := max(IdleTTL, l.UntilFull(level))
	sec := int64(math.Ceil(hold.Seconds()))
	return ceilDiv(updatedAtMs, 1000) + sec
}

func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a > 0 {
		q++
	}
	return q
}
