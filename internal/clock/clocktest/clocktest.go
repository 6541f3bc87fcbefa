package clocktest

import (
	"sync"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock"
)

var (
	_ clock.Clock  = (*Fake)(nil)
	_ clock.Waiter = (*Fake)(nil)
)

// Fake is a manually advanced clock for tests. The zero value reads as the
// zero time; use [NewFake] to start at a given instant. It is safe for
// concurrent use.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	waiters []fakeWaiter
	// changed is closed (and dropped) when the pending waits change.
	changed chan struct{}
}

type fakeWaiter struct {
	at time.Time
	ch chan time.Time
}

// NewFake returns a Fake clock reading t.
func NewFake(t time.Time) *Fake { return &Fake{now: t} }

// Now returns the fake's current time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Advance moves the fake forward by d, firing the waits that are due.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.fireLocked()
	f.mu.Unlock()
}

// Set moves the fake to t, firing the waits that are due.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	f.now = t
	f.fireLocked()
	f.mu.Unlock()
}

// After implements [clock.Waiter]: the channel receives once the fake has been
// advanced by d (at once when d <= 0).
func (f *Fake) After(d time.Duration) <-chan time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := fakeWaiter{at: f.now.Add(d), ch: make(chan time.Time, 1)}
	if d <= 0 {
		w.ch <- f.now
		return w.ch
	}
	f.waiters = append(f.waiters, w)
	f.notifyLocked()
	return w.ch
}

// WaitersChanged returns a channel closed the next time the pending waits
// change (a wait begins, or the clock fires one). A test takes it, checks
// Waiters, and blocks on it when the code under test is not waiting yet,
// instead of polling.
func (f *Fake) WaitersChanged() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.changed == nil {
		f.changed = make(chan struct{})
	}
	return f.changed
}

func (f *Fake) notifyLocked() {
	if f.changed != nil {
		close(f.changed)
		f.changed = nil
	}
}

// Waiters returns how many waits are pending, so a test can advance the
// fake once the code under test is waiting.
func (f *Fake) Waiters() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiters)
}

func (f *Fake) fireLocked() {
	kept := f.waiters[:0]
	for _, w := range f.waiters {
		if w.at.After(f.now) {
			kept = append(kept, w)
			continue
		}
		w.ch <- f.now
	}
	fired := len(kept) != len(f.waiters)
	f.waiters = kept
	if fired {
		f.notifyLocked()
	}
}
