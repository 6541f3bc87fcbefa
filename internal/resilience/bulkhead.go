package resilience

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// MaxBulkheadWait is the longest acquire wait the design allows for HTTP
// dependencies (0–50 ms). [NewBulkhead] accepts longer waits, since a
// connection pool's wait (PostgreSQL: 500 ms) is modelled the same way.
const MaxBulkheadWait = 50 * time.Millisecond

// Bulkhead caps concurrent calls to one dependency. Acquire never queues
// beyond its short wait: a full bulkhead fails fast with [ErrBulkheadFull]
// instead of letting work pile up. It is safe for concurrent use.
type Bulkhead struct {
	sem      chan struct{}
	wait     time.Duration
	full     *Error // shared, immutable: rejecting allocates nothing
	rejected atomic.Uint64
}

// NewBulkhead returns a bulkhead of size slots for dependency. wait is how
// long Acquire may wait for a slot before failing (0 = try once).
func NewBulkhead(dependency string, size int, wait time.Duration) (*Bulkhead, error) {
	if size < 1 {
		return nil, fmt.Errorf("new bulkhead %q: size %d: %w", dependency, size, ErrInvalidSettings)
	}
	if wait < 0 {
		return nil, fmt.Errorf("new bulkhead %q: negative wait %v: %w", dependency, wait, ErrInvalidSettings)
	}
	return &Bulkhead{
		sem:  make(chan struct{}, size),
		wait: wait,
		full: &Error{Kind: KindBulkheadFull, Dependency: dependency},
	}, nil
}

// Acquire takes a slot, waiting at most the bulkhead's wait (and not past
// ctx). It returns nil (call [Bulkhead.Release] when done) or an error
// matching [ErrBulkheadFull].
func (b *Bulkhead) Acquire(ctx context.Context) error {
	_, err := b.acquire(ctx)
	return err
}

// acquire is Acquire that also reports whether it had to wait.
func (b *Bulkhead) acquire(ctx context.Context) (waited bool, err error) {
	select {
	case b.sem <- struct{}{}:
		return false, nil
	default:
	}
	if b.wait > 0 && ctx.Err() == nil {
		t := time.NewTimer(b.wait)
		defer t.Stop()
		select {
		case b.sem <- struct{}{}:
			return true, nil
		case <-t.C:
		case <-ctx.Done():
		}
	}
	b.rejected.Add(1)
	return true, b.full
}

// Release frees a slot taken by a successful Acquire.
func (b *Bulkhead) Release() { <-b.sem }

// InUse returns how many slots are taken.
func (b *Bulkhead) InUse() int { return len(b.sem) }

// Size returns the number of slots.
func (b *Bulkhead) Size() int { return cap(b.sem) }

// Rejected counts calls refused since construction.
func (b *Bulkhead) Rejected() uint64 { return b.rejected.Load() }
