package sandbox

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/dataplane/resilience"
)

// Downstream is a dependency as the data plane calls it: one attempt per
// Call, honoring ctx (whose deadline is the attempt's timeout). It answers
// nil, a *resilience.StatusError, a *resilience.ConnError or ctx's error,
// the shapes the resilience layers classify.
type Downstream interface {
	// Name is the dependency's name ("openai").
	Name() string
	// Call performs one attempt. plan is the request's honored chaos
	// header, or nil.
	Call(ctx context.Context, plan *FaultPlan) error
}

// FaultPlan is an honored chaos header: what to inject into which
// downstream, with which probability per call.
type FaultPlan struct {
	Target string
	Fault  chaos.Fault
	// Ms is the added latency of a latency fault.
	Ms int
	// P is the probability per call (per attempt), 0..1.
	P float64
	// JTI identifies the header, for logs.
	JTI string
}

// Fault sources, the source label of the fault counters.
const (
	sourceHeader  = "header"
	sourceAdmin   = "admin"
	sourceOutage  = "outage"
	sourceProfile = "profile"
)

// Knob is a downstream's own fault injection, set through /admin/chaos: it
// applies to every call whatever the gateway honors, for scenarios that
// must not depend on the gateway (LLD §9).
type Knob struct {
	Fault chaos.Fault `json:"fault"`
	// Ms is the added latency of a latency fault, in real milliseconds.
	Ms int `json:"ms,omitempty"`
	// P is the probability per call, in (0, 1].
	P float64 `json:"p"`
	// Until ends the knob; zero means until cleared.
	Until time.Time `json:"until,omitzero"`
	// SetBy is the client that set it; SetAt when.
	SetBy string    `json:"set_by,omitempty"`
	SetAt time.Time `json:"set_at,omitzero"`
}

// ErrInvalidKnob is wrapped by [Sim.SetKnob] for a knob that cannot apply.
var ErrInvalidKnob = errors.New("invalid chaos knob")

func (k Knob) validate() error {
	switch {
	case !k.Fault.Valid():
		return fmt.Errorf("%w: fault must be latency, error, timeout or reset", ErrInvalidKnob)
	case k.Fault == chaos.FaultLatency && (k.Ms < chaos.MinMs || k.Ms > chaos.MaxMs):
		return fmt.Errorf("%w: a latency fault needs ms in %d..%d", ErrInvalidKnob, chaos.MinMs, chaos.MaxMs)
	case k.Fault != chaos.FaultLatency && k.Ms != 0:
		return fmt.Errorf("%w: ms only applies to the latency fault", ErrInvalidKnob)
	case math.IsNaN(k.P) || k.P <= 0 || k.P > 1:
		return fmt.Errorf("%w: p %v not in (0, 1]", ErrInvalidKnob, k.P)
	}
	return nil
}

// faultObserver is told of every fault a simulator injects.
type faultObserver func(dependency string, f chaos.Fault, source string)

// Sim is a simulated downstream: a log-normal latency, random errors,
// timeouts and resets at the profile's rates, periodic outages, the
// request's chaos header and its own /admin/chaos knob. It is safe for
// concurrent use.
type Sim struct {
	name    string
	profile DownstreamProfile
	clock   clock.Clock
	start   time.Time
	observe faultObserver
	// mu and sigma are the log-normal parameters of the latency, in
	// nanoseconds; sigma 0 is a constant latency.
	mu, sigma float64

	knob atomic.Pointer[Knob]
	// frozen, when set, says whether the fleet's freeze holds: a knob
	// injects nothing while it does (docs/contracts/freeze.md).
	frozen func(ctx context.Context) bool
	calls  atomic.Uint64
	fails  atomic.Uint64
}

var _ Downstream = (*Sim)(nil)

// maxSampledLatency bounds one latency sample, so a long tail never hangs a
// call for minutes.
const maxSampledLatency = time.Minute

// z99 is the standard normal's 99th percentile.
const z99 = 2.3263478740408408

// NewSim returns the simulator of downstream name with profile p. Outages
// count from start. observe may be nil.
func NewSim(name string, p DownstreamProfile, clk clock.Clock, start time.Time, observe faultObserver) *Sim {
	if clk == nil {
		clk = clock.Real{}
	}
	if observe == nil {
		observe = func(string, chaos.Fault, string) {}
	}
	s := &Sim{name: name, profile: p, clock: clk, start: start, observe: observe}
	if p.Latency.P50 > 0 {
		s.mu = math.Log(float64(p.Latency.P50))
		if p.Latency.P99 > p.Latency.P50 {
			s.sigma = math.Log(float64(p.Latency.P99)/float64(p.Latency.P50)) / z99
		}
	}
	return s
}

// Name returns the downstream's name.
func (s *Sim) Name() string { return s.name }

// ObeyFreeze makes the simulator's knob inject nothing while frozen reports
// true: the sandbox passes the fleet's freeze as its instances read it.
// Call it before the first Call.
func (s *Sim) ObeyFreeze(frozen func(ctx context.Context) bool) { s.frozen = frozen }

// Profile returns the profile the simulator runs (in sandbox time).
func (s *Sim) Profile() DownstreamProfile { return s.profile }

// SetKnob sets the /admin/chaos knob, replacing any other.
func (s *Sim) SetKnob(k Knob) error {
	if err := k.validate(); err != nil {
		return err
	}
	s.knob.Store(&k)
	return nil
}

// ClearKnob removes the knob and reports whether one was active.
func (s *Sim) ClearKnob() bool {
	k, ok := s.Knob()
	s.knob.Store(nil)
	return ok && k.Fault.Valid()
}

// Knob returns the active knob, if any.
func (s *Sim) Knob() (Knob, bool) {
	k := s.knob.Load()
	if k == nil || (!k.Until.IsZero() && !s.clock.Now().Before(k.Until)) {
		return Knob{}, false
	}
	return *k, true
}

// Calls counts the attempts the simulator answered.
func (s *Sim) Calls() uint64 { return s.calls.Load() }

// Failures counts the attempts the simulator failed (error, reset, timeout,
// or the caller's deadline during its latency).
func (s *Sim) Failures() uint64 { return s.fails.Load() }

// OutageActive reports whether a periodic outage is on at now, and which.
func (s *Sim) OutageActive(now time.Time) (Outage, bool) {
	since := now.Sub(s.start)
	for _, o := range s.profile.Outages {
		t := since - o.Offset
		if t < 0 {
			continue
		}
		if t%o.Every < o.For {
			return o, true
		}
	}
	return Outage{}, false
}

// Call performs one attempt: it picks the fault (the chaos header first,
// then the knob, an outage, the profile's rates), waits the sampled latency
// (plus a latency fault's ms) within ctx, and answers.
func (s *Sim) Call(ctx context.Context, plan *FaultPlan) error {
	s.calls.Add(1)
	fault, ms := s.pick(ctx, plan)
	if fault == chaos.FaultTimeout {
		// Hang past the attempt cap: only the caller's timer ends it.
		<-ctx.Done()
		s.fails.Add(1)
		return ctx.Err()
	}
	wait := s.sampleLatency()
	if fault == chaos.FaultLatency {
		wait += time.Duration(ms) * time.Millisecond
	}
	if err := sleepCtx(ctx, wait); err != nil {
		s.fails.Add(1)
		return err
	}
	switch fault {
	case chaos.FaultError:
		s.fails.Add(1)
		return &resilience.StatusError{Code: http.StatusServiceUnavailable}
	case chaos.FaultReset:
		s.fails.Add(1)
		return &resilience.ConnError{Err: fmt.Errorf("%s: %w", s.name, syscall.ECONNRESET)}
	default: // none, or latency (already waited)
		return nil
	}
}

// pick decides this attempt's fault (0 for none).
func (s *Sim) pick(ctx context.Context, plan *FaultPlan) (chaos.Fault, int) {
	if plan != nil && plan.Target == s.name && roll(plan.P) {
		s.observe(s.name, plan.Fault, sourceHeader)
		return plan.Fault, plan.Ms
	}
	if k := s.knob.Load(); k != nil && (s.frozen == nil || !s.frozen(ctx)) {
		if kk, ok := s.Knob(); ok && roll(kk.P) {
			s.observe(s.name, kk.Fault, sourceAdmin)
			return kk.Fault, kk.Ms
		}
	}
	if len(s.profile.Outages) > 0 {
		if o, ok := s.OutageActive(s.clock.Now()); ok {
			s.observe(s.name, o.Fault, sourceOutage)
			return o.Fault, o.Ms
		}
	}
	p := s.profile
	if p.ErrorRate+p.TimeoutRate+p.ResetRate > 0 {
		r := rand.Float64() //nolint:gosec // G404: simulated failures, not secrets
		var f chaos.Fault
		switch {
		case r < p.ErrorRate:
			f = chaos.FaultError
		case r < p.ErrorRate+p.TimeoutRate:
			f = chaos.FaultTimeout
		case r < p.ErrorRate+p.TimeoutRate+p.ResetRate:
			f = chaos.FaultReset
		}
		if f != 0 {
			s.observe(s.name, f, sourceProfile)
			return f, 0
		}
	}
	return 0, 0
}

func (s *Sim) sampleLatency() time.Duration {
	if s.mu == 0 {
		return 0
	}
	if s.sigma == 0 {
		return s.profile.Latency.P50
	}
	v := math.Exp(s.mu + s.sigma*rand.NormFloat64()) //nolint:gosec // G404: simulated latency, not secrets
	return min(time.Duration(v), maxSampledLatency)
}

// roll returns true with probability p.
func roll(p float64) bool {
	return p >= 1 || (p > 0 && rand.Float64() < p) //nolint:gosec // G404: fault probabilities, not secrets
}

// sleepCtx waits d, or returns ctx's error if it ends first.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sims holds the fleet's shared downstreams: every instance calls the same
// simulators, as every Lambda calls the same services.
type sims struct {
	byName map[string]*Sim
	mu     sync.Mutex // serializes knob changes with their audit records
}

func (s *sims) get(name string) *Sim { return s.byName[name] }
