package sandbox_test

import (
	"context"
	"errors"
	"slices"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/dataplane/circuit"
	"github.com/kosha-platform/koshactl/internal/dataplane/resilience"
	"github.com/kosha-platform/koshactl/internal/dataplane/sandbox"
)

func TestSimFaultsAreWhatTheLayersClassify(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		fault    chaos.Fault
		outcome  circuit.Outcome
		retry    bool
		checkErr func(error) bool
	}{
		{chaos.FaultError, circuit.Failure, true, func(err error) bool {
			var se *resilience.StatusError
			return errors.As(err, &se) && se.Code == 503
		}},
		{chaos.FaultReset, circuit.Failure, true, func(err error) bool { return errors.Is(err, syscall.ECONNRESET) }},
	} {
		t.Run(tc.fault.String(), func(t *testing.T) {
			sim := sandbox.NewSim(sandbox.OpenAI, sandbox.DownstreamProfile{}, nil, time.Now(), nil)
			err := sim.Call(context.Background(), &sandbox.FaultPlan{Target: sandbox.OpenAI, Fault: tc.fault, P: 1})
			c := resilience.Classify(err)
			if !tc.checkErr(err) || c.Outcome != tc.outcome || c.Retryable != tc.retry {
				t.Errorf("err %v classified %+v", err, c)
			}
			if err := sim.Call(context.Background(), &sandbox.FaultPlan{Target: sandbox.Postgres, Fault: tc.fault, P: 1}); err != nil {
				t.Errorf("a fault for postgres hit openai: %v", err)
			}
		})
	}
}

func TestSimTimeoutHangsUntilTheAttemptEnds(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		sim := sandbox.NewSim(sandbox.ScreeningSim, sandbox.DownstreamProfile{}, nil, time.Now(), nil)
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := sim.Call(ctx, &sandbox.FaultPlan{Target: sandbox.ScreeningSim, Fault: chaos.FaultTimeout, P: 1})
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 1500*time.Millisecond {
			t.Errorf("timeout fault returned %v after %s, want the deadline after exactly 1.5s", err, time.Since(start))
		}
	})
}

func TestSimLatencyWaitsAndRespectsTheContext(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		sim := sandbox.NewSim(sandbox.Postgres, sandbox.DownstreamProfile{Latency: sandbox.Latency{P50: 80 * time.Millisecond}}, nil, time.Now(), nil)
		start := time.Now()
		if err := sim.Call(context.Background(), &sandbox.FaultPlan{Target: sandbox.Postgres, Fault: chaos.FaultLatency, Ms: 250, P: 1}); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 330*time.Millisecond {
			t.Errorf("80 ms base + 250 ms fault took %s", d)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		start = time.Now()
		if err := sim.Call(ctx, nil); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 50*time.Millisecond {
			t.Errorf("80 ms call with a 50 ms timeout: %v after %s", err, time.Since(start))
		}
	})
}

func TestSimLatencyDistribution(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		p := sandbox.Latency{P50: 100 * time.Millisecond, P99: 900 * time.Millisecond}
		sim := sandbox.NewSim(sandbox.OpenAI, sandbox.DownstreamProfile{Latency: p}, nil, time.Now(), nil)
		const n = 4000
		samples := make([]time.Duration, n)
		for i := range samples {
			start := time.Now()
			if err := sim.Call(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			samples[i] = time.Since(start)
		}
		slices.Sort(samples)
		p50, p99 := samples[n/2], samples[n*99/100]
		if p50 < 85*time.Millisecond || p50 > 115*time.Millisecond || p99 < 600*time.Millisecond || p99 > 1300*time.Millisecond {
			t.Errorf("p50 %s p99 %s from %d samples, want near 100ms and 900ms", p50, p99, n)
		}
	})
}

func TestSimOutagesAndRates(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)
	clk := clocktest.NewFake(start)
	var seen []string
	sim := sandbox.NewSim(sandbox.OpenAI, sandbox.DownstreamProfile{Outages: []sandbox.Outage{
		{Every: time.Minute, For: 10 * time.Second, Offset: 20 * time.Second, Fault: chaos.FaultError}}}, clk, start,
		func(dep string, f chaos.Fault, source string) { seen = append(seen, dep+" "+f.String()+" "+source) })
	for _, tc := range []struct {
		at   time.Duration
		down bool
	}{
		{0, false}, {20*time.Second - time.Nanosecond, false}, {20 * time.Second, true}, {30*time.Second - time.Nanosecond, true},
		{30 * time.Second, false}, {80 * time.Second, true}, {95 * time.Second, false},
	} {
		clk.Set(start.Add(tc.at))
		err := sim.Call(context.Background(), nil)
		if (err != nil) != tc.down {
			t.Errorf("at +%s: err %v, want outage %v", tc.at, err, tc.down)
		}
	}
	if len(seen) != 3 || seen[0] != "openai error outage" {
		t.Errorf("observed faults %v", seen)
	}
	always := sandbox.NewSim(sandbox.OpenAI, sandbox.DownstreamProfile{ErrorRate: 1}, nil, start, nil)
	never := sandbox.NewSim(sandbox.OpenAI, sandbox.DownstreamProfile{}, nil, start, nil)
	for range 50 {
		if always.Call(context.Background(), nil) == nil || never.Call(context.Background(), nil) != nil {
			t.Fatal("error rate 1 answered, or rate 0 failed")
		}
	}
	if always.Failures() != 50 || always.Calls() != 50 {
		t.Errorf("counted %d failures in %d calls", always.Failures(), always.Calls())
	}
}

func TestSimKnobExpires(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)
	clk := clocktest.NewFake(start)
	sim := sandbox.NewSim(sandbox.ScreeningSim, sandbox.DownstreamProfile{}, clk, start, nil)
	if err := sim.SetKnob(sandbox.Knob{Fault: chaos.FaultError, P: 1, Until: start.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if sim.Call(context.Background(), nil) == nil {
		t.Error("active knob did not fail the call")
	}
	clk.Advance(time.Minute)
	if err := sim.Call(context.Background(), nil); err != nil {
		t.Errorf("expired knob still applies: %v", err)
	}
	if _, ok := sim.Knob(); ok {
		t.Error("expired knob still reported")
	}
}
