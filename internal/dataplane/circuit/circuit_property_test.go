package circuit

import (
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
)

// model drives a breaker with a byte-coded sequence of operations and checks
// the invariants after each one: the state is one of 0..3, no more than
// Probes probe permits are ever outstanding, and the breaker's own counts
// agree with what the driver handed out.
type model struct {
	t        *testing.T
	b        *Breaker
	clk      *clocktest.Fake
	held     []Permit
	maxProbe int
}

func newModel(t *testing.T) *model {
	clk := clocktest.NewFake(t0)
	b, err := New(Settings{
		Name: "prop", WindowSize: 4, MinCalls: 2, OpenDuration: time.Second,
		Clock: clk, Logger: slog.New(slog.DiscardHandler),
		Gauge: gaugeFunc(func(s State) {
			if !s.Valid() {
				t.Fatalf("gauge set to %d", s)
			}
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	return &model{t: t, b: b, clk: clk, maxProbe: 3}
}

type gaugeFunc func(State)

func (f gaugeFunc) SetBreakerState(_ string, s State) { f(s) }

func (m *model) step(op, arg byte) {
	switch op % 6 {
	case 0, 1: // start a call
		stBefore := m.b.State()
		p, err := m.b.Allow()
		switch {
		case err == nil:
			if stBefore.Rejecting() {
				m.t.Fatalf("admitted while %v", stBefore)
			}
			m.held = append(m.held, p)
		case stBefore == Closed:
			m.t.Fatalf("closed breaker rejected: %v", err)
		case !errors.Is(err, ErrOpen) && !errors.Is(err, ErrTooManyProbes):
			m.t.Fatalf("unexpected rejection %v", err)
		}
	case 2, 3: // finish a held call
		if len(m.held) == 0 {
			return
		}
		i := int(arg) % len(m.held)
		p := m.held[i]
		m.held = append(m.held[:i], m.held[i+1:]...)
		m.b.Done(p, Outcome(arg/64%3))
	case 4: // let time pass, up to 1.5 open durations
		m.clk.Advance(time.Duration(arg) * 6 * time.Millisecond)
	case 5:
		if arg%2 == 0 {
			m.b.ForceOpen()
		} else {
			m.b.ClearForce()
		}
	}
	m.check()
}

func (m *model) check() {
	s := m.b.Snapshot()
	if !s.State.Valid() || s.State != m.b.State() {
		m.t.Fatalf("state %d outside 0..3 or inconsistent", s.State)
	}
	probes := 0
	for _, p := range m.held {
		if p.Probe() {
			probes++
		}
	}
	if probes > m.maxProbe {
		m.t.Fatalf("%d probe permits outstanding, limit %d", probes, m.maxProbe)
	}
	if s.ProbesInFlight != probes {
		m.t.Fatalf("breaker counts %d probes in flight, driver holds %d", s.ProbesInFlight, probes)
	}
	if s.ProbesAdmitted > m.maxProbe || s.ProbesSucceeded > s.ProbesAdmitted {
		m.t.Fatalf("half-open counts %+v", s)
	}
	if s.Calls > 4 || s.Failures > s.Calls {
		m.t.Fatalf("window counts %+v", s)
	}
}

func (m *model) run(ops []byte) {
	for i := 0; i+1 < len(ops); i += 2 {
		m.step(ops[i], ops[i+1])
	}
}

// TestPropertyRandomSequences runs thousands of random operation sequences
// (seeded, so a failure reproduces).
func TestPropertyRandomSequences(t *testing.T) {
	for seed := range uint64(2000) {
		r := rand.New(rand.NewPCG(seed, 0x5eed))
		ops := make([]byte, 400)
		for i := range ops {
			ops[i] = byte(r.UintN(256)) //nolint:gosec // G115: UintN(256) is below 256
		}
		m := newModel(t)
		m.run(ops)
		if t.Failed() {
			t.Fatalf("seed %d", seed)
		}
	}
}

// FuzzBreaker explores operation sequences beyond the seeded ones
// (go test -fuzz FuzzBreaker ./internal/breaker).
func FuzzBreaker(f *testing.F) {
	f.Add([]byte{0, 0, 2, 64, 0, 0, 2, 64, 4, 200, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{5, 0, 0, 0, 5, 1, 0, 0, 2, 0})
	f.Add([]byte{0, 0, 0, 0, 3, 64, 3, 64, 4, 255, 1, 0, 1, 0, 1, 0, 1, 0, 2, 128})
	f.Fuzz(func(t *testing.T, ops []byte) {
		newModel(t).run(ops)
	})
}

// TestPropertyConcurrentProbes hammers one breaker from many goroutines while
// time advances and the override flips, and checks that no more than three
// half-open probes ever run at once and that the state stays within 0..3.
func TestPropertyConcurrentProbes(t *testing.T) {
	clk := clocktest.NewFake(t0)
	b, err := New(Settings{Name: "race", WindowSize: 4, MinCalls: 2, OpenDuration: time.Millisecond,
		Clock: clk, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	var (
		running  atomic.Int32
		maxSeen  atomic.Int32
		probes   atomic.Int64
		stop     atomic.Bool
		wg       sync.WaitGroup
		badState atomic.Int32
	)
	for g := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 7)) //nolint:gosec // G115: g is a goroutine index, never negative
			for !stop.Load() {
				if s := b.State(); !s.Valid() {
					badState.Store(int32(s) + 1)
				}
				p, err := b.Allow()
				if err != nil {
					continue
				}
				if p.Probe() {
					probes.Add(1)
					n := running.Add(1)
					for {
						m := maxSeen.Load()
						if n <= m || maxSeen.CompareAndSwap(m, n) {
							break
						}
					}
					running.Add(-1)
				}
				b.Done(p, Outcome(r.UintN(3))) //nolint:gosec // G115: UintN(3) is below 3
			}
		})
	}
	wg.Go(func() {
		for i := 0; probes.Load() < 500 && i < 1_000_000; i++ {
			clk.Advance(time.Millisecond)
			switch i % 5000 {
			case 1000:
				b.ForceOpen()
			case 1100:
				b.ClearForce()
			}
		}
		stop.Store(true)
	})
	wg.Wait()
	if probes.Load() == 0 {
		t.Fatal("no probe was ever admitted: the test exercised nothing")
	}
	if m := maxSeen.Load(); m > 3 {
		t.Fatalf("%d probes ran concurrently, limit 3", m)
	}
	if s := badState.Load(); s != 0 {
		t.Fatalf("state %d reported", s-1)
	}
	if s := b.Snapshot(); s.ProbesInFlight != 0 {
		t.Fatalf("%d probes in flight after every call finished", s.ProbesInFlight)
	}
}
