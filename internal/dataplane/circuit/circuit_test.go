package circuit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// observer records everything a breaker reports: hook calls, gauge values
// and log records.
type observer struct {
	mu          sync.Mutex
	transitions []Transition
	gauge       []State
	records     []slog.Record
}

func (o *observer) SetBreakerState(dep string, s State) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.gauge = append(o.gauge, s)
}

func (o *observer) onChange(t Transition) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.transitions = append(o.transitions, t)
}

func (o *observer) Enabled(context.Context, slog.Level) bool { return true }
func (o *observer) Handle(_ context.Context, r slog.Record) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.records = append(o.records, r.Clone())
	return nil
}
func (o *observer) WithAttrs([]slog.Attr) slog.Handler { return o }
func (o *observer) WithGroup(string) slog.Handler      { return o }

func (o *observer) path() []State {
	o.mu.Lock()
	defer o.mu.Unlock()
	var p []State
	for _, t := range o.transitions {
		p = append(p, t.To)
	}
	return p
}

func (o *observer) reasons() []Reason {
	o.mu.Lock()
	defer o.mu.Unlock()
	var r []Reason
	for _, t := range o.transitions {
		r = append(r, t.Reason)
	}
	return r
}

// newTest builds a breaker on a fake clock with an observer attached.
func newTest(t *testing.T, s Settings) (*Breaker, *clocktest.Fake, *observer) {
	t.Helper()
	clk := clocktest.NewFake(t0)
	obs := &observer{}
	s.Clock = clk
	s.Gauge = obs
	s.OnStateChange = obs.onChange
	s.Logger = slog.New(obs)
	if s.Name == "" {
		s.Name = "core-api"
	}
	b, err := New(s)
	if err != nil {
		t.Fatalf("New(%+v): %v", s, err)
	}
	return b, clk, obs
}

// feed runs one admitted call per letter: S success, F failure, I ignored.
// It fails the test if a call is rejected.
func feed(t *testing.T, b *Breaker, seq string) {
	t.Helper()
	for i, c := range seq {
		p, err := b.Allow()
		if err != nil {
			t.Fatalf("call %d (%c) of %q rejected: %v", i, c, seq, err)
		}
		b.Done(p, outcomeOf(c))
	}
}

func outcomeOf(c rune) Outcome {
	switch c {
	case 'S':
		return Success
	case 'F':
		return Failure
	case 'I':
		return Ignored
	}
	panic(fmt.Sprintf("bad outcome letter %q", c))
}

// trip opens a default-configured breaker from closed.
func trip(t *testing.T, b *Breaker) {
	t.Helper()
	for b.State() == Closed {
		p, err := b.Allow()
		if err != nil {
			t.Fatal(err)
		}
		b.Done(p, Failure)
	}
	if b.State() != Open {
		t.Fatalf("trip: state %v", b.State())
	}
}

func TestClosedToOpenRules(t *testing.T) {
	tests := []struct {
		name string
		s    Settings
		seq  string
		want State
	}{
		{"below min calls never opens", Settings{WindowSize: 10}, "FFFFFFFFF", Closed},
		{"opens when min calls reached", Settings{WindowSize: 10}, "FFFFFFFFFF", Open},
		{"exactly at the threshold opens", Settings{WindowSize: 10}, "SSSSSFFFFF", Open},
		{"threshold first reached by a success opens", Settings{WindowSize: 10}, "FFFFFFFFFS", Open},
		{"just below the threshold stays closed", Settings{WindowSize: 10}, "SSSSSSFFFF", Closed},
		{"exactly at a 0.3 threshold opens", Settings{WindowSize: 10, FailureRate: 0.3}, "SSSSSSSFFF", Open},
		{"just below a 0.3 threshold stays closed", Settings{WindowSize: 10, FailureRate: 0.3}, "SSSSSSSSFF", Closed},
		{"min calls below window: opens at min", Settings{WindowSize: 20, MinCalls: 5}, "FFFFF", Open},
		{"min calls below window: one short", Settings{WindowSize: 20, MinCalls: 5}, "FFFF", Closed},
		{"min calls below window: rate over calls so far", Settings{WindowSize: 20, MinCalls: 5}, "SSSFF", Closed},
		{"min calls below window: rate at threshold", Settings{WindowSize: 20, MinCalls: 6}, "SSSFFF", Open},
		{"old successes slide out", Settings{WindowSize: 4, FailureRate: 0.75}, "SSSSSSSSFFF", Open},
		{"old failures slide out", Settings{WindowSize: 4, FailureRate: 0.75}, "SFFSSSFF", Closed},
		{"ignored outcomes are not counted", Settings{WindowSize: 4}, "FFFIIIIII", Closed},
		{"ignored then one more failure", Settings{WindowSize: 4}, "FFFIIIF", Open},
		{"rate 1 needs every call failing", Settings{WindowSize: 5, FailureRate: 1}, "FFFFSFFFFS", Closed},
		{"rate 1 with a full window of failures", Settings{WindowSize: 5, FailureRate: 1}, "SFFFFF", Open},
		{"window of one", Settings{WindowSize: 1}, "SSSF", Open},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, _, obs := newTest(t, tt.s)
			feed(t, b, tt.seq)
			if got := b.State(); got != tt.want {
				s := b.Snapshot()
				t.Fatalf("after %q: state %v, want %v (window %d/%d)", tt.seq, got, tt.want, s.Failures, s.Calls)
			}
			if tt.want == Open {
				if p := obs.path(); !slices.Equal(p, []State{Open}) {
					t.Fatalf("transitions %v, want [open]", p)
				}
				if r := obs.reasons(); r[0] != ReasonFailureRate {
					t.Fatalf("reason %v", r)
				}
			}
		})
	}
}

func TestDefaultsFromZeroSettings(t *testing.T) {
	b, clk, _ := newTest(t, Settings{})
	feed(t, b, "FFFFFFFFFFFFFFFFFFF") // 19 failures: below the default min calls (20)
	if b.State() != Closed {
		t.Fatalf("19 failures opened a default breaker")
	}
	feed(t, b, "F")
	if b.State() != Open {
		t.Fatalf("20 failures left a default breaker %v", b.State())
	}
	clk.Advance(15*time.Second - time.Nanosecond)
	if _, err := b.Allow(); !errors.Is(err, ErrOpen) {
		t.Fatalf("default open duration shorter than 15s: %v", err)
	}
	clk.Advance(time.Nanosecond)
	for i := range 3 {
		if _, err := b.Allow(); err != nil {
			t.Fatalf("probe %d rejected: %v", i, err)
		}
	}
	if _, err := b.Allow(); !errors.Is(err, ErrTooManyProbes) {
		t.Fatalf("a 4th probe: %v, want ErrTooManyProbes", err)
	}
}

func TestOpenRejectsUntilDurationElapsed(t *testing.T) {
	b, clk, obs := newTest(t, Settings{WindowSize: 2, OpenDuration: 10 * time.Second})
	feed(t, b, "FF")
	for _, d := range []time.Duration{0, time.Second, 10*time.Second - time.Nanosecond} {
		clk.Set(b.Snapshot().OpenedAt.Add(d))
		if _, err := b.Allow(); !errors.Is(err, ErrOpen) {
			t.Fatalf("%v after opening: %v, want ErrOpen", d, err)
		}
		if got, want := b.RemainingOpen(), 10*time.Second-d; got != want {
			t.Fatalf("RemainingOpen %v after %v, want %v", got, d, want)
		}
	}
	if got := b.Snapshot().Rejected; got != 3 {
		t.Fatalf("Rejected = %d, want 3", got)
	}
	clk.Advance(time.Nanosecond) // exactly the open duration
	p, err := b.Allow()
	if err != nil || !p.Probe() {
		t.Fatalf("at the open duration: permit probe=%v err=%v, want a probe", p.Probe(), err)
	}
	if got := b.State(); got != HalfOpen {
		t.Fatalf("state %v, want half_open", got)
	}
	if b.RemainingOpen() != 0 {
		t.Fatal("RemainingOpen nonzero while half-open")
	}
	if r := obs.reasons(); !slices.Equal(r, []Reason{ReasonFailureRate, ReasonOpenElapsed}) {
		t.Fatalf("reasons %v", r)
	}
}

func TestStateReportsHalfOpenOnceDurationElapsed(t *testing.T) {
	b, clk, obs := newTest(t, Settings{WindowSize: 1, OpenDuration: time.Second})
	feed(t, b, "F")
	clk.Advance(time.Second)
	if got := b.State(); got != HalfOpen {
		t.Fatalf("State() = %v after the open duration, want half_open", got)
	}
	if g := obs.gauge; !slices.Equal(g, []State{Closed, Open, HalfOpen}) {
		t.Fatalf("gauge %v, want [closed open half_open]", g)
	}
}

func TestHalfOpenProbes(t *testing.T) {
	tests := []struct {
		name     string
		outcomes string // outcomes of the probes, in order
		want     State
	}{
		{"three of three succeed: closes", "SSS", Closed},
		{"first probe fails: reopens", "F", Open},
		{"third probe fails after two successes: reopens", "SSF", Open},
		{"ignored probe frees its slot", "SISS", HalfOpen}, // the freed slot is not re-used here
		{"two successes: still half-open", "SS", HalfOpen},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, clk, _ := newTest(t, Settings{WindowSize: 2, OpenDuration: time.Second})
			feed(t, b, "FF")
			clk.Advance(time.Second)
			var permits []Permit
			for range 3 {
				p, err := b.Allow()
				if err != nil {
					t.Fatal(err)
				}
				permits = append(permits, p)
			}
			for i, c := range tt.outcomes {
				if i >= len(permits) {
					break
				}
				b.Done(permits[i], outcomeOf(c))
			}
			if got := b.State(); got != tt.want {
				t.Fatalf("state %v, want %v", got, tt.want)
			}
		})
	}
}

func TestHalfOpenAdmissionLimits(t *testing.T) {
	b, clk, _ := newTest(t, Settings{WindowSize: 2, OpenDuration: time.Second})
	feed(t, b, "FF")
	clk.Advance(time.Second)
	p1, _ := b.Allow()
	p2, _ := b.Allow()
	p3, err := b.Allow()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Allow(); !errors.Is(err, ErrTooManyProbes) {
		t.Fatalf("4th call while 3 probes run: %v", err)
	}
	b.Done(p1, Success)
	if _, err := b.Allow(); !errors.Is(err, ErrTooManyProbes) {
		t.Fatalf("a finished successful probe must not free a slot in the same period: %v", err)
	}
	b.Done(p2, Ignored)
	p4, err := b.Allow()
	if err != nil || !p4.Probe() {
		t.Fatalf("an ignored probe should free its slot: %v", err)
	}
	b.Done(p3, Success)
	if b.State() != HalfOpen {
		t.Fatal("closed on 2 successes")
	}
	b.Done(p4, Success)
	if b.State() != Closed {
		t.Fatalf("3 successes (one after an ignored probe) left %v", b.State())
	}
	if s := b.Snapshot(); s.Calls != 0 || s.ProbesInFlight != 0 {
		t.Fatalf("closing must start an empty window and no probes in flight: %+v", s)
	}
}

func TestHalfOpenConcurrentAdmission(t *testing.T) {
	b, clk, _ := newTest(t, Settings{WindowSize: 2, OpenDuration: time.Second})
	feed(t, b, "FF")
	clk.Advance(time.Second)
	const callers = 64
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		admitted []Permit
		rejected int
	)
	start := make(chan struct{})
	for range callers {
		wg.Go(func() {
			<-start
			p, err := b.Allow()
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				admitted = append(admitted, p)
			case errors.Is(err, ErrTooManyProbes):
				rejected++
			default:
				t.Errorf("unexpected rejection %v", err)
			}
		})
	}
	close(start)
	wg.Wait()
	if len(admitted) != 3 || rejected != callers-3 {
		t.Fatalf("admitted %d, rejected %d; want 3 and %d", len(admitted), rejected, callers-3)
	}
	for _, p := range admitted {
		if !p.Probe() {
			t.Fatal("a half-open admission is not marked as a probe")
		}
		b.Done(p, Success)
	}
	if b.State() != Closed {
		t.Fatalf("state %v after 3 successful probes", b.State())
	}
}

func TestLateOutcomesFromOldGenerationsAreIgnored(t *testing.T) {
	t.Run("a slow closed-state failure after the breaker recovered", func(t *testing.T) {
		b, clk, _ := newTest(t, Settings{WindowSize: 2, OpenDuration: time.Second})
		slow, _ := b.Allow()
		feed(t, b, "FF")
		clk.Advance(time.Second)
		feed(t, b, "SSS")
		b.Done(slow, Failure)
		if s := b.Snapshot(); s.State != Closed || s.Calls != 0 {
			t.Fatalf("stale failure counted: %+v", s)
		}
	})
	t.Run("a probe of an earlier half-open period", func(t *testing.T) {
		b, clk, _ := newTest(t, Settings{WindowSize: 2, OpenDuration: time.Second})
		feed(t, b, "FF")
		clk.Advance(time.Second)
		p1, _ := b.Allow()
		p2, _ := b.Allow()
		b.Done(p1, Failure) // reopens; p2 is still running
		clk.Advance(time.Second)
		p3, err := b.Allow()
		if err != nil {
			t.Fatal(err)
		}
		b.Done(p2, Success) // late: must not count toward this period
		if s := b.Snapshot(); s.ProbesSucceeded != 0 || s.ProbesInFlight != 1 {
			t.Fatalf("late probe counted: %+v", s)
		}
		b.Done(p3, Success)
		if s := b.Snapshot(); s.ProbesSucceeded != 1 || s.State != HalfOpen {
			t.Fatalf("after one current probe: %+v", s)
		}
	})
	t.Run("probes still running from an earlier period count toward the limit", func(t *testing.T) {
		b, clk, _ := newTest(t, Settings{WindowSize: 2, OpenDuration: time.Second})
		feed(t, b, "FF")
		clk.Advance(time.Second)
		p1, _ := b.Allow()
		p2, _ := b.Allow()
		p3, _ := b.Allow()
		b.Done(p1, Failure)
		clk.Advance(time.Second)
		// p2 and p3 still run: only one new probe may start.
		p4, err := b.Allow()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Allow(); !errors.Is(err, ErrTooManyProbes) {
			t.Fatalf("a 4th concurrent probe was admitted: %v", err)
		}
		b.Done(p2, Success)
		p5, err := b.Allow()
		if err != nil {
			t.Fatalf("slot of a finished stale probe not freed: %v", err)
		}
		for _, p := range []Permit{p3, p4, p5} {
			b.Done(p, Success)
		}
		if b.State() != HalfOpen {
			t.Fatalf("state %v: 2 current successes must not close", b.State())
		}
	})
	t.Run("the zero permit is ignored", func(t *testing.T) {
		b, _, _ := newTest(t, Settings{WindowSize: 1})
		b.Done(Permit{}, Failure)
		if s := b.Snapshot(); s.Calls != 0 || s.State != Closed {
			t.Fatalf("zero permit counted: %+v", s)
		}
	})
}

func TestForcedOpenFromEveryState(t *testing.T) {
	setups := map[State]func(t *testing.T, b *Breaker, clk *clocktest.Fake){
		Closed: func(t *testing.T, b *Breaker, clk *clocktest.Fake) { feed(t, b, "F") },
		Open:   func(t *testing.T, b *Breaker, clk *clocktest.Fake) { feed(t, b, "FF") },
		HalfOpen: func(t *testing.T, b *Breaker, clk *clocktest.Fake) {
			feed(t, b, "FF")
			clk.Advance(time.Second)
			if _, err := b.Allow(); err != nil {
				t.Fatal(err)
			}
		},
		ForcedOpen: func(t *testing.T, b *Breaker, clk *clocktest.Fake) { b.ForceOpen() },
	}
	for _, from := range []State{Closed, HalfOpen, Open, ForcedOpen} {
		t.Run(from.String(), func(t *testing.T) {
			b, clk, obs := newTest(t, Settings{WindowSize: 2, OpenDuration: time.Second})
			setups[from](t, b, clk)
			if b.State() != from {
				t.Fatalf("setup reached %v, want %v", b.State(), from)
			}
			before := len(obs.path())
			b.ForceOpen()
			if b.State() != ForcedOpen {
				t.Fatalf("ForceOpen from %v left %v", from, b.State())
			}
			if from == ForcedOpen && len(obs.path()) != before {
				t.Fatal("forcing a forced breaker emitted a transition")
			}
			if from != ForcedOpen {
				last := obs.transitions[len(obs.transitions)-1]
				if last.From != from || last.To != ForcedOpen || last.Reason != ReasonForced {
					t.Fatalf("transition %+v", last)
				}
			}
			// Time does not end a force.
			clk.Advance(time.Hour)
			_, err := b.Allow()
			if !errors.Is(err, ErrForcedOpen) || !errors.Is(err, ErrOpen) {
				t.Fatalf("forced breaker Allow: %v, want ErrForcedOpen matching ErrOpen", err)
			}
			if b.State() != ForcedOpen {
				t.Fatalf("forced breaker left forced_open after an hour: %v", b.State())
			}
			b.ClearForce()
			s := b.Snapshot()
			if s.State != Closed || s.Calls != 0 || s.Failures != 0 {
				t.Fatalf("after ClearForce: %+v, want closed with an empty window", s)
			}
			if g := obs.gauge[len(obs.gauge)-2:]; !slices.Equal(g, []State{ForcedOpen, Closed}) {
				t.Fatalf("gauge tail %v", g)
			}
			feed(t, b, "S")
		})
	}
}

func TestClearForceWhenNotForcedDoesNothing(t *testing.T) {
	b, _, obs := newTest(t, Settings{WindowSize: 2})
	feed(t, b, "FF")
	b.ClearForce()
	if b.State() != Open || len(obs.path()) != 1 {
		t.Fatalf("ClearForce on an open breaker: state %v transitions %v", b.State(), obs.path())
	}
}

func TestObserversSeeEveryTransitionInOrder(t *testing.T) {
	b, clk, obs := newTest(t, Settings{Name: "screening-sim", WindowSize: 2, OpenDuration: time.Second})
	feed(t, b, "FF")
	clk.Advance(time.Second)
	feed(t, b, "F")
	clk.Advance(time.Second)
	feed(t, b, "SSS")
	b.ForceOpen()
	b.ClearForce()

	wantPath := []State{Open, HalfOpen, Open, HalfOpen, Closed, ForcedOpen, Closed}
	if p := obs.path(); !slices.Equal(p, wantPath) {
		t.Fatalf("hook path %v, want %v", p, wantPath)
	}
	wantReasons := []Reason{ReasonFailureRate, ReasonOpenElapsed, ReasonProbeFailed, ReasonOpenElapsed,
		ReasonProbesSucceeded, ReasonForced, ReasonForceCleared}
	if r := obs.reasons(); !slices.Equal(r, wantReasons) {
		t.Fatalf("reasons %v, want %v", r, wantReasons)
	}
	if g := obs.gauge; !slices.Equal(g, append([]State{Closed}, wantPath...)) {
		t.Fatalf("gauge %v", g)
	}
	for i, tr := range obs.transitions {
		if tr.Generation != uint64(i+2) || tr.Name != "screening-sim" {
			t.Fatalf("transition %d: %+v", i, tr)
		}
	}
	first := obs.transitions[0]
	if first.Calls != 2 || first.Failures != 2 || !first.At.Equal(t0) {
		t.Fatalf("closed→open transition carries %+v", first)
	}
	if len(obs.records) != len(wantPath) {
		t.Fatalf("%d log records, want %d", len(obs.records), len(wantPath))
	}
	r := obs.records[0]
	if r.Level != slog.LevelWarn || r.Message != "breaker state change" {
		t.Fatalf("open event: level %v message %q", r.Level, r.Message)
	}
	attrs := map[string]string{}
	r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
	want := map[string]string{"event": "breaker_state_change", "dependency": "screening-sim", "from": "closed",
		"to": "open", "breaker_state": "2", "reason": "failure_rate", "window_calls": "2", "window_failures": "2"}
	for k, v := range want {
		if attrs[k] != v {
			t.Errorf("log attr %s = %q, want %q", k, attrs[k], v)
		}
	}
	if obs.records[1].Level != slog.LevelInfo {
		t.Errorf("half-open event level %v, want info", obs.records[1].Level)
	}
}

func TestExecute(t *testing.T) {
	t.Run("records failures and returns the error", func(t *testing.T) {
		b, _, _ := newTest(t, Settings{WindowSize: 2})
		boom := errors.New("boom")
		for range 2 {
			if err := b.Execute(func() error { return boom }); err != boom {
				t.Fatalf("Execute returned %v", err)
			}
		}
		called := false
		err := b.Execute(func() error { called = true; return nil })
		if !errors.Is(err, ErrOpen) || called {
			t.Fatalf("open breaker: err %v, fn called %v", err, called)
		}
	})
	t.Run("a canceled caller is not counted", func(t *testing.T) {
		b, _, _ := newTest(t, Settings{WindowSize: 2})
		for range 5 {
			_ = b.Execute(func() error { return fmt.Errorf("read: %w", context.Canceled) })
		}
		if s := b.Snapshot(); s.Calls != 0 {
			t.Fatalf("cancellations counted: %+v", s)
		}
	})
	t.Run("custom classification", func(t *testing.T) {
		notFound := errors.New("404")
		b, _, _ := newTest(t, Settings{WindowSize: 2, Classify: func(err error) Outcome {
			if errors.Is(err, notFound) {
				return Success
			}
			return DefaultClassify(err)
		}})
		for range 4 {
			_ = b.Execute(func() error { return notFound })
		}
		if s := b.Snapshot(); s.State != Closed || s.Failures != 0 || s.Calls != 2 {
			t.Fatalf("4xx-like errors counted as failures: %+v", s)
		}
	})
	t.Run("a panic is recorded as a failure and re-raised", func(t *testing.T) {
		b, _, _ := newTest(t, Settings{WindowSize: 1})
		func() {
			defer func() {
				if r := recover(); r != "kaput" {
					t.Fatalf("recovered %v, want the original panic", r)
				}
			}()
			_ = b.Execute(func() error { panic("kaput") })
		}()
		if b.State() != Open {
			t.Fatalf("panic not recorded as failure: %v", b.State())
		}
	})
	t.Run("a panicking probe reopens", func(t *testing.T) {
		b, clk, _ := newTest(t, Settings{WindowSize: 1, OpenDuration: time.Second})
		feed(t, b, "F")
		clk.Advance(time.Second)
		func() {
			defer func() { _ = recover() }()
			_ = b.Execute(func() error { panic("probe") })
		}()
		if s := b.Snapshot(); s.State != Open || s.ProbesInFlight != 0 {
			t.Fatalf("after panicking probe: %+v", s)
		}
	})
}

func TestInvalidSettings(t *testing.T) {
	tests := []Settings{
		{WindowSize: -1},
		{WindowSize: maxWindowSize + 1},
		{WindowSize: 10, MinCalls: 11},
		{MinCalls: -2},
		{FailureRate: -0.1},
		{FailureRate: 1.01},
		{FailureRate: nanRate()},
		{OpenDuration: -time.Second},
		{Probes: -1},
	}
	for _, s := range tests {
		if _, err := New(s); !errors.Is(err, ErrInvalidSettings) {
			t.Errorf("New(%+v) error %v, want ErrInvalidSettings", s, err)
		}
	}
}

func nanRate() float64 {
	zero := 0.0
	return zero / zero
}

func TestCustomProbeCount(t *testing.T) {
	b, clk, _ := newTest(t, Settings{WindowSize: 1, Probes: 1, OpenDuration: time.Second})
	feed(t, b, "F")
	clk.Advance(time.Second)
	feed(t, b, "S")
	if b.State() != Closed {
		t.Fatalf("one successful probe of one left %v", b.State())
	}
}

func TestOutcomeString(t *testing.T) {
	for o, want := range map[Outcome]string{Success: "success", Failure: "failure", Ignored: "ignored", 9: "outcome(9)"} {
		if o.String() != want {
			t.Errorf("%d.String() = %q", o, o.String())
		}
	}
}

func TestUnknownOutcomeCountsAsFailure(t *testing.T) {
	b, _, _ := newTest(t, Settings{WindowSize: 1})
	p, _ := b.Allow()
	b.Done(p, Outcome(42))
	if b.State() != Open {
		t.Fatalf("unknown outcome not counted as failure: %v", b.State())
	}
}

func TestSuccessPathDoesNotAllocate(t *testing.T) {
	b, _, _ := newTest(t, Settings{})
	twoStep := testing.AllocsPerRun(1000, func() {
		p, err := b.Allow()
		if err != nil {
			t.Fatal(err)
		}
		b.Done(p, Success)
	})
	execute := testing.AllocsPerRun(1000, func() {
		_ = b.Execute(func() error { return nil })
	})
	if twoStep != 0 || execute != 0 {
		t.Fatalf("success path allocates: Allow/Done %v, Execute %v allocs per call", twoStep, execute)
	}
}
