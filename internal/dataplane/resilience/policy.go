package resilience

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/dataplane/circuit"
)

// Dependency is the state shared by every operation on one downstream: its
// breaker (and the watcher applying the override to it) and its retry
// budget. core-api reads and writes, for instance, are two policies on one
// Dependency, so they open, are forced and ration retries together.
type Dependency struct {
	// Name is the dependency's name ("core-api").
	Name string
	// Breaker guards the dependency. Nil means no breaker (PostgreSQL in the
	// design: n/a).
	Breaker *circuit.Breaker
	// Force applies the fleet-wide override to Breaker. Nil means no
	// override is watched.
	Force *circuit.ForceWatcher
	// Budget rations retries. Nil means retries are limited only by the
	// attempt count and the deadline.
	Budget *RetryBudget
}

// Open reports whether the dependency's breaker rejects every call right now
// (open or forced open), syncing the override first. A dependency without a
// breaker is never open.
func (d *Dependency) Open(ctx context.Context) bool {
	if d.Breaker == nil {
		return false
	}
	if d.Force != nil {
		d.Force.Sync(ctx)
	}
	return d.Breaker.State().Rejecting()
}

// Call describes one logical call for the retry layer.
type Call struct {
	// Idempotent declares the call safe to repeat even when the policy's
	// operation is not (a PUT on a writes policy).
	Idempotent bool
	// IdempotencyKey, when set, makes a non-idempotent call safe to retry:
	// the dependency deduplicates on it. It is handed to every attempt.
	IdempotencyKey string
}

// Attempt tells an [AttemptFunc] about the attempt it runs.
type Attempt struct {
	// N is the attempt number, from 1.
	N int
	// Deadline is the deadline to propagate downstream as
	// X-Request-Deadline (the request deadline less the hop's margin), or
	// zero when the request has none. See [SetDeadlineHeader].
	Deadline time.Time
	// Timeout is this attempt's timeout, min(remaining - margin, attempt
	// cap); the attempt's context ends after it.
	Timeout time.Duration
	// IdempotencyKey is the call's key, to send with the request.
	IdempotencyKey string
}

// AttemptFunc performs one attempt of a call. It must honor ctx, whose
// deadline is the attempt's timeout, and report the dependency's answer as
// an error the layers can classify (see [Classify]): a *[StatusError] for an
// error status, a *[ConnError] or the net error for a connection failure.
// An attempt that returns nil after its timeout counts as a success.
type AttemptFunc func(ctx context.Context, a Attempt) error

// Stats counts what a policy did besides succeeding. All counters are
// cumulative.
type Stats struct {
	// Retries counts attempts after the first.
	Retries uint64
	// AttemptTimeouts counts attempts cut by their per-attempt timeout.
	AttemptTimeouts uint64
	// RejectedDeadline counts calls refused because the budget was spent.
	RejectedDeadline uint64
	// RejectedBulkhead counts calls refused by a full bulkhead.
	RejectedBulkhead uint64
	// RejectedCircuit counts calls refused by the breaker.
	RejectedCircuit uint64
	// SkippedNotIdempotent counts retryable failures not retried because
	// the call was not safe to repeat.
	SkippedNotIdempotent uint64
	// SkippedDeadline counts retries skipped because delay + attempt cap
	// would pass the deadline.
	SkippedDeadline uint64
	// SkippedBudget counts retries refused by the empty retry budget.
	SkippedBudget uint64
}

type stats struct {
	retries, attemptTimeouts                             atomic.Uint64
	rejectedDeadline, rejectedBulkhead, rejectedCircuit  atomic.Uint64
	skippedNotIdempotent, skippedDeadline, skippedBudget atomic.Uint64
}

// Policy runs calls to one downstream operation through the design's layers,
// outer to inner:
//
//  1. deadline: nothing starts if the request's budget is spent
//     ([ErrDeadlineExceeded]);
//  2. bulkhead: a capped number of concurrent calls, failing fast when full
//     ([ErrBulkheadFull]);
//  3. circuit breaker: refused while open, forced open, or half-open with
//     its probes taken ([ErrCircuitOpen]); the outcome of the whole logical
//     call, retries included, is counted once;
//  4. retry: full-jitter backoff, only for retryable errors of calls safe to
//     repeat, within the retry budget and the deadline; returns the last
//     error;
//  5. attempt timeout: each attempt gets min(remaining - margin, attempt cap)
//     ([ErrAttemptTimeout]).
//
// A Policy is safe for concurrent use.
type Policy struct {
	dep         *Dependency
	operation   string
	clock       clock.Clock
	logger      *slog.Logger
	bulkhead    *Bulkhead
	backoff     Backoff
	maxAttempts int
	attemptCap  time.Duration
	margin      time.Duration
	idempotent  bool
	stats       stats
}

// Options carry what policies and dependencies are built with besides their
// settings. Every zero field has a default.
type Options struct {
	// Clock tells the time for deadlines, the breaker and the override
	// cache. Nil means the wall clock. Request deadlines are context
	// deadlines and timers (attempt timeouts, backoff sleeps, bulkhead waits)
	// are the runtime's, so a policy's clock must read the runtime's time:
	// the wall clock, or inside a testing/synctest bubble the bubble's. A
	// clocktest.Fake suits the breaker and the override cache on their own.
	Clock clock.Clock
	// Logger receives the layers' structured events. Nil means
	// slog.Default().
	Logger *slog.Logger
	// Rand is the backoff jitter source. Nil means math/rand/v2's.
	Rand Rand
	// Gauge receives every breaker's state (the breaker_state gauge).
	Gauge circuit.GaugeSetter
	// OnStateChange is called on every breaker state change.
	OnStateChange func(circuit.Transition)
	// Force reads the forced_open overrides. Nil means no override is
	// watched.
	Force circuit.ForceSource
}

func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Rand == nil {
		o.Rand = globalRand{}
	}
	return o
}

// NewPolicy returns the policy of operation s on dependency dep. s.Dependency
// must name dep.
func NewPolicy(dep *Dependency, s OperationSettings, opts Options) (*Policy, error) {
	if dep == nil {
		return nil, fmt.Errorf("new policy %s: nil dependency: %w", s.key(), ErrInvalidSettings)
	}
	if s.Dependency == "" {
		s.Dependency = dep.Name
	}
	if s.Dependency != dep.Name {
		return nil, fmt.Errorf("new policy %s: settings are for %q, dependency is %q: %w", s.key(), s.Dependency, dep.Name, ErrInvalidSettings)
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	bh, err := NewBulkhead(dep.Name, s.Bulkhead, s.BulkheadWait)
	if err != nil {
		return nil, err
	}
	return &Policy{
		dep:         dep,
		operation:   s.Operation,
		clock:       opts.Clock,
		logger:      opts.Logger,
		bulkhead:    bh,
		backoff:     Backoff{Base: s.BaseDelay, Cap: s.MaxDelay, Rand: opts.Rand},
		maxAttempts: s.MaxAttempts,
		attemptCap:  s.AttemptCap,
		margin:      s.Margin,
		idempotent:  s.Idempotent,
	}, nil
}

// Dependency returns the dependency the policy calls.
func (p *Policy) Dependency() *Dependency { return p.dep }

// Operation returns the operation name ("reads"), "" for a dependency with
// a single profile.
func (p *Policy) Operation() string { return p.operation }

// Bulkhead returns the policy's bulkhead, for gauges.
func (p *Policy) Bulkhead() *Bulkhead { return p.bulkhead }

// Stats returns the policy's counters.
func (p *Policy) Stats() Stats {
	s := &p.stats
	return Stats{
		Retries: s.retries.Load(), AttemptTimeouts: s.attemptTimeouts.Load(),
		RejectedDeadline: s.rejectedDeadline.Load(), RejectedBulkhead: s.rejectedBulkhead.Load(),
		RejectedCircuit: s.rejectedCircuit.Load(), SkippedNotIdempotent: s.skippedNotIdempotent.Load(),
		SkippedDeadline: s.skippedDeadline.Load(), SkippedBudget: s.skippedBudget.Load(),
	}
}

// Do runs one logical call through the layers and returns nil, a typed
// *[Error] from a layer that failed fast, or the last attempt's error. ctx's
// deadline is the request deadline. If fn panics, the bulkhead slot is
// released and the breaker records a failure before the panic continues.
func (p *Policy) Do(ctx context.Context, call Call, fn AttemptFunc) error {
	now := p.clock.Now()
	deadline, hasDeadline := ctx.Deadline()
	if err := ctx.Err(); err != nil {
		p.stats.rejectedDeadline.Add(1)
		if errors.Is(err, context.Canceled) {
			return fmt.Errorf("call %s: %w", p.dep.Name, err)
		}
		return &Error{Kind: KindDeadlineExceeded, Dependency: p.dep.Name, Err: err}
	}
	if hasDeadline && AttemptTimeout(deadline.Sub(now), p.margin, p.attemptCap) <= 0 {
		p.stats.rejectedDeadline.Add(1)
		return &Error{Kind: KindDeadlineExceeded, Dependency: p.dep.Name, Err: context.DeadlineExceeded}
	}

	// The override read (at most one per refresh interval, bounded by its
	// read timeout) happens before the bulkhead, so it never holds a slot.
	br := p.dep.Breaker
	read := br != nil && p.dep.Force != nil && p.dep.Force.Sync(ctx)

	waited, err := p.bulkhead.acquire(ctx)
	if err != nil {
		p.stats.rejectedBulkhead.Add(1)
		return err
	}
	defer p.bulkhead.Release()
	if read || waited {
		now = p.clock.Now() // the attempt timeout counts from here
	}

	if br == nil {
		return p.attempts(ctx, call, fn, now, deadline, hasDeadline)
	}
	permit, err := br.Allow()
	if err != nil {
		p.stats.rejectedCircuit.Add(1)
		return &Error{Kind: KindCircuitOpen, Dependency: p.dep.Name, RetryAfter: br.RemainingOpen(), Err: err}
	}
	finished := false
	defer func() {
		if !finished { // fn panicked
			br.Done(permit, circuit.Failure)
		}
	}()
	err = p.attempts(ctx, call, fn, now, deadline, hasDeadline)
	finished = true
	br.Done(permit, Classify(err).Outcome)
	return err
}

// attempts is the retry layer around the attempt-timeout layer.
func (p *Policy) attempts(ctx context.Context, call Call, fn AttemptFunc, now, deadline time.Time, hasDeadline bool) error {
	var hop time.Time
	if hasDeadline {
		hop = HopDeadline(deadline, p.margin)
	}
	var last error
	for n := 1; ; n++ {
		timeout := p.attemptCap
		if hasDeadline {
			timeout = AttemptTimeout(deadline.Sub(now), p.margin, p.attemptCap)
			if timeout <= 0 {
				if last == nil { // spent while waiting for the bulkhead or the override read
					p.stats.rejectedDeadline.Add(1)
					return &Error{Kind: KindDeadlineExceeded, Dependency: p.dep.Name, Err: context.DeadlineExceeded}
				}
				p.stats.skippedDeadline.Add(1)
				return last
			}
		}
		// now+timeout, not WithTimeout: the attempt ends exactly at the hop
		// deadline when the budget binds, and one clock read is saved.
		actx, cancel := context.WithDeadline(ctx, now.Add(timeout))
		err := fn(actx, Attempt{N: n, Deadline: hop, Timeout: timeout, IdempotencyKey: call.IdempotencyKey})
		if err != nil && actx.Err() != nil && ctx.Err() == nil {
			// Our per-attempt timer, not the caller, ended the attempt.
			p.stats.attemptTimeouts.Add(1)
			err = &Error{Kind: KindAttemptTimeout, Dependency: p.dep.Name, Err: err}
		}
		cancel()
		if err == nil {
			if p.dep.Budget != nil {
				p.dep.Budget.Deposit()
			}
			return nil
		}
		last = err
		c := Classify(err)
		if !c.Retryable || n >= p.maxAttempts || ctx.Err() != nil {
			return err
		}
		if !p.idempotent && !call.Idempotent && call.IdempotencyKey == "" {
			p.stats.skippedNotIdempotent.Add(1)
			return err
		}
		delay := max(p.backoff.Delay(n), c.RetryAfter)
		now = p.clock.Now()
		if hasDeadline && delay+p.attemptCap > deadline.Sub(now) {
			p.stats.skippedDeadline.Add(1)
			p.logRetry(ctx, "retry skipped: deadline too close", n, delay, err)
			return err
		}
		if p.dep.Budget != nil && !p.dep.Budget.TryWithdraw() {
			p.stats.skippedBudget.Add(1)
			p.logRetry(ctx, "retry skipped: retry budget empty", n, delay, err)
			return err
		}
		p.stats.retries.Add(1)
		p.logRetry(ctx, "retrying", n, delay, err)
		if delay > 0 && !sleep(ctx, delay) {
			return err
		}
		now = p.clock.Now()
	}
}

func (p *Policy) logRetry(ctx context.Context, msg string, n int, delay time.Duration, err error) {
	p.logger.LogAttrs(ctx, slog.LevelDebug, msg,
		slog.String("event", "retry"),
		slog.String("dependency", p.dep.Name),
		slog.String("operation", p.operation),
		slog.Int("attempt", n),
		slog.Duration("delay", delay),
		slog.String("error", err.Error()),
	)
}

// sleep waits d or until ctx ends, reporting whether the full wait passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
