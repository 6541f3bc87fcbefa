package resilience

// Benchmarks of the success path against failsafe-go, configured the same
// way, in one `go test -bench` run (make bench). Results and method:
// docs/benchmarks/dataplane.md.

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/bulkhead"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"github.com/failsafe-go/failsafe-go/timeout"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/dataplane/circuit"
)

// The configuration both libraries get: core-api reads from the LLD table.
const (
	benchWindow      = 20
	benchMinCalls    = 10
	benchOpenFor     = 15 * time.Second
	benchProbes      = 3
	benchBulkhead    = 32
	benchMaxAttempts = 3
	benchAttemptCap  = 2 * time.Second
	benchBaseDelay   = 100 * time.Millisecond
	benchMaxDelay    = time.Second
)

func noop() error { return nil }

func noopAttempt(context.Context, Attempt) error { return nil }

func benchBreaker(b *testing.B) *circuit.Breaker {
	br, err := circuit.New(circuit.Settings{Name: CoreAPI, WindowSize: benchWindow, MinCalls: benchMinCalls,
		FailureRate: 0.5, OpenDuration: benchOpenFor, Probes: benchProbes, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	return br
}

func failsafeBreaker() circuitbreaker.CircuitBreaker[any] {
	// Count based: opens at 10 failures out of the last 20 executions (50%),
	// closes after 3 successful trial executions.
	return circuitbreaker.NewBuilder[any]().
		WithFailureThresholdRatio(benchWindow/2, benchWindow).
		WithDelay(benchOpenFor).
		WithSuccessThreshold(benchProbes).
		Build()
}

func benchPolicy(b *testing.B) *Policy {
	dep, err := NewDependency(DependencySettings{Name: CoreAPI, Breaker: &circuit.Settings{
		WindowSize: benchWindow, MinCalls: benchMinCalls, FailureRate: 0.5, OpenDuration: benchOpenFor, Probes: benchProbes,
	}}, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	p, err := NewPolicy(dep, OperationSettings{Dependency: CoreAPI, Operation: Reads, AttemptCap: benchAttemptCap,
		MaxAttempts: benchMaxAttempts, Idempotent: true, Bulkhead: benchBulkhead, Margin: GatewayMargin,
		BaseDelay: benchBaseDelay, MaxDelay: benchMaxDelay}, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	return p
}

func failsafeComposed(ctx context.Context) failsafe.Executor[any] {
	return failsafe.With[any](
		bulkhead.New[any](benchBulkhead),
		failsafeBreaker(),
		retrypolicy.NewBuilder[any]().
			WithMaxAttempts(benchMaxAttempts).
			WithBackoff(benchBaseDelay, benchMaxDelay).
			WithJitterFactor(0.5).
			Build(),
		timeout.New[any](benchAttemptCap),
	).WithContext(ctx)
}

// requestContext is a request with a long budget, so the deadline never
// ends the benchmark's calls.
func requestContext(b *testing.B) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	b.Cleanup(cancel)
	return ctx
}

// BenchmarkBreaker measures the breaker alone around a no-op call: the
// two-step API (koshactl Allow/Done, failsafe TryAcquirePermit/RecordSuccess)
// and the one-call API (koshactl Execute, failsafe's executor Run).
func BenchmarkBreaker(b *testing.B) {
	b.Run("lib=koshactl/api=two-step/mode=serial", func(b *testing.B) {
		br := benchBreaker(b)
		b.ReportAllocs()
		for b.Loop() {
			p, err := br.Allow()
			if err != nil {
				b.Fatal(err)
			}
			br.Done(p, circuit.Success)
		}
	})
	b.Run("lib=failsafe/api=two-step/mode=serial", func(b *testing.B) {
		cb := failsafeBreaker()
		b.ReportAllocs()
		for b.Loop() {
			if !cb.TryAcquirePermit() {
				b.Fatal("rejected")
			}
			cb.RecordSuccess()
		}
	})
	b.Run("lib=koshactl/api=execute/mode=serial", func(b *testing.B) {
		br := benchBreaker(b)
		b.ReportAllocs()
		for b.Loop() {
			if err := br.Execute(noop); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("lib=failsafe/api=execute/mode=serial", func(b *testing.B) {
		exec := failsafe.With[any](failsafeBreaker())
		b.ReportAllocs()
		for b.Loop() {
			if err := exec.Run(noop); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("lib=koshactl/api=two-step/mode=parallel", func(b *testing.B) {
		br := benchBreaker(b)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				p, err := br.Allow()
				if err != nil {
					panic(err)
				}
				br.Done(p, circuit.Success)
			}
		})
	})
	b.Run("lib=failsafe/api=two-step/mode=parallel", func(b *testing.B) {
		cb := failsafeBreaker()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if !cb.TryAcquirePermit() {
					panic("rejected")
				}
				cb.RecordSuccess()
			}
		})
	})
	b.Run("lib=koshactl/api=execute/mode=parallel", func(b *testing.B) {
		br := benchBreaker(b)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := br.Execute(noop); err != nil {
					panic(err)
				}
			}
		})
	})
	b.Run("lib=failsafe/api=execute/mode=parallel", func(b *testing.B) {
		exec := failsafe.With[any](failsafeBreaker())
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := exec.Run(noop); err != nil {
					panic(err)
				}
			}
		})
	})
}

// BenchmarkComposed measures the composed policy around a no-op call:
// koshactl's Policy.Do (deadline + bulkhead + breaker + retry with budget +
// attempt timeout) against failsafe-go's bulkhead + breaker + retry + timeout.
func BenchmarkComposed(b *testing.B) {
	b.Run("lib=koshactl/mode=serial", func(b *testing.B) {
		p := benchPolicy(b)
		ctx := requestContext(b)
		b.ReportAllocs()
		for b.Loop() {
			if err := p.Do(ctx, Call{}, noopAttempt); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("lib=koshactl+override/mode=serial", func(b *testing.B) {
		// The sandbox's configuration: the override watcher consulted on
		// every call (a fresh cache: one clock read, no store read).
		p := benchPolicy(b)
		dep := p.Dependency()
		dep.Force = circuit.NewForceWatcher(dep.Breaker, circuit.ForceSourceFunc(
			func(context.Context, string) (breaker.Force, error) { return breaker.Force{}, nil }), circuit.WatcherSettings{})
		ctx := requestContext(b)
		b.ReportAllocs()
		for b.Loop() {
			if err := p.Do(ctx, Call{}, noopAttempt); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("lib=failsafe/mode=serial", func(b *testing.B) {
		exec := failsafeComposed(requestContext(b))
		b.ReportAllocs()
		for b.Loop() {
			if err := exec.Run(noop); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("lib=koshactl/mode=parallel", func(b *testing.B) {
		p := benchPolicy(b)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			ctx := requestContext(b) // one request context per goroutine
			for pb.Next() {
				if err := p.Do(ctx, Call{}, noopAttempt); err != nil {
					panic(err)
				}
			}
		})
	})
	b.Run("lib=failsafe/mode=parallel", func(b *testing.B) {
		policies := failsafeComposed(context.Background())
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			exec := policies.WithContext(requestContext(b))
			for pb.Next() {
				if err := exec.Run(noop); err != nil {
					panic(err)
				}
			}
		})
	})
}
