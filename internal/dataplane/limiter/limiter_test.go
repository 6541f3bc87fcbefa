package limiter_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/dataplane/limiter"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/ratelimit/ratelimittest"
	"github.com/kosha-platform/koshactl/internal/store"
)

// Both variants agree on every sequential (uncontended, same-clock) history.
func TestTakeSequential(t *testing.T) {
	t.Parallel()
	for _, v := range variants {
		t.Run(v.String(), func(t *testing.T) {
			s := ratelimittest.NewMemStore()
			clk := clocktest.NewFake(epoch)
			l := newLimiter(t, s, v, clk)

			d := take(t, l, "alice")
			if !d.Allowed || d.Outcome != limiter.OutcomeAdmitted || d.Remaining != 19 || d.CASRetries != 0 || d.FailOpen {
				t.Fatalf("first take on a missing bucket: %+v", d)
			}
			b := ratelimittest.Stored(t, s, "alice")
			if b.Tokens != 19 || b.UpdatedAtMs != t0 || b.TTL != t0/1000+3600 {
				t.Fatalf("created item: %+v", b)
			}

			// 19 more in the same instant. (The fixed variant stamps each one
			// a millisecond after the last, earning no refill for it.)
			for i := range 19 {
				if d := take(t, l, "alice"); !d.Allowed {
					t.Fatalf("take %d of the burst refused: %+v", i+2, d)
				}
			}
			d = take(t, l, "alice")
			if d.Allowed || d.Outcome != limiter.OutcomeDenied || d.Remaining >= 1 {
				t.Fatalf("21st take in one instant: %+v", d)
			}
			if v == variantLLD && d.RetryAfter != time.Second {
				t.Errorf("retry after = %v, want 1s", d.RetryAfter)
			}
			if v == variantFixed && (d.RetryAfter < time.Second || d.RetryAfter > time.Second+20*time.Millisecond) {
				t.Errorf("retry after = %v, want 1s plus the stamps ahead of the clock", d.RetryAfter)
			}

			// 1.5 s later: one token admitted, half a token left, then refused
			// for 500 ms.
			clk.Advance(1500 * time.Millisecond)
			if v == variantFixed {
				clk.Advance(19 * time.Millisecond) // the burst's stamps ran 19 ms ahead
			}
			d = take(t, l, "alice")
			if !d.Allowed || d.Remaining != 0.5 {
				t.Fatalf("after 1.5 s: %+v", d)
			}
			d = take(t, l, "alice")
			if d.Allowed || d.RetryAfter != 500*time.Millisecond || d.Remaining != 0.5 {
				t.Fatalf("right after: %+v", d)
			}

			// An hour idle: full again, and other clients never shared it.
			clk.Advance(time.Hour)
			if d := take(t, l, "alice"); d.Remaining != 19 {
				t.Errorf("after an hour: %+v", d)
			}
			if d := take(t, l, "bob"); d.Remaining != 19 {
				t.Errorf("another client: %+v", d)
			}
		})
	}
}

func TestTakeDeniedWritesNothing(t *testing.T) {
	t.Parallel()
	for _, v := range variants {
		s := ratelimittest.NewMemStore()
		s.Set(ratelimit.Bucket{Client: "c", Tokens: 0.2, UpdatedAtMs: t0}.Item())
		l := newLimiter(t, s, v, clocktest.NewFake(epoch.Add(100*time.Millisecond)))
		d := take(t, l, "c")
		if d.Allowed || d.RetryAfter != 700*time.Millisecond {
			t.Errorf("%s: %+v", v, d)
		}
		if _, puts := s.Counts(); puts != 0 {
			t.Errorf("%s: a refusal wrote %d times", v, puts)
		}
	}
}

func TestTakeCustomLimits(t *testing.T) {
	t.Parallel()
	s := ratelimittest.NewMemStore()
	clk := clocktest.NewFake(epoch)
	l, err := limiter.New(s, limiter.Config{Limits: ratelimit.Limits{Capacity: 2, RefillPerSecond: 4}, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	admitted := 0
	for range 5 {
		if take(t, l, "c").Allowed {
			admitted++
		}
	}
	if admitted != 2 {
		t.Fatalf("capacity 2 admitted %d", admitted)
	}
	clk.Advance(260 * time.Millisecond) // 4/s: one token per 250 ms (stamps ran 1 ms ahead)
	if d := take(t, l, "c"); !d.Allowed {
		t.Errorf("after 260 ms at 4/s: %+v", d)
	}
	if _, err := limiter.New(s, limiter.Config{Limits: ratelimit.Limits{Capacity: 0.5}}); !errors.Is(err, ratelimit.ErrInvalidLimits) {
		t.Errorf("capacity 0.5 accepted: %v", err)
	}
}

// Store failures fail open (the degradation matrix), for both variants; the
// cause is kept for metrics and logs.
func TestTakeFailsOpenOnStoreErrors(t *testing.T) {
	t.Parallel()
	for _, v := range variants {
		for name, setup := range map[string]func(*ratelimittest.MemStore){
			"get fails": func(m *ratelimittest.MemStore) { m.FailGet = ratelimittest.ErrOutage },
			"put fails": func(m *ratelimittest.MemStore) { m.FailPut = ratelimittest.ErrOutage },
			"malformed item": func(m *ratelimittest.MemStore) {
				m.Set(store.Item{"pk": "rl#c", "tokens": "lots", "updated_at": t0})
			},
		} {
			t.Run(v.String()+"/"+name, func(t *testing.T) {
				s := ratelimittest.NewMemStore()
				setup(s)
				d := take(t, newLimiter(t, s, v, clocktest.NewFake(epoch)), "c")
				if !d.Allowed || !d.FailOpen || d.Outcome != limiter.OutcomeFailOpenError || d.Cause == nil {
					t.Fatalf("decision: %+v", d)
				}
				if !errors.Is(d.Cause, store.ErrUnavailable) && !errors.Is(d.Cause, ratelimit.ErrMalformedBucket) {
					t.Errorf("cause = %v", d.Cause)
				}
			})
		}
	}
}

func TestTakeErrors(t *testing.T) {
	t.Parallel()
	s := ratelimittest.NewMemStore()
	l := newLimiter(t, s, variantFixed, clocktest.NewFake(epoch))
	if _, err := l.Take(context.Background(), "bad id"); !errors.Is(err, ratelimit.ErrInvalidClient) {
		t.Errorf("bad id: %v", err)
	}
	if g, p := s.Counts(); g+p != 0 {
		t.Errorf("a bad client id touched the store (%d gets, %d puts)", g, p)
	}
	// A canceled request is not failed open: there is no one to answer.
	s.FailGet = context.Canceled
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d, err := l.Take(ctx, "c")
	if !errors.Is(err, context.Canceled) || d.Allowed {
		t.Errorf("canceled take: %+v, %v", d, err)
	}
}

func TestObserverSeesEveryDecision(t *testing.T) {
	t.Parallel()
	s := ratelimittest.NewMemStore()
	var mu sync.Mutex
	counts := map[string]int{}
	obs := limiter.ObserverFunc(func(client string, d limiter.Decision) {
		mu.Lock()
		counts[client+"/"+d.Outcome.String()]++
		mu.Unlock()
	})
	l, err := limiter.New(s, limiter.Config{Limits: ratelimit.Limits{Capacity: 2}, Clock: clocktest.NewFake(epoch), Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		take(t, l, "c")
	}
	s.FailGet = ratelimittest.ErrOutage
	take(t, l, "c")
	_, _ = l.Take(context.Background(), "not valid!")
	want := map[string]int{"c/admitted": 2, "c/denied": 1, "c/fail_open_error": 1}
	if len(counts) != len(want) {
		t.Fatalf("observed %v, want %v", counts, want)
	}
	for k, n := range want {
		if counts[k] != n {
			t.Errorf("observed %v, want %v", counts, want)
		}
	}
}

// The fixed variant uses the current item a refusal carries instead of
// re-reading it, when the backend sends it.
func TestFixedUsesCurrentFromRefusal(t *testing.T) {
	t.Parallel()
	s := ratelimittest.NewMemStore()
	s.ReturnCurrent = true
	s.Set(ratelimit.Bucket{Client: "c", Tokens: 10, UpdatedAtMs: t0}.Item())
	inner := &ratelimittest.Interfering{MemStore: s, OnGet: func() {
		// Another taker writes between our read and our write, once.
		s.Set(ratelimit.Bucket{Client: "c", Tokens: 9, UpdatedAtMs: t0 + 1}.Item())
	}}
	d := take(t, newLimiter(t, inner, variantFixed, clocktest.NewFake(epoch)), "c")
	if !d.Allowed || d.CASRetries != 1 || d.Remaining != 8 {
		t.Fatalf("decision: %+v", d)
	}
	if gets, _ := s.Counts(); gets != 1 {
		t.Errorf("%d reads, want 1 (the refusal carried the item)", gets)
	}
	if b := ratelimittest.Stored(t, s, "c"); b.UpdatedAtMs != t0+2 || b.Tokens != 8 {
		t.Errorf("stored %+v", b)
	}
}
