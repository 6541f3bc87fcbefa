// Package clock provides the time source every piece of koshactl logic takes
// instead of calling time.Now directly, so tests can pin or advance time.
package clock

import (
	"context"
	"time"
)

// Clock tells the current time.
type Clock interface {
	Now() time.Time
}

// Waiter is implemented by clocks that can also wait (Real and Fake), so
// logic that polls measures its intervals on the same clock it reads.
type Waiter interface {
	// After returns a channel that receives the clock's time once d has
	// passed on it.
	After(d time.Duration) <-chan time.Time
}

// After waits d on c when c is a [Waiter], and on the wall clock otherwise.
func After(c Clock, d time.Duration) <-chan time.Time {
	if w, ok := c.(Waiter); ok {
		return w.After(d)
	}
	return time.After(d)
}

// Sleep waits d on c (as [After] does; a nil c is the wall clock), or
// until ctx ends, whose error it returns.
func Sleep(ctx context.Context, c Clock, d time.Duration) error {
	select {
	case <-After(c, d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Real is the wall clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// After implements [Waiter] with time.After.
func (Real) After(d time.Duration) <-chan time.Time { return time.After(d) }
