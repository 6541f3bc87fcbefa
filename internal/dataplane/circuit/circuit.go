package circuit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock"
)

// Outcome is the result of one admitted call as the breaker counts it.
type Outcome uint8

// The outcomes a call can report to [Breaker.Done].
const (
	// Success: the dependency answered correctly. A 4xx answer is a success
	// for the breaker: the dependency is healthy, the request was wrong.
	Success Outcome = iota
	// Failure: a timeout, a connection error or a 5xx answer.
	Failure
	// Ignored: the call tells nothing about the dependency (the caller gave
	// up, or the call never left). It is not counted, and a half-open probe
	// reporting it frees its slot for another probe.
	Ignored
)

// String returns "success", "failure" or "ignored".
func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case Failure:
		return "failure"
	case Ignored:
		return "ignored"
	}
	return fmt.Sprintf("outcome(%d)", uint8(o))
}

// Sentinel errors returned by [Breaker.Allow] and [Breaker.Execute], and by
// [New]. Match them with errors.Is.
var (
	// ErrOpen: the breaker is open and rejects calls until its open
	// duration has elapsed. [ErrForcedOpen] also matches it.
	ErrOpen = errors.New("circuit breaker open")
	// ErrTooManyProbes: the breaker is half-open and all its probe slots are
	// taken; the call fails fast.
	ErrTooManyProbes = errors.New("circuit breaker half-open: probe limit reached")
	// ErrForcedOpen: an operator override holds the breaker open. It matches
	// [ErrOpen] too, so callers that only care whether calls are refused need
	// check one error.
	ErrForcedOpen error = forcedOpenError{}
	// ErrInvalidSettings is wrapped by [New] when a setting is out of range.
	ErrInvalidSettings = errors.New("invalid breaker settings")
)

type forcedOpenError struct{}

func (forcedOpenError) Error() string        { return "circuit breaker forced open by override" }
func (forcedOpenError) Is(target error) bool { return target == ErrOpen }

// Defaults used for zero-valued [Settings] fields.
const (
	DefaultWindowSize   = 20
	DefaultFailureRate  = 0.5
	DefaultOpenDuration = 15 * time.Second
	DefaultProbes       = 3
	// maxWindowSize bounds WindowSize so a typo cannot allocate gigabytes.
	maxWindowSize = 1 << 16
)

// Settings configure a [Breaker]. The zero value is usable: every zero field
// takes the default written in its comment.
type Settings struct {
	// Name is the dependency the breaker guards ("core-api"). It names the
	// breaker in log events, in [Transition] and to the [GaugeSetter], and is
	// the dependency a [ForceWatcher] looks the override up for. Empty is
	// allowed but makes events hard to read.
	Name string
	// WindowSize is N, how many of the most recent outcomes the count-based
	// sliding window holds. Zero means 20 (DefaultWindowSize).
	WindowSize int
	// MinCalls is how many outcomes the window must hold before the failure
	// rate can open the breaker. Zero means WindowSize; it cannot exceed it.
	MinCalls int
	// FailureRate is the threshold in (0, 1]: the breaker opens when
	// failures/calls over the window is at least FailureRate (exactly at the
	// threshold opens). Zero means 0.5.
	FailureRate float64
	// OpenDuration is how long the breaker stays open before it admits
	// probes. Zero means 15 s.
	OpenDuration time.Duration
	// Probes is how many probe calls half-open admits, and how many of them
	// must succeed (all of them) to close again; any probe failure reopens.
	// Zero means 3.
	Probes int
	// Classify turns the error returned by the function given to
	// [Breaker.Execute] into an outcome. Nil means [DefaultClassify]. The
	// two-step API ([Breaker.Allow], [Breaker.Done]) does not use it.
	Classify func(error) Outcome
	// Clock tells the time for the open duration. Nil means the wall clock.
	Clock clock.Clock
	// Logger receives one structured event per state change. Nil means
	// slog.Default(); pass slog.New(slog.DiscardHandler) to silence it.
	Logger *slog.Logger
	// OnStateChange, when set, is called on every state change.
	OnStateChange func(Transition)
	// Gauge, when set, is told the state at construction and on every state
	// change (the breaker_state gauge).
	Gauge GaugeSetter
}

// GaugeSetter receives the breaker_state gauge: the state's numeric value
// (0 closed, 1 half-open, 2 open, 3 forced) per dependency. The sandbox backs
// it with a Prometheus gauge.
type GaugeSetter interface {
	SetBreakerState(dependency string, s State)
}

// Reason says why a state change happened.
type Reason string

// Reasons carried by [Transition] and the state-change log event.
const (
	// ReasonFailureRate: closed → open, the window's failure rate reached the
	// threshold with at least MinCalls outcomes.
	ReasonFailureRate Reason = "failure_rate"
	// ReasonOpenElapsed: open → half_open, the open duration elapsed.
	ReasonOpenElapsed Reason = "open_elapsed"
	// ReasonProbesSucceeded: half_open → closed, every probe succeeded.
	ReasonProbesSucceeded Reason = "probes_succeeded"
	// ReasonProbeFailed: half_open → open, a probe failed.
	ReasonProbeFailed Reason = "probe_failed"
	// ReasonForced: → forced_open by [Breaker.ForceOpen].
	ReasonForced Reason = "forced"
	// ReasonForceCleared: forced_open → closed by [Breaker.ClearForce].
	ReasonForceCleared Reason = "force_cleared"
	// ReasonOverrideSet: → forced_open because the store override is active.
	ReasonOverrideSet Reason = "override_set"
	// ReasonOverrideCleared: forced_open → closed because the store override
	// is gone.
	ReasonOverrideCleared Reason = "override_cleared"
	// ReasonOverrideExpired: forced_open → closed because the override's
	// expiry passed.
	ReasonOverrideExpired Reason = "override_expired"
)

// Transition describes one state change.
type Transition struct {
	// Name is the breaker's dependency name.
	Name string
	// From and To are the states left and entered.
	From, To State
	// Reason says why.
	Reason Reason
	// Generation is the generation entered; it increases by one per change.
	Generation uint64
	// At is the breaker clock's time of the change.
	At time.Time
	// Calls and Failures are the window's counts when the change happened
	// (for closed → open, the numbers that opened it).
	Calls, Failures int
}

// Permit is an admission handed out by [Breaker.Allow]. Pass it to
// [Breaker.Done] exactly once. It is a small value: keeping and passing it
// allocates nothing. The zero Permit is never admitted, and Done ignores it.
type Permit struct {
	gen   uint64
	probe bool
}

// Probe reports whether the call was admitted as a half-open probe.
func (p Permit) Probe() bool { return p.probe }

// Snapshot is a consistent view of a breaker, for health endpoints and tests.
type Snapshot struct {
	Name  string
	State State
	// Generation increases by one on every state change.
	Generation uint64
	// Calls and Failures count the outcomes in the window (while open, those
	// that opened it).
	Calls, Failures int
	// FailureRate is Failures/Calls, 0 when Calls is 0.
	FailureRate float64
	// ProbesAdmitted and ProbesSucceeded count this half-open period's probes.
	ProbesAdmitted, ProbesSucceeded int
	// ProbesInFlight counts probe permits not yet done, of any generation.
	ProbesInFlight int
	// OpenedAt is when the breaker last opened (zero if never).
	OpenedAt time.Time
	// RemainingOpen is how long an open breaker still rejects (0 otherwise).
	RemainingOpen time.Duration
	// Rejected counts calls refused since construction.
	Rejected uint64
}

const (
	stateBits = 2
	stateMask = 1<<stateBits - 1
)

// Breaker is a count-based circuit breaker with the states closed, half_open,
// open and forced_open. It is safe for concurrent use. The closed-state
// admission is a single atomic load; recording an outcome takes one short
// mutex hold; neither allocates.
//
// Every state change starts a new generation. A permit remembers the
// generation it was issued in, and an outcome reported for an older
// generation is ignored: a slow call admitted while closed cannot reopen a
// breaker that has since closed again.
type Breaker struct {
	// Fixed after New.
	name       string
	minCalls   int
	probes     int
	openFor    time.Duration
	thresholds []int
	classify   func(error) Outcome
	clock      clock.Clock
	logger     *slog.Logger
	onChange   func(Transition)
	gauge      GaugeSetter

	_ [64]byte // keep word off the lines written under mu
	// word packs generation<<stateBits | state, so the closed-state fast
	// path is one atomic load. Written only with mu held.
	word atomic.Uint64
	_    [56]byte

	mu        sync.Mutex
	win       window
	openedAt  time.Time
	admitted  int // probes admitted in the current half-open generation
	succeeded int // of those, how many succeeded
	inFlight  int // probe permits not yet done, all generations
	rejected  atomic.Uint64
}

// New returns a closed breaker configured by s, or an error wrapping
// [ErrInvalidSettings] when a setting is out of range.
func New(s Settings) (*Breaker, error) {
	if s.WindowSize == 0 {
		s.WindowSize = DefaultWindowSize
	}
	if s.MinCalls == 0 {
		s.MinCalls = s.WindowSize
	}
	if s.FailureRate == 0 {
		s.FailureRate = DefaultFailureRate
	}
	if s.OpenDuration == 0 {
		s.OpenDuration = DefaultOpenDuration
	}
	if s.Probes == 0 {
		s.Probes = DefaultProbes
	}
	switch {
	case s.WindowSize < 0 || s.WindowSize > maxWindowSize:
		return nil, fmt.Errorf("new breaker %q: window size %d not in 1..%d: %w", s.Name, s.WindowSize, maxWindowSize, ErrInvalidSettings)
	case s.MinCalls < 0 || s.MinCalls > s.WindowSize:
		return nil, fmt.Errorf("new breaker %q: min calls %d not in 1..%d (window size): %w", s.Name, s.MinCalls, s.WindowSize, ErrInvalidSettings)
	case math.IsNaN(s.FailureRate) || s.FailureRate < 0 || s.FailureRate > 1:
		return nil, fmt.Errorf("new breaker %q: failure rate %v not in (0, 1]: %w", s.Name, s.FailureRate, ErrInvalidSettings)
	case s.OpenDuration < 0:
		return nil, fmt.Errorf("new breaker %q: negative open duration %v: %w", s.Name, s.OpenDuration, ErrInvalidSettings)
	case s.Probes < 0:
		return nil, fmt.Errorf("new breaker %q: negative probe count %d: %w", s.Name, s.Probes, ErrInvalidSettings)
	}
	if s.Classify == nil {
		s.Classify = DefaultClassify
	}
	if s.Clock == nil {
		s.Clock = clock.Real{}
	}
	if s.Logger == nil {
		s.Logger = slog.Default()
	}
	b := &Breaker{
		name:       s.Name,
		minCalls:   s.MinCalls,
		probes:     s.Probes,
		openFor:    s.OpenDuration,
		thresholds: openThresholds(s.WindowSize, s.FailureRate),
		classify:   s.Classify,
		clock:      s.Clock,
		logger:     s.Logger,
		onChange:   s.OnStateChange,
		gauge:      s.Gauge,
		win:        newWindow(s.WindowSize),
	}
	// Generation 1, closed: the zero Permit (generation 0) is never current.
	b.word.Store(1<<stateBits | uint64(Closed))
	if b.gauge != nil {
		b.gauge.SetBreakerState(b.name, Closed)
	}
	return b, nil
}

// DefaultClassify is the [Settings.Classify] used when none is set: nil is a
// success, an error matching context.Canceled is ignored (the caller gave up;
// it says nothing about the dependency), anything else is a failure.
func DefaultClassify(err error) Outcome {
	switch {
	case err == nil:
		return Success
	case errors.Is(err, context.Canceled):
		return Ignored
	}
	return Failure
}

// Name returns the dependency name the breaker was built with.
func (b *Breaker) Name() string { return b.name }

// Allow asks to start a call. It returns a permit to pass to [Breaker.Done]
// once the call's outcome is known, or [ErrOpen], [ErrForcedOpen] or
// [ErrTooManyProbes] when the call must fail fast. An open breaker whose
// open duration has elapsed turns half-open here and admits the call as a
// probe.
func (b *Breaker) Allow() (Permit, error) {
	if w := b.word.Load(); State(w&stateMask) == Closed {
		return Permit{gen: w >> stateBits}, nil
	}
	return b.allowSlow()
}

func (b *Breaker) allowSlow() (Permit, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	w := b.word.Load()
	switch State(w & stateMask) {
	case Closed:
		return Permit{gen: w >> stateBits}, nil
	case ForcedOpen:
		b.rejected.Add(1)
		return Permit{}, ErrForcedOpen
	case Open:
		if b.clock.Now().Sub(b.openedAt) < b.openFor {
			b.rejected.Add(1)
			return Permit{}, ErrOpen
		}
		w = b.setState(HalfOpen, ReasonOpenElapsed)
	case HalfOpen:
		// Admitted below while probe slots are left.
	}
	// Half-open: admit a probe while this period has slots left and no more
	// than Probes probes (of any generation) are still running.
	if b.admitted >= b.probes || b.inFlight >= b.probes {
		b.rejected.Add(1)
		return Permit{}, ErrTooManyProbes
	}
	b.admitted++
	b.inFlight++
	return Permit{gen: w >> stateBits, probe: true}, nil
}

// Done reports the outcome of a call admitted by [Breaker.Allow]. Every
// permit must be done exactly once, whatever happened to the call (a probe
// permit that is never done holds its probe slot). Outcomes of permits from
// an earlier generation are ignored. Outcome values other than Success and
// Ignored count as Failure.
func (b *Breaker) Done(p Permit, o Outcome) {
	if p.gen == 0 {
		return
	}
	b.mu.Lock()
	if p.probe {
		b.inFlight--
	}
	w := b.word.Load()
	if w>>stateBits != p.gen {
		b.mu.Unlock()
		return
	}
	switch State(w & stateMask) {
	case Closed:
		if o != Ignored {
			b.win.record(o != Success)
			if b.win.calls >= b.minCalls && b.win.failures >= b.thresholds[b.win.calls] {
				b.setState(Open, ReasonFailureRate)
			}
		}
	case HalfOpen:
		switch o {
		case Success:
			b.succeeded++
			if b.succeeded >= b.probes {
				b.setState(Closed, ReasonProbesSucceeded)
			}
		case Ignored:
			b.admitted--
		default:
			b.setState(Open, ReasonProbeFailed)
		}
	case Open, ForcedOpen:
		// No permit carries an open generation: nothing to record.
	}
	b.mu.Unlock()
}

// Execute runs fn if the breaker admits it and records its outcome, as
// classified by [Settings.Classify]. It returns fn's error, or the rejection
// from [Breaker.Allow] without calling fn. If fn panics, the panic is recorded
// as a failure and continues unwinding.
func (b *Breaker) Execute(fn func() error) error {
	p, err := b.Allow()
	if err != nil {
		return err
	}
	finished := false
	defer func() {
		if !finished { // fn panicked or called runtime.Goexit
			b.Done(p, Failure)
		}
	}()
	err = fn()
	finished = true
	b.Done(p, b.classify(err))
	return err
}

// State returns the current state. An open breaker whose open duration has
// elapsed is reported, and becomes, half-open.
func (b *Breaker) State() State {
	w := b.word.Load()
	if State(w&stateMask) != Open {
		return State(w & stateMask)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.refreshOpen()
}

// refreshOpen turns an open breaker half-open once the open duration has
// elapsed and returns the state. Call with mu held.
func (b *Breaker) refreshOpen() State {
	w := b.word.Load()
	if State(w&stateMask) == Open && b.clock.Now().Sub(b.openedAt) >= b.openFor {
		w = b.setState(HalfOpen, ReasonOpenElapsed)
	}
	return State(w & stateMask)
}

// RemainingOpen returns how long an open breaker will keep rejecting calls,
// or 0 when it is not open (a forced breaker has no known end: 0).
func (b *Breaker) RemainingOpen() time.Duration {
	if State(b.word.Load()&stateMask) != Open {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.remainingOpen()
}

func (b *Breaker) remainingOpen() time.Duration {
	if State(b.word.Load()&stateMask) != Open {
		return 0
	}
	return max(0, b.openFor-b.clock.Now().Sub(b.openedAt))
}

// Snapshot returns a consistent view of the breaker. Like [Breaker.State],
// it turns an open breaker whose open duration has elapsed half-open.
func (b *Breaker) Snapshot() Snapshot {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.refreshOpen()
	s := Snapshot{
		Name:           b.name,
		State:          st,
		Generation:     b.word.Load() >> stateBits,
		Calls:          b.win.calls,
		Failures:       b.win.failures,
		OpenedAt:       b.openedAt,
		RemainingOpen:  b.remainingOpen(),
		Rejected:       b.rejected.Load(),
		ProbesInFlight: b.inFlight,
	}
	if st == HalfOpen {
		s.ProbesAdmitted, s.ProbesSucceeded = b.admitted, b.succeeded
	}
	if s.Calls > 0 {
		s.FailureRate = float64(s.Failures) / float64(s.Calls)
	}
	return s
}

// ForceOpen holds the breaker in forced_open from any state: every call is
// rejected with [ErrForcedOpen] until [Breaker.ClearForce]. Forcing a forced
// breaker does nothing. A [ForceWatcher] calls it for the store override; an
// operator tool may call it directly, but a watcher attached to the same
// breaker will clear a force the store does not hold at its next read.
func (b *Breaker) ForceOpen() { b.force(true, ReasonForced) }

// ClearForce ends forced_open: the breaker closes with an empty window.
// Clearing a breaker that is not forced does nothing.
func (b *Breaker) ClearForce() { b.force(false, ReasonForceCleared) }

// force enters (on) or leaves forced_open, reporting whether the state changed.
func (b *Breaker) force(on bool, reason Reason) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	forced := State(b.word.Load()&stateMask) == ForcedOpen
	switch {
	case on && !forced:
		b.setState(ForcedOpen, reason)
	case !on && forced:
		b.setState(Closed, reason)
	default:
		return false
	}
	return true
}

// setState moves to state to, starting a new generation, and tells the
// observers. Call with mu held. It returns the new word.
func (b *Breaker) setState(to State, reason Reason) uint64 {
	old := b.word.Load()
	gen := old>>stateBits + 1
	w := gen<<stateBits | uint64(to)
	now := b.clock.Now()
	t := Transition{
		Name:       b.name,
		From:       State(old & stateMask),
		To:         to,
		Reason:     reason,
		Generation: gen,
		At:         now,
		Calls:      b.win.calls,
		Failures:   b.win.failures,
	}
	switch to {
	case Closed:
		b.win.reset()
	case Open:
		b.openedAt = now
	case HalfOpen:
		b.admitted, b.succeeded = 0, 0
	case ForcedOpen:
		// Nothing to reset: the override holds until it is cleared.
	}
	b.word.Store(w)
	b.emit(t)
	return w
}

// emit tells the gauge, the hook and the log about a state change. It runs
// with mu held, so observers see changes in order; they must not call back
// into the breaker.
func (b *Breaker) emit(t Transition) {
	if b.gauge != nil {
		b.gauge.SetBreakerState(t.Name, t.To)
	}
	if b.onChange != nil {
		b.onChange(t)
	}
	level := slog.LevelInfo
	if t.To.Rejecting() {
		level = slog.LevelWarn
	}
	b.logger.LogAttrs(context.Background(), level, "breaker state change",
		slog.String("event", "breaker_state_change"),
		slog.String("dependency", t.Name),
		slog.String("from", t.From.String()),
		slog.String("to", t.To.String()),
		slog.Int("breaker_state", int(t.To)),
		slog.String("reason", string(t.Reason)),
		slog.Uint64("generation", t.Generation),
		slog.Int("window_calls", t.Calls),
		slog.Int("window_failures", t.Failures),
	)
}
