package resilience

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// MaxBulkheadWait is the longest acquire wait the design allows for HTTP
// dependencies (0–50 ms). [NewBulkhead] accepts longer waits, since a
// connection pool's wait (PostgreSQL: 500 ms) is modeled the same way.
const MaxBulkheadWait = 50 * time.Millisecond

// Bulkhead caps concurrent calls to one dependency. Acquire never queues
// beyond its short wait: a full bulkhead fails fast with [ErrBulkheadFull]
// instead of letting work pile up. Taking and releasing a slot is one atomic
// operation each (no lock, no allocation); waiters are woken by releases, in
// no particular order. It is safe for concurrent use.
type Bulkhead struct {
	size     int64
	wait     time.Duration
	full     *Error        // shared, immutable: rejecting allocates nothing
	freed    chan struct{} // a release's wake-up for waiters; capacity size
	_        [64]byte
	inUse    atomic.Int64
	waiters  atomic.Int64
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
		size:  int64(size),
		wait:  wait,
		full:  &Error{Kind: KindBulkheadFull, Dependency: dependency},
		freed: make(chan struct{}, size),
	}, nil
}

// Acquire takes a slot, waiting at most the bulkhead's wait (and not past
// ctx). It returns nil (call [Bulkhead.Release] when done) or an error
// matching [ErrBulkheadFull].
func (b *Bulkhead) Acquire(ctx context.Context) error {
	_, err := b.acquire(ctx)
	return err
}

func (b *Bulkhead) tryAcquire() bool {
	for {
		n := b.inUse.Load()
		if n >= b.size {
			return false
		}
		if b.inUse.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// acquire is Acquire that also reports whether it had to wait.
func (b *Bulkhead) acquire(ctx context.Context) (waited bool, err error) {
	if b.tryAcquire() {
		return false, nil
	}
	if b.wait > 0 && ctx.Err() == nil && b.waitForSlot(ctx) {
		return true, nil
	}
	b.rejected.Add(1)
	return true, b.full
}

// waitForSlot waits up to the bulkhead's wait for a slot. A waiter registers
// before each attempt, and a release after it always finds it registered and
// signals, so no free slot goes unnoticed; a signal that finds the slot taken
// again just sends the waiter back to waiting.
func (b *Bulkhead) waitForSlot(ctx context.Context) bool {
	b.waiters.Add(1)
	defer b.waiters.Add(-1)
	t := time.NewTimer(b.wait)
	defer t.Stop()
	for {
		if b.tryAcquire() {
			return true
		}
		select {
		case <-b.freed:
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// Release frees a slot taken by a successful Acquire.
func (b *Bulkhead) Release() {
	b.inUse.Add(-1)
	if b.waiters.Load() > 0 {
		select {
		case b.freed <- struct{}{}:
		default: // as many wake-ups as slots are already pending
		}
	}
}

// InUse returns how many slots are taken.
func (b *Bulkhead) InUse() int { return int(b.inUse.Load()) }

// Size returns the number of slots.
func (b *Bulkhead) Size() int { return int(b.size) }

// Rejected counts calls refused since construction.
func (b *Bulkhead) Rejected() uint64 { return b.rejected.Load() }
