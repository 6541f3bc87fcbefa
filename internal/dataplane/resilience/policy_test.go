package resilience

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/dataplane/circuit"
)

// readsOp is core-api reads from the LLD table, with a small bulkhead.
func readsOp() OperationSettings {
	return OperationSettings{Dependency: CoreAPI, Operation: Reads, AttemptCap: 2 * time.Second, MaxAttempts: 3,
		Idempotent: true, Bulkhead: 4, Margin: GatewayMargin, BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}
}

func coreDep() DependencySettings {
	return DependencySettings{Name: CoreAPI, Breaker: &circuit.Settings{WindowSize: 4, MinCalls: 2, OpenDuration: 15 * time.Second}}
}

// holdSlot starts a call that holds a bulkhead slot until release is
// closed, and fails the test unless that call then succeeds.
func holdSlot(t *testing.T, p *Policy, release <-chan struct{}) {
	go func() {
		if err := p.Do(t.Context(), Call{}, func(context.Context, Attempt) error { <-release; return nil }); err != nil {
			t.Errorf("the call holding a bulkhead slot: %v", err)
		}
	}()
}

// newPolicy builds a policy whose jitter always draws the top of its range
// (delay = ceiling), unless opts sets Rand.
func newPolicy(t *testing.T, op OperationSettings, ds DependencySettings, opts Options) *Policy {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Rand == nil {
		opts.Rand = &fixedRand{frac: 1}
	}
	dep, err := NewDependency(ds, opts)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPolicy(dep, op, opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// script answers attempt i with errs[i] (the last one repeats) and records
// what each attempt saw.
type script struct {
	mu    sync.Mutex
	errs  []error
	calls []seen
	block bool // attempts wait for their context to end
}

type seen struct {
	a        Attempt
	at       time.Time
	deadline time.Time
}

func answers(errs ...error) *script { return &script{errs: errs} }

func (s *script) fn(ctx context.Context, a Attempt) error {
	d, _ := ctx.Deadline()
	s.mu.Lock()
	i := len(s.calls)
	s.calls = append(s.calls, seen{a: a, at: time.Now(), deadline: d})
	block := s.block
	s.mu.Unlock()
	if block {
		<-ctx.Done()
		return ctx.Err()
	}
	if len(s.errs) == 0 {
		return nil
	}
	return s.errs[min(i, len(s.errs)-1)]
}

func (s *script) n() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls)
}

func (s *script) gaps() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var g []time.Duration
	for i := 1; i < len(s.calls); i++ {
		g = append(g, s.calls[i].at.Sub(s.calls[i-1].at))
	}
	return g
}

var (
	e503 = &StatusError{Code: 503}
	e500 = &StatusError{Code: 500}
	e404 = &StatusError{Code: 404}
)

func TestPolicyRetryableRules(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		attempts int
	}{
		{"502 is retried", &StatusError{Code: 502}, 3},
		{"503 is retried", e503, 3},
		{"504 is retried", &StatusError{Code: 504}, 3},
		{"429 is retried", &StatusError{Code: 429}, 3},
		{"connection error is retried", &ConnError{Err: errors.New("reset")}, 3},
		{"timeout is retried", fmt.Errorf("read: %w", context.DeadlineExceeded), 3},
		{"500 is not retried", e500, 1},
		{"400 is not retried", &StatusError{Code: 400}, 1},
		{"404 is not retried", e404, 1},
		{"409 is not retried", &StatusError{Code: 409}, 1},
		{"unknown error is not retried", errors.New("decode: bad json"), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newPolicy(t, readsOp(), coreDep(), Options{})
				s := answers(tt.err)
				ctx, cancel := context.WithTimeout(t.Context(), 8*time.Second)
				defer cancel()
				err := p.Do(ctx, Call{}, s.fn)
				if s.n() != tt.attempts {
					t.Fatalf("%d attempts, want %d", s.n(), tt.attempts)
				}
				if !errors.Is(err, tt.err) {
					t.Fatalf("Do returned %v, want the last attempt's error %v", err, tt.err)
				}
				if st := p.Stats(); st.Retries != uint64(tt.attempts-1) { //nolint:gosec // G115: every case makes at least one attempt
					t.Fatalf("Stats.Retries = %d", st.Retries)
				}
			})
		})
	}
}

func TestPolicyReturnsLastError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPolicy(t, readsOp(), coreDep(), Options{})
		third := &StatusError{Code: 504}
		s := answers(e503, &StatusError{Code: 502}, third)
		err := p.Do(t.Context(), Call{}, s.fn)
		var se *StatusError
		if !errors.As(err, &se) || se != third {
			t.Fatalf("Do returned %v, want the third attempt's 504", err)
		}
	})
}

func TestPolicyRetriesCountOnceInTheBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ds := coreDep()
		ds.Breaker.WindowSize, ds.Breaker.MinCalls = 10, 10
		p := newPolicy(t, readsOp(), ds, Options{})
		br := p.Dependency().Breaker
		s := answers(e503)
		_ = p.Do(t.Context(), Call{}, s.fn)
		if snap := br.Snapshot(); s.n() != 3 || snap.Calls != 1 || snap.Failures != 1 {
			t.Fatalf("3 failing attempts of one call: breaker counted %d calls, %d failures", snap.Calls, snap.Failures)
		}
		ok := answers(e503, nil)
		if err := p.Do(t.Context(), Call{}, ok.fn); err != nil {
			t.Fatal(err)
		}
		if snap := br.Snapshot(); snap.Calls != 2 || snap.Failures != 1 {
			t.Fatalf("a call that succeeded on retry: %d calls, %d failures; want 2, 1", snap.Calls, snap.Failures)
		}
		// 4xx answers are successes for the breaker.
		_ = p.Do(t.Context(), Call{}, answers(e404).fn)
		if snap := br.Snapshot(); snap.Calls != 3 || snap.Failures != 1 {
			t.Fatalf("a 404 counted as failure: %+v", snap)
		}
	})
}

func TestPolicyIdempotency(t *testing.T) {
	writes := readsOp()
	writes.Operation, writes.Idempotent = Writes, false
	tests := []struct {
		name     string
		op       OperationSettings
		call     Call
		attempts int
	}{
		{"non-idempotent without key is never retried", writes, Call{}, 1},
		{"an idempotency key makes it retryable", writes, Call{IdempotencyKey: "idem-7f3a"}, 3},
		{"a call declared idempotent is retried", writes, Call{Idempotent: true}, 3},
		{"idempotent operation", readsOp(), Call{}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newPolicy(t, tt.op, coreDep(), Options{})
				s := answers(e503)
				_ = p.Do(t.Context(), tt.call, s.fn)
				if s.n() != tt.attempts {
					t.Fatalf("%d attempts, want %d", s.n(), tt.attempts)
				}
				for _, c := range s.calls {
					if c.a.IdempotencyKey != tt.call.IdempotencyKey {
						t.Fatalf("attempt %d got key %q", c.a.N, c.a.IdempotencyKey)
					}
				}
				if want := uint64(0); tt.attempts == 1 && p.Stats().SkippedNotIdempotent != 1 {
					t.Fatalf("SkippedNotIdempotent = %d, want 1", p.Stats().SkippedNotIdempotent+want)
				}
			})
		})
	}
}

func TestPolicyFullJitterDelays(t *testing.T) {
	tests := []struct {
		name string
		frac float64
		want []time.Duration
	}{
		{"highest draw waits the ceiling min(1s, 100ms·2^n)", 1, []time.Duration{200 * time.Millisecond, 400 * time.Millisecond}},
		{"lowest draw retries at once", 0, []time.Duration{0, 0}},
		{"middle draw", 0.5, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rnd := &fixedRand{frac: tt.frac}
				p := newPolicy(t, readsOp(), coreDep(), Options{Rand: rnd})
				s := answers(e503)
				_ = p.Do(t.Context(), Call{}, s.fn)
				g := s.gaps()
				if len(g) != 2 || g[0] != tt.want[0] || g[1] != tt.want[1] {
					t.Fatalf("gaps between attempts %v, want %v", g, tt.want)
				}
				if rnd.asked[0] != int64(200*time.Millisecond)+1 || rnd.asked[1] != int64(400*time.Millisecond)+1 {
					t.Fatalf("jitter ranges %v", rnd.asked)
				}
			})
		})
	}
}

func TestPolicyHonoursRetryAfter(t *testing.T) {
	tests := []struct {
		name       string
		retryAfter time.Duration
		wantGap    time.Duration
	}{
		{"Retry-After longer than the jitter", 700 * time.Millisecond, 700 * time.Millisecond},
		{"Retry-After shorter than the jitter", 50 * time.Millisecond, 200 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newPolicy(t, readsOp(), coreDep(), Options{})
				s := answers(&StatusError{Code: 429, RetryAfter: tt.retryAfter}, nil)
				if err := p.Do(t.Context(), Call{}, s.fn); err != nil {
					t.Fatal(err)
				}
				if g := s.gaps(); len(g) != 1 || g[0] != tt.wantGap {
					t.Fatalf("gap %v, want %v", g, tt.wantGap)
				}
			})
		})
	}
	t.Run("Retry-After past the deadline skips the retry", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := newPolicy(t, readsOp(), coreDep(), Options{})
			ctx, cancel := context.WithTimeout(t.Context(), 8*time.Second)
			defer cancel()
			s := answers(&StatusError{Code: 429, RetryAfter: 7 * time.Second})
			err := p.Do(ctx, Call{}, s.fn)
			if s.n() != 1 || p.Stats().SkippedDeadline != 1 {
				t.Fatalf("attempts %d, stats %+v", s.n(), p.Stats())
			}
			var se *StatusError
			if !errors.As(err, &se) || se.Code != 429 {
				t.Fatalf("err %v", err)
			}
		})
	})
}

func TestPolicyDeadlineAwareRetry(t *testing.T) {
	// The first attempt fails at once; the first retry would wait 200 ms and
	// may need the 2 s attempt cap: it runs only if 2.2 s remain.
	tests := []struct {
		name     string
		budget   time.Duration
		attempts int
	}{
		{"delay + cap exactly fits", 2200 * time.Millisecond, 2},
		{"delay + cap passes the deadline by 1ns", 2200*time.Millisecond - time.Nanosecond, 1},
		{"plenty of budget", 8 * time.Second, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newPolicy(t, readsOp(), coreDep(), Options{})
				ctx, cancel := context.WithTimeout(t.Context(), tt.budget)
				defer cancel()
				s := answers(e503)
				err := p.Do(ctx, Call{}, s.fn)
				if s.n() != tt.attempts {
					t.Fatalf("%d attempts, want %d", s.n(), tt.attempts)
				}
				if !errors.Is(err, e503) {
					t.Fatalf("err %v, want the last 503", err)
				}
				if tt.attempts < 3 && p.Stats().SkippedDeadline != 1 {
					t.Fatalf("SkippedDeadline = %d", p.Stats().SkippedDeadline)
				}
			})
		})
	}
}

func TestPolicyRetryBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ds := coreDep()
		ds.Breaker.WindowSize, ds.Breaker.MinCalls = 100, 100 // keep the breaker out of this test
		ds.Budget = BudgetSettings{Capacity: 3}
		p := newPolicy(t, readsOp(), ds, Options{})
		budget := p.Dependency().Budget

		s := answers(e503)
		_ = p.Do(t.Context(), Call{}, s.fn)
		if s.n() != 3 || budget.Tokens() != 1 {
			t.Fatalf("first call: %d attempts, %v tokens left; want 3 and 1", s.n(), budget.Tokens())
		}
		s = answers(e503)
		_ = p.Do(t.Context(), Call{}, s.fn)
		if s.n() != 2 || budget.Tokens() != 0 {
			t.Fatalf("second call: %d attempts, %v tokens; want 2 and 0", s.n(), budget.Tokens())
		}
		s = answers(e503)
		err := p.Do(t.Context(), Call{}, s.fn)
		if s.n() != 1 || p.Stats().SkippedBudget != 2 || budget.Denied() != 2 || !errors.Is(err, e503) {
			t.Fatalf("exhausted budget: %d attempts, stats %+v, err %v", s.n(), p.Stats(), err)
		}
		for range 10 {
			if err := p.Do(t.Context(), Call{}, answers().fn); err != nil {
				t.Fatal(err)
			}
		}
		s = answers(e503)
		_ = p.Do(t.Context(), Call{}, s.fn)
		if s.n() != 2 {
			t.Fatalf("10 successes should pay for exactly one retry; got %d attempts", s.n())
		}
	})
}

func TestPolicyAttemptTimeout(t *testing.T) {
	tests := []struct {
		name   string
		budget time.Duration // 0: no deadline
		want   time.Duration
	}{
		{"capped by the attempt cap", 8 * time.Second, 2 * time.Second},
		{"bounded by remaining - margin", time.Second, 850 * time.Millisecond},
		{"no request deadline: the cap", 0, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newPolicy(t, readsOp(), coreDep(), Options{})
				ctx := t.Context()
				if tt.budget > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.budget)
					defer cancel()
				}
				start := time.Now()
				s := answers(nil)
				if err := p.Do(ctx, Call{}, s.fn); err != nil {
					t.Fatal(err)
				}
				c := s.calls[0]
				if got := c.deadline.Sub(start); got != tt.want || c.a.Timeout != tt.want {
					t.Fatalf("attempt deadline in %v (Attempt.Timeout %v), want %v", got, c.a.Timeout, tt.want)
				}
				if tt.budget > 0 && !c.a.Deadline.Equal(start.Add(tt.budget-GatewayMargin)) {
					t.Fatalf("Attempt.Deadline %v, want the request deadline less the margin", c.a.Deadline)
				}
				if tt.budget == 0 && !c.a.Deadline.IsZero() {
					t.Fatalf("Attempt.Deadline %v without a request deadline", c.a.Deadline)
				}
			})
		})
	}
}

func TestPolicyAttemptTimeoutIsTypedAndRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPolicy(t, readsOp(), coreDep(), Options{})
		ctx, cancel := context.WithTimeout(t.Context(), 8*time.Second)
		defer cancel()
		s := &script{block: true}
		start := time.Now()
		err := p.Do(ctx, Call{}, s.fn)
		if !errors.Is(err, ErrAttemptTimeout) || !errors.Is(err, context.DeadlineExceeded) || KindOf(err) != KindAttemptTimeout {
			t.Fatalf("err %v, want AttemptTimeout wrapping the attempt's error", err)
		}
		// 2s, wait 200ms, 2s, wait 400ms, 2s: 6.6s, inside the 8s budget.
		if s.n() != 3 || time.Since(start) != 6600*time.Millisecond {
			t.Fatalf("%d attempts over %v", s.n(), time.Since(start))
		}
		if st := p.Stats(); st.AttemptTimeouts != 3 {
			t.Fatalf("AttemptTimeouts = %d", st.AttemptTimeouts)
		}
		if snap := p.Dependency().Breaker.Snapshot(); snap.Failures != 1 {
			t.Fatalf("timeouts must count as one failure: %+v", snap)
		}
	})
}

func TestPolicyLayerOrder(t *testing.T) {
	t.Run("deadline before bulkhead: a spent budget takes no slot", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := newPolicy(t, readsOp(), coreDep(), Options{})
			for range 4 { // fill the bulkhead
				_ = p.Bulkhead().Acquire(t.Context())
			}
			ctx, cancel := context.WithTimeout(t.Context(), GatewayMargin) // remaining - margin = 0
			defer cancel()
			s := answers()
			err := p.Do(ctx, Call{}, s.fn)
			if !errors.Is(err, ErrDeadlineExceeded) || s.n() != 0 {
				t.Fatalf("err %v after %d attempts, want DeadlineExceeded before the bulkhead", err, s.n())
			}
			if p.Bulkhead().Rejected() != 0 || p.Stats().RejectedDeadline != 1 {
				t.Fatalf("bulkhead consulted: %d rejections", p.Bulkhead().Rejected())
			}
		})
	})
	t.Run("an expired context fails with DeadlineExceeded", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := newPolicy(t, readsOp(), coreDep(), Options{})
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			time.Sleep(2 * time.Second)
			err := p.Do(ctx, Call{}, answers().fn)
			if !errors.Is(err, ErrDeadlineExceeded) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err %v", err)
			}
			if snap := p.Dependency().Breaker.Snapshot(); snap.Calls != 0 {
				t.Fatal("a call that never started was counted by the breaker")
			}
		})
	})
	t.Run("a canceled caller is reported as such", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := newPolicy(t, readsOp(), coreDep(), Options{})
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			err := p.Do(ctx, Call{}, answers().fn)
			if !errors.Is(err, context.Canceled) || KindOf(err) != 0 {
				t.Fatalf("err %v", err)
			}
		})
	})
	t.Run("bulkhead before breaker: a full bulkhead fails without asking the breaker", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := newPolicy(t, readsOp(), coreDep(), Options{})
			br := p.Dependency().Breaker
			br.ForceOpen()
			for range 4 {
				_ = p.Bulkhead().Acquire(t.Context())
			}
			err := p.Do(t.Context(), Call{}, answers().fn)
			if !errors.Is(err, ErrBulkheadFull) || br.Snapshot().Rejected != 0 {
				t.Fatalf("err %v, breaker rejections %d", err, br.Snapshot().Rejected)
			}
			if p.Stats().RejectedBulkhead != 1 {
				t.Fatalf("stats %+v", p.Stats())
			}
		})
	})
	t.Run("breaker open: CircuitOpen with the remaining open time, nothing called", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := newPolicy(t, readsOp(), coreDep(), Options{})
			for range 2 {
				_ = p.Do(t.Context(), Call{}, answers(e500).fn)
			}
			time.Sleep(5 * time.Second)
			s := answers()
			err := p.Do(t.Context(), Call{}, s.fn)
			var re *Error
			if !errors.As(err, &re) || re.Kind != KindCircuitOpen || re.RetryAfter != 10*time.Second || re.Dependency != CoreAPI {
				t.Fatalf("err %#v", err)
			}
			if !errors.Is(err, circuit.ErrOpen) || s.n() != 0 || p.Bulkhead().InUse() != 0 {
				t.Fatalf("err %v, %d attempts, %d slots held", err, s.n(), p.Bulkhead().InUse())
			}
			if p.Stats().RejectedCircuit != 1 {
				t.Fatalf("stats %+v", p.Stats())
			}
		})
	})
}

func TestPolicyPanicReleasesAndCounts(t *testing.T) {
	p := newPolicy(t, readsOp(), coreDep(), Options{})
	for range 2 {
		func() {
			defer func() {
				if r := recover(); r != "downstream bug" {
					t.Fatalf("recovered %v", r)
				}
			}()
			_ = p.Do(context.Background(), Call{}, func(context.Context, Attempt) error { panic("downstream bug") })
		}()
	}
	if p.Bulkhead().InUse() != 0 {
		t.Fatalf("a panicking call kept its bulkhead slot")
	}
	if snap := p.Dependency().Breaker.Snapshot(); snap.State != circuit.Open || snap.Failures != 2 {
		t.Fatalf("panics not recorded as failures: %+v", snap)
	}
}

func TestPolicyCallerCancellationIsNotAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPolicy(t, readsOp(), coreDep(), Options{})
		ctx, cancel := context.WithCancel(t.Context())
		s := &script{block: true}
		go func() {
			time.Sleep(300 * time.Millisecond)
			cancel()
		}()
		err := p.Do(ctx, Call{}, s.fn)
		if !errors.Is(err, context.Canceled) || KindOf(err) == KindAttemptTimeout {
			t.Fatalf("err %v", err)
		}
		if s.n() != 1 {
			t.Fatalf("retried after the caller left: %d attempts", s.n())
		}
		if snap := p.Dependency().Breaker.Snapshot(); snap.Calls != 0 {
			t.Fatalf("the caller's cancellation counted by the breaker: %+v", snap)
		}
	})
}

func TestPolicyAppliesTheOverride(t *testing.T) {
	var forced bool
	var mu sync.Mutex
	src := circuit.ForceSourceFunc(func(_ context.Context, dep string) (breaker.Force, error) {
		mu.Lock()
		defer mu.Unlock()
		if dep != CoreAPI {
			t.Errorf("override read for %q", dep)
		}
		return breaker.Force{Active: forced}, nil
	})
	synctest.Test(t, func(t *testing.T) {
		p := newPolicy(t, readsOp(), coreDep(), Options{Force: src})
		if err := p.Do(t.Context(), Call{}, answers().fn); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		forced = true
		mu.Unlock()
		if err := p.Do(t.Context(), Call{}, answers().fn); err != nil {
			t.Fatalf("the override was re-read before 5s: %v", err)
		}
		time.Sleep(5 * time.Second)
		s := answers()
		err := p.Do(t.Context(), Call{}, s.fn)
		if !errors.Is(err, ErrCircuitOpen) || !errors.Is(err, circuit.ErrForcedOpen) || s.n() != 0 {
			t.Fatalf("forced dependency: err %v, %d attempts", err, s.n())
		}
	})
}

func TestPolicyWithoutBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		op := OperationSettings{Dependency: Postgres, AttemptCap: 3 * time.Second, MaxAttempts: 1, Bulkhead: 2,
			BulkheadWait: 500 * time.Millisecond, Margin: InnerMargin}
		p := newPolicy(t, op, DependencySettings{Name: Postgres}, Options{})
		if p.Dependency().Breaker != nil {
			t.Fatal("postgres got a breaker")
		}
		for range 10 {
			_ = p.Do(t.Context(), Call{}, answers(e500).fn)
		}
		if err := p.Do(t.Context(), Call{}, answers().fn); err != nil {
			t.Fatalf("a dependency without a breaker must never fail fast: %v", err)
		}
		// Pool of 2 with a 0.5 s wait: a third statement waits for a connection.
		release := make(chan struct{})
		for range 2 {
			holdSlot(t, p, release)
		}
		synctest.Wait()
		go func() { time.Sleep(200 * time.Millisecond); close(release) }()
		start := time.Now()
		if err := p.Do(t.Context(), Call{}, answers().fn); err != nil {
			t.Fatalf("third statement: %v", err)
		}
		if time.Since(start) != 200*time.Millisecond {
			t.Fatalf("waited %v for a pooled connection, want 200ms", time.Since(start))
		}
	})
}

func TestPolicyHalfOpenAdmitsProbesOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		op := readsOp()
		op.Bulkhead = 16
		p := newPolicy(t, op, coreDep(), Options{})
		for range 2 {
			_ = p.Do(t.Context(), Call{}, answers(e500).fn)
		}
		time.Sleep(15 * time.Second)
		release := make(chan struct{})
		results := make(chan error, 10)
		for range 10 {
			go func() {
				results <- p.Do(t.Context(), Call{}, func(context.Context, Attempt) error { <-release; return nil })
			}()
		}
		synctest.Wait()
		if in := p.Bulkhead().InUse(); in != 3 {
			t.Fatalf("%d calls running in half-open, want the 3 probes", in)
		}
		close(release)
		var ok, open int
		for range 10 {
			switch err := <-results; {
			case err == nil:
				ok++
			case errors.Is(err, ErrCircuitOpen) && errors.Is(err, circuit.ErrTooManyProbes):
				open++
			default:
				t.Fatalf("unexpected %v", err)
			}
		}
		if ok != 3 || open != 7 || p.Dependency().Breaker.State() != circuit.Closed {
			t.Fatalf("%d probes succeeded, %d failed fast, state %v", ok, open, p.Dependency().Breaker.State())
		}
	})
}

func TestPolicyPropagatesTheDeadlineHeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPolicy(t, readsOp(), coreDep(), Options{})
		ctx, cancel := context.WithTimeout(t.Context(), 8*time.Second)
		defer cancel()
		deadline, _ := ctx.Deadline()
		var sent string
		err := p.Do(ctx, Call{}, func(ctx context.Context, a Attempt) error {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://core-api.invalid/v1/search", nil)
			SetDeadlineHeader(req.Header, a.Deadline, 0)
			sent = req.Header.Get(HeaderDeadline)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if want := FormatDeadline(deadline.Add(-GatewayMargin)); sent != want {
			t.Fatalf("X-Request-Deadline %q, want %q (deadline - 150ms)", sent, want)
		}
	})
}

func TestNewPolicyValidates(t *testing.T) {
	dep := &Dependency{Name: CoreAPI}
	bad := []OperationSettings{
		{Dependency: CoreAPI, AttemptCap: 0, MaxAttempts: 1, Bulkhead: 1},
		{Dependency: CoreAPI, AttemptCap: time.Second, MaxAttempts: 0, Bulkhead: 1},
		{Dependency: CoreAPI, AttemptCap: time.Second, MaxAttempts: 1, Bulkhead: 0},
		{Dependency: CoreAPI, AttemptCap: time.Second, MaxAttempts: 1, Bulkhead: 1, Margin: -1},
		{Dependency: CoreAPI, AttemptCap: time.Second, MaxAttempts: 1, Bulkhead: 1, BaseDelay: time.Second, MaxDelay: time.Millisecond},
		{Dependency: OpenAI, AttemptCap: time.Second, MaxAttempts: 1, Bulkhead: 1},
	}
	for _, s := range bad {
		if _, err := NewPolicy(dep, s, Options{}); !errors.Is(err, ErrInvalidSettings) {
			t.Errorf("NewPolicy(%+v): %v", s, err)
		}
	}
	if _, err := NewPolicy(nil, readsOp(), Options{}); !errors.Is(err, ErrInvalidSettings) {
		t.Errorf("nil dependency: %v", err)
	}
	p, err := NewPolicy(dep, OperationSettings{AttemptCap: time.Second, MaxAttempts: 1, Bulkhead: 1}, Options{})
	if err != nil || p.Operation() != "" || p.Dependency() != dep {
		t.Errorf("settings without a dependency name take the dependency's: %v", err)
	}
}

func TestPolicyTimeSpentBeforeTheAttemptCounts(t *testing.T) {
	pgOp := OperationSettings{Dependency: Postgres, AttemptCap: 3 * time.Second, MaxAttempts: 1, Bulkhead: 1,
		BulkheadWait: 500 * time.Millisecond, Margin: InnerMargin}
	t.Run("a bulkhead wait shortens the attempt", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := newPolicy(t, pgOp, DependencySettings{Name: Postgres}, Options{})
			release := make(chan struct{})
			holdSlot(t, p, release)
			synctest.Wait()
			go func() { time.Sleep(400 * time.Millisecond); close(release) }()
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			deadline, _ := ctx.Deadline()
			s := answers()
			if err := p.Do(ctx, Call{}, s.fn); err != nil {
				t.Fatal(err)
			}
			// min(1s - 400ms waited - 100ms margin, 3s) from the end of the wait.
			if c := s.calls[0]; c.a.Timeout != 500*time.Millisecond || !c.deadline.Equal(deadline.Add(-InnerMargin)) {
				t.Fatalf("attempt timeout %v ending %v, want 500ms ending at the deadline less the margin",
					c.a.Timeout, deadline.Sub(c.deadline))
			}
		})
	})
	t.Run("a budget spent waiting for the bulkhead starts nothing", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := newPolicy(t, pgOp, DependencySettings{Name: Postgres}, Options{})
			release := make(chan struct{})
			holdSlot(t, p, release)
			synctest.Wait()
			go func() { time.Sleep(460 * time.Millisecond); close(release) }()
			ctx, cancel := context.WithTimeout(t.Context(), 550*time.Millisecond)
			defer cancel()
			s := answers()
			err := p.Do(ctx, Call{}, s.fn)
			if !errors.Is(err, ErrDeadlineExceeded) || s.n() != 0 {
				t.Fatalf("err %v after %d attempts; want DeadlineExceeded and no attempt", err, s.n())
			}
		})
	})
	t.Run("the override is read before taking a bulkhead slot", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var p *Policy
			src := circuit.ForceSourceFunc(func(context.Context, string) (breaker.Force, error) {
				if in := p.Bulkhead().InUse(); in != 0 {
					t.Errorf("override read while holding %d bulkhead slots", in)
				}
				time.Sleep(300 * time.Millisecond) // a slow store
				return breaker.Force{}, nil
			})
			p = newPolicy(t, readsOp(), coreDep(), Options{Force: src})
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			deadline, _ := ctx.Deadline()
			s := answers()
			if err := p.Do(ctx, Call{}, s.fn); err != nil {
				t.Fatal(err)
			}
			if c := s.calls[0]; c.a.Timeout != 550*time.Millisecond || !c.deadline.Equal(deadline.Add(-GatewayMargin)) {
				t.Fatalf("after a 300ms override read: attempt timeout %v, want min(1s-300ms-150ms, 2s) = 550ms", c.a.Timeout)
			}
		})
	})
}
