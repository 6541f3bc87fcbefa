package resilience

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestBulkheadFailsFastUnderConcurrency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const size, callers = 4, 64
		bh, err := NewBulkhead("screening-sim", size, 0)
		if err != nil {
			t.Fatal(err)
		}
		var (
			wg       sync.WaitGroup
			admitted atomic.Int32
			full     atomic.Int32
			inside   atomic.Int32
			maxIn    atomic.Int32
		)
		release := make(chan struct{})
		for range callers {
			wg.Go(func() {
				err := bh.Acquire(context.Background())
				if err != nil {
					if !errors.Is(err, ErrBulkheadFull) || KindOf(err) != KindBulkheadFull {
						t.Errorf("rejection %v", err)
					}
					full.Add(1)
					return
				}
				admitted.Add(1)
				n := inside.Add(1)
				for m := maxIn.Load(); n > m && !maxIn.CompareAndSwap(m, n); m = maxIn.Load() {
				}
				<-release // hold the slot until every caller has tried
				inside.Add(-1)
				bh.Release()
			})
		}
		synctest.Wait() // every caller either returned rejected or holds a slot
		if admitted.Load() != size || full.Load() != callers-size {
			t.Fatalf("admitted %d, rejected %d; want %d and %d", admitted.Load(), full.Load(), size, callers-size)
		}
		if bh.InUse() != size {
			t.Fatalf("InUse %d while %d callers hold slots", bh.InUse(), size)
		}
		close(release)
		wg.Wait()
		if maxIn.Load() != size || bh.Rejected() != callers-size || bh.InUse() != 0 || bh.Size() != size {
			t.Fatalf("max concurrent %d Rejected %d InUse %d Size %d", maxIn.Load(), bh.Rejected(), bh.InUse(), bh.Size())
		}
	})
}

func TestBulkheadWait(t *testing.T) {
	t.Run("a slot freed within the wait is taken", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			bh, _ := NewBulkhead("postgres", 1, 50*time.Millisecond)
			if err := bh.Acquire(t.Context()); err != nil {
				t.Fatal(err)
			}
			go func() {
				time.Sleep(30 * time.Millisecond)
				bh.Release()
			}()
			start := time.Now()
			if err := bh.Acquire(t.Context()); err != nil {
				t.Fatalf("slot freed after 30ms of a 50ms wait: %v", err)
			}
			if waited := time.Since(start); waited != 30*time.Millisecond {
				t.Fatalf("waited %v, want 30ms (until the release)", waited)
			}
		})
	})
	t.Run("no slot within the wait fails at the wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			bh, _ := NewBulkhead("postgres", 1, 50*time.Millisecond)
			_ = bh.Acquire(t.Context())
			start := time.Now()
			if err := bh.Acquire(t.Context()); !errors.Is(err, ErrBulkheadFull) {
				t.Fatalf("err %v", err)
			}
			if waited := time.Since(start); waited != 50*time.Millisecond {
				t.Fatalf("gave up after %v, want the 50ms wait", waited)
			}
		})
	})
	t.Run("the wait ends with the caller's context", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			bh, _ := NewBulkhead("postgres", 1, 500*time.Millisecond)
			_ = bh.Acquire(t.Context())
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
			defer cancel()
			start := time.Now()
			if err := bh.Acquire(ctx); !errors.Is(err, ErrBulkheadFull) {
				t.Fatalf("err %v", err)
			}
			if waited := time.Since(start); waited != 20*time.Millisecond {
				t.Fatalf("waited %v past the caller's deadline", waited)
			}
		})
	})
	t.Run("zero wait does not wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			bh, _ := NewBulkhead("openai", 1, 0)
			_ = bh.Acquire(t.Context())
			start := time.Now()
			_ = bh.Acquire(t.Context())
			if time.Since(start) != 0 {
				t.Fatal("a zero-wait bulkhead waited")
			}
		})
	})
}

func TestBulkheadRejectsInvalid(t *testing.T) {
	for _, c := range []struct {
		size int
		wait time.Duration
	}{{0, 0}, {-1, 0}, {1, -time.Millisecond}} {
		if _, err := NewBulkhead("x", c.size, c.wait); !errors.Is(err, ErrInvalidSettings) {
			t.Errorf("NewBulkhead(%d, %v): %v", c.size, c.wait, err)
		}
	}
}

func TestBulkheadDoesNotAllocate(t *testing.T) {
	bh, _ := NewBulkhead("core-api", 1, 0)
	ctx := context.Background()
	acquireRelease := testing.AllocsPerRun(1000, func() {
		if err := bh.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		bh.Release()
	})
	_ = bh.Acquire(ctx)
	reject := testing.AllocsPerRun(1000, func() {
		if err := bh.Acquire(ctx); err == nil {
			t.Fatal("admitted past the limit")
		}
	})
	if acquireRelease != 0 || reject != 0 {
		t.Fatalf("allocs per call: acquire+release %v, fail-fast rejection %v", acquireRelease, reject)
	}
}

func TestBulkheadWakesEveryWaiter(t *testing.T) {
	// Size 2, 10 ms per call: callers get slots in rounds at 0, 10, 20, ...
	// ms. With a 45 ms wait, 10 callers all get one (the last pair after
	// 40 ms); of 12, the last pair's turn (50 ms) is past the wait.
	for _, tt := range []struct{ callers, admitted int }{{10, 10}, {12, 10}} {
		synctest.Test(t, func(t *testing.T) {
			bh, _ := NewBulkhead("postgres", 2, 45*time.Millisecond)
			var ok, full atomic.Int32
			var wg sync.WaitGroup
			for range tt.callers {
				wg.Go(func() {
					if err := bh.Acquire(context.Background()); err != nil {
						full.Add(1)
						return
					}
					ok.Add(1)
					time.Sleep(10 * time.Millisecond)
					bh.Release()
				})
			}
			wg.Wait()
			if int(ok.Load()) != tt.admitted || int(full.Load()) != tt.callers-tt.admitted {
				t.Fatalf("%d callers: %d admitted, %d rejected; want %d admitted", tt.callers, ok.Load(), full.Load(), tt.admitted)
			}
			if bh.InUse() != 0 {
				t.Fatalf("InUse %d at the end", bh.InUse())
			}
		})
	}
}
