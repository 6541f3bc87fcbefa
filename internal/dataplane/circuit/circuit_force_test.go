package circuit

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
)

// fakeSource is a ForceSource whose answer the test sets.
type fakeSource struct {
	mu       sync.Mutex
	force    breaker.Force
	err      error
	calls    int
	deps     []string
	deadline time.Time
	block    chan struct{} // when set, reads wait on it
	entered  chan struct{} // when set, a read signals it on entry
}

func (s *fakeSource) ForcedOpen(ctx context.Context, dep string) (breaker.Force, error) {
	s.mu.Lock()
	s.calls++
	s.deps = append(s.deps, dep)
	s.deadline, _ = ctx.Deadline()
	block, entered := s.block, s.entered
	s.mu.Unlock()
	if entered != nil {
		entered <- struct{}{}
	}
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return breaker.Force{}, ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.force, s.err
}

func (s *fakeSource) set(f breaker.Force, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.force, s.err = f, err
}

func (s *fakeSource) reads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func newWatched(t *testing.T, ws WatcherSettings) (*Breaker, *ForceWatcher, *fakeSource, *clocktest.Fake, *observer) {
	t.Helper()
	b, clk, obs := newTest(t, Settings{Name: "core-api", WindowSize: 2, OpenDuration: time.Second})
	src := &fakeSource{}
	return b, NewForceWatcher(b, src, ws), src, clk, obs
}

func TestWatcherReadsAtMostOncePerInterval(t *testing.T) {
	tests := []struct {
		name     string
		interval time.Duration
		want     time.Duration
	}{
		{"default is 5s", 0, 5 * time.Second},
		{"configurable", 750 * time.Millisecond, 750 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, w, src, clk, _ := newWatched(t, WatcherSettings{RefreshInterval: tt.interval})
			ctx := context.Background()
			w.Sync(ctx)
			if src.reads() != 1 {
				t.Fatalf("first Sync read %d times", src.reads())
			}
			for range 100 {
				w.Sync(ctx)
			}
			clk.Advance(tt.want - time.Nanosecond)
			w.Sync(ctx)
			if src.reads() != 1 {
				t.Fatalf("a cache younger than %v was re-read (%d reads)", tt.want, src.reads())
			}
			clk.Advance(time.Nanosecond)
			w.Sync(ctx)
			w.Sync(ctx)
			if src.reads() != 2 || w.Reads() != 2 {
				t.Fatalf("at exactly %v: %d reads, want 2", tt.want, src.reads())
			}
			if src.deps[0] != "core-api" {
				t.Fatalf("looked up %q, want the breaker's name", src.deps[0])
			}
		})
	}
}

func TestWatcherForcesFromEveryState(t *testing.T) {
	for _, from := range []State{Closed, HalfOpen, Open} {
		t.Run(from.String(), func(t *testing.T) {
			b, w, src, clk, obs := newWatched(t, WatcherSettings{})
			switch from {
			case Open:
				feed(t, b, "FF")
			case HalfOpen:
				feed(t, b, "FF")
				clk.Advance(time.Second)
				if _, err := b.Allow(); err != nil {
					t.Fatalf("setup: the first call after the open period: %v", err)
				}
			case Closed, ForcedOpen:
			}
			if b.State() != from {
				t.Fatalf("setup: %v", b.State())
			}
			src.set(breaker.Force{Active: true, Reason: "INC-42 core-api brownout"}, nil)
			w.Sync(context.Background())
			if b.State() != ForcedOpen {
				t.Fatalf("active override left %v", b.State())
			}
			last := obs.transitions[len(obs.transitions)-1]
			if last.From != from || last.Reason != ReasonOverrideSet {
				t.Fatalf("transition %+v", last)
			}
			if w.Last().Reason != "INC-42 core-api brownout" {
				t.Fatalf("Last() = %+v", w.Last())
			}
			// The override is removed: the next read after the interval closes it.
			src.set(breaker.Force{}, nil)
			clk.Advance(5 * time.Second)
			w.Sync(context.Background())
			if s := b.Snapshot(); s.State != Closed || s.Calls != 0 {
				t.Fatalf("absent override left %+v", s)
			}
			if r := obs.reasons(); r[len(r)-1] != ReasonOverrideCleared {
				t.Fatalf("reasons %v", r)
			}
		})
	}
}

func TestWatcherExpiry(t *testing.T) {
	t.Run("cached override clears at its expiry without a read", func(t *testing.T) {
		b, w, src, clk, obs := newWatched(t, WatcherSettings{})
		src.set(breaker.Force{Active: true, ExpiresAt: t0.Add(3 * time.Second)}, nil)
		w.Sync(context.Background())
		clk.Advance(3*time.Second - time.Nanosecond)
		w.Sync(context.Background())
		if b.State() != ForcedOpen {
			t.Fatalf("cleared before expiry: %v", b.State())
		}
		clk.Advance(time.Nanosecond)
		w.Sync(context.Background())
		if b.State() != Closed {
			t.Fatalf("still %v at the override's expiry", b.State())
		}
		if src.reads() != 1 {
			t.Fatalf("expiry needed a read (%d reads)", src.reads())
		}
		if r := obs.reasons(); r[len(r)-1] != ReasonOverrideExpired {
			t.Fatalf("reasons %v", r)
		}
	})
	t.Run("an override read after its expiry does not force", func(t *testing.T) {
		b, w, src, _, obs := newWatched(t, WatcherSettings{})
		src.set(breaker.Force{Active: true, ExpiresAt: t0}, nil)
		w.Sync(context.Background())
		if b.State() != Closed || len(obs.transitions) != 0 {
			t.Fatalf("expired override forced the breaker: %v", b.State())
		}
	})
	t.Run("an expired override clears a forced breaker on read", func(t *testing.T) {
		b, w, src, clk, obs := newWatched(t, WatcherSettings{})
		src.set(breaker.Force{Active: true}, nil)
		w.Sync(context.Background())
		src.set(breaker.Force{Active: true, ExpiresAt: t0.Add(time.Second)}, nil)
		clk.Advance(5 * time.Second)
		w.Sync(context.Background())
		if b.State() != Closed {
			t.Fatalf("state %v", b.State())
		}
		if r := obs.reasons(); r[len(r)-1] != ReasonOverrideExpired {
			t.Fatalf("reasons %v", r)
		}
	})
	t.Run("an extended expiry is honored", func(t *testing.T) {
		b, w, src, clk, _ := newWatched(t, WatcherSettings{})
		src.set(breaker.Force{Active: true, ExpiresAt: t0.Add(6 * time.Second)}, nil)
		w.Sync(context.Background())
		src.set(breaker.Force{Active: true, ExpiresAt: t0.Add(time.Hour)}, nil)
		clk.Advance(5 * time.Second)
		w.Sync(context.Background()) // re-read: now expires in an hour
		clk.Advance(2 * time.Second)
		w.Sync(context.Background())
		if b.State() != ForcedOpen {
			t.Fatalf("the old expiry cleared an extended override: %v", b.State())
		}
	})
}

func TestWatcherStoreErrorsKeepLastKnownValue(t *testing.T) {
	storeDown := errors.New("store unavailable")
	t.Run("forced stays forced", func(t *testing.T) {
		b, w, src, clk, _ := newWatched(t, WatcherSettings{})
		src.set(breaker.Force{Active: true}, nil)
		w.Sync(context.Background())
		src.set(breaker.Force{}, storeDown)
		for range 3 {
			clk.Advance(5 * time.Second)
			w.Sync(context.Background())
		}
		if b.State() != ForcedOpen {
			t.Fatalf("a store error changed the forced state: %v", b.State())
		}
		if w.ReadErrors() != 3 || w.Reads() != 4 {
			t.Fatalf("ReadErrors %d Reads %d, want 3 and 4", w.ReadErrors(), w.Reads())
		}
		src.set(breaker.Force{}, nil)
		clk.Advance(5 * time.Second)
		w.Sync(context.Background())
		if b.State() != Closed {
			t.Fatalf("store recovered without the override: %v", b.State())
		}
	})
	t.Run("closed stays closed and errors do not hammer the store", func(t *testing.T) {
		b, w, src, clk, _ := newWatched(t, WatcherSettings{})
		src.set(breaker.Force{}, storeDown)
		w.Sync(context.Background())
		for range 50 {
			w.Sync(context.Background())
		}
		clk.Advance(4 * time.Second)
		w.Sync(context.Background())
		if b.State() != Closed || src.reads() != 1 || w.ReadErrors() != 1 {
			t.Fatalf("state %v reads %d errors %d", b.State(), src.reads(), w.ReadErrors())
		}
	})
	t.Run("an expiry passing while the store is down still clears", func(t *testing.T) {
		b, w, src, clk, _ := newWatched(t, WatcherSettings{})
		src.set(breaker.Force{Active: true, ExpiresAt: t0.Add(7 * time.Second)}, nil)
		w.Sync(context.Background())
		src.set(breaker.Force{}, storeDown)
		clk.Advance(5 * time.Second)
		w.Sync(context.Background())
		if b.State() != ForcedOpen {
			t.Fatalf("state %v before expiry", b.State())
		}
		clk.Advance(2 * time.Second)
		w.Sync(context.Background())
		if b.State() != Closed {
			t.Fatalf("expired override kept during a store outage: %v", b.State())
		}
	})
	t.Run("the read error is logged", func(t *testing.T) {
		_, w, src, _, obs := newWatched(t, WatcherSettings{})
		src.set(breaker.Force{}, storeDown)
		w.Sync(context.Background())
		if len(obs.records) != 1 || obs.records[0].Level != slog.LevelWarn {
			t.Fatalf("records %v", obs.records)
		}
	})
	t.Run("a canceled caller is not a store error", func(t *testing.T) {
		_, w, src, _, _ := newWatched(t, WatcherSettings{})
		src.set(breaker.Force{}, context.Canceled)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		w.Sync(ctx)
		if w.ReadErrors() != 0 {
			t.Fatalf("caller cancellation counted as a store error")
		}
		src.set(breaker.Force{Active: true}, nil)
		w.Sync(context.Background())
		if src.reads() != 2 {
			t.Fatalf("the next caller did not retry the read (%d reads)", src.reads())
		}
	})
}

func TestWatcherSingleReadUnderConcurrency(t *testing.T) {
	b, w, src, _, _ := newWatched(t, WatcherSettings{})
	src.block = make(chan struct{})
	src.entered = make(chan struct{}, 1)
	src.set(breaker.Force{Active: true}, nil)
	done := make(chan struct{})
	go func() { w.Sync(context.Background()); close(done) }()
	<-src.entered // the first caller is inside the read
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() { w.Sync(context.Background()) })
	}
	wg.Wait() // the others returned without waiting for the read
	if src.reads() != 1 {
		t.Fatalf("%d concurrent reads, want 1", src.reads())
	}
	if b.State() != Closed {
		t.Fatal("state changed before the read finished")
	}
	close(src.block)
	<-done
	if b.State() != ForcedOpen {
		t.Fatalf("state %v after the read", b.State())
	}
}

func TestWatcherReadTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := New(Settings{Name: "openai", Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		src := &fakeSource{block: make(chan struct{})}
		w := NewForceWatcher(b, src, WatcherSettings{ReadTimeout: 200 * time.Millisecond})
		start := time.Now()
		w.Sync(context.Background()) // the source hangs until the read timeout
		if got := time.Since(start); got != 200*time.Millisecond {
			t.Fatalf("a hanging read held the caller %v, want the 200ms read timeout", got)
		}
		if !src.deadline.Equal(start.Add(200 * time.Millisecond)) {
			t.Fatalf("read deadline %v, want start+200ms", src.deadline)
		}
		if w.ReadErrors() != 1 {
			t.Fatalf("a timed-out read is a store error; counted %d", w.ReadErrors())
		}
		if b.State() != Closed {
			t.Fatalf("state %v", b.State())
		}
	})
}

// NextSync says when a Sync next has something to do: the instant the cache
// goes stale, or the cached override's expiry when that comes first; a
// caller that syncs then reads at once and applies the expiry on time.
func TestWatcherNextSync(t *testing.T) {
	b, w, src, clk, _ := newWatched(t, WatcherSettings{})
	ctx := context.Background()
	if !w.NextSync().IsZero() {
		t.Fatalf("NextSync before the first read = %v, want zero", w.NextSync())
	}
	t0 := clk.Now()
	w.Sync(ctx)
	if got := w.NextSync(); !got.Equal(t0.Add(5 * time.Second)) {
		t.Fatalf("NextSync after a read at t0 = %v, want t0+5s", got)
	}
	clk.Advance(5 * time.Second)
	if !w.Sync(ctx) || src.reads() != 2 {
		t.Fatalf("a Sync at NextSync did not read (%d reads)", src.reads())
	}
	// An override expiring before the cache goes stale: NextSync is its expiry.
	clk.Advance(5 * time.Second)
	expiry := clk.Now().Add(2 * time.Second)
	src.set(breaker.Force{Active: true, ExpiresAt: expiry}, nil)
	w.Sync(ctx)
	if b.State() != ForcedOpen {
		t.Fatalf("state %v, want forced_open", b.State())
	}
	if got := w.NextSync(); !got.Equal(expiry) {
		t.Fatalf("NextSync = %v, want the expiry %v", got, expiry)
	}
	clk.Set(w.NextSync())
	w.Sync(ctx)
	if b.State() != Closed {
		t.Errorf("state at the expiry %v, want closed", b.State())
	}
}
