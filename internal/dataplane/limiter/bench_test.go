package limiter_test

import (
	"context"
	"flag"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/dataplane/limiter"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/store/dynamo/dynamotest"
)

// benchFor is how long each benchmark case hammers its bucket. The
// benchmark measures admission against an ideal that depends on elapsed
// time, so every case runs for a fixed wall-clock duration instead of b.N
// iterations: b.N calibration would run each case several times with
// different lengths, and the burst of the full starting bucket (20 tokens)
// would weigh differently in each.
var benchFor = flag.Duration("ratelimit.benchfor", 3*time.Second, "duration of each BenchmarkTake case")

// skewedClock is the wall clock shifted by a fixed offset: one data-plane
// instance whose clock is off.
type skewedClock struct{ off time.Duration }

func (c skewedClock) Now() time.Time { return time.Now().Add(c.off) }

// benchResult is what one case measured.
type benchResult struct {
	takes, admitted, failOpen, contention int64
	casRetries                            int64
	elapsed                               time.Duration
	latencies                             []time.Duration
}

// runTakers runs k takers, each a limiter with its own clock skew, on one
// client for d, and measures every take.
func runTakers(b *testing.B, s limiter.BucketStore, v variant, k int, skew time.Duration, d time.Duration) benchResult {
	var (
		res  benchResult
		mu   sync.Mutex
		wg   sync.WaitGroup
		stop atomic.Bool
	)
	ctx := context.Background()
	start := time.Now()
	deadline := start.Add(d)
	for i := range k {
		// Spread the takers' offsets evenly over [-skew, +skew].
		off := time.Duration(0)
		if k > 1 {
			off = -skew + time.Duration(int64(2*skew)*int64(i)/int64(k-1))
		}
		l, err := newTaker(s, v, limiter.Config{Clock: skewedClock{off}})
		if err != nil {
			b.Fatal(err)
		}
		wg.Go(func() {
			var local benchResult
			for !stop.Load() {
				t := time.Now()
				if !t.Before(deadline) {
					stop.Store(true)
					break
				}
				dec, err := l.Take(ctx, "bench")
				lat := time.Since(t)
				if err != nil {
					b.Error(err)
					return
				}
				if dec.Outcome == limiter.OutcomeFailOpenError {
					b.Errorf("store failed under load: %v", dec.Cause)
					stop.Store(true)
					return
				}
				local.takes++
				local.latencies = append(local.latencies, lat)
				local.casRetries += int64(dec.CASRetries)
				if dec.Allowed {
					local.admitted++
				}
				if dec.FailOpen {
					local.failOpen++
				}
				if dec.Outcome == limiter.OutcomeDeniedContention {
					local.contention++
				}
			}
			mu.Lock()
			res.takes += local.takes
			res.admitted += local.admitted
			res.failOpen += local.failOpen
			res.contention += local.contention
			res.casRetries += local.casRetries
			res.latencies = append(res.latencies, local.latencies...)
			mu.Unlock()
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	return res
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// BenchmarkTake measures both variants against moto: K concurrent takers
// on one client for a fixed duration (-ratelimit.benchfor, default 3s),
// admitted requests against the ideal capacity + rate x elapsed. The
// "skew" cases spread the takers' clocks over ±250 ms. Results and how to
// read them: docs/benchmarks/ratelimit.md.
func BenchmarkTake(b *testing.B) {
	endpoint := motoURL(b)
	limits := ratelimit.DefaultLimits()
	type benchCase struct {
		k    int
		skew time.Duration
	}
	cases := []benchCase{{1, 0}, {8, 0}, {32, 0}, {64, 0}, {8, 250 * time.Millisecond}}
	for _, c := range cases {
		for _, v := range []variant{variantLLD, variantFixed} {
			name := fmt.Sprintf("variant=%s/K=%d", v, c.k)
			if c.skew > 0 {
				name += fmt.Sprintf("/skew=%s", c.skew)
			}
			b.Run(name, func(b *testing.B) {
				s := dynamotest.NewStore(b, endpoint)
				b.ResetTimer()
				r := runTakers(b, s, v, c.k, c.skew, *benchFor)
				b.StopTimer()
				ideal := limits.Capacity + limits.RefillPerSecond*r.elapsed.Seconds()
				slices.Sort(r.latencies)
				over := max(0, float64(r.admitted)-ideal) / ideal * 100
				retriesPer := 0.0
				if r.admitted > 0 {
					retriesPer = float64(r.casRetries) / float64(r.admitted)
				}
				b.ReportMetric(0, "ns/op")
				b.ReportMetric(float64(r.admitted), "admitted")
				b.ReportMetric(ideal, "ideal")
				b.ReportMetric(float64(r.admitted)/ideal, "admitted/ideal")
				b.ReportMetric(over, "overadmit_%")
				b.ReportMetric(retriesPer, "cas_retries/admitted")
				b.ReportMetric(float64(r.failOpen), "fail_open")
				// Admitted with a token spent: over the ideal only through lost
				// updates (flaws 1 and 4).
				b.ReportMetric(float64(r.admitted-r.failOpen), "metered")
				b.ReportMetric(float64(r.contention), "denied_contention")
				b.ReportMetric(float64(r.takes)/r.elapsed.Seconds(), "takes/s")
				b.ReportMetric(float64(percentile(r.latencies, 0.50))/1e6, "p50_ms")
				b.ReportMetric(float64(percentile(r.latencies, 0.99))/1e6, "p99_ms")
			})
		}
	}
}
