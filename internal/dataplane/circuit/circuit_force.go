package circuit

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock"
)

// ForceSource reads the fleet-wide forced_open override of a dependency (the
// item breaker#<dependency> of the control-plane store). An absent item is
// not an error: it reports an inactive Force.
type ForceSource interface {
	ForcedOpen(ctx context.Context, dependency string) (breaker.Force, error)
}

// ForceSourceFunc adapts a function to [ForceSource].
type ForceSourceFunc func(ctx context.Context, dependency string) (breaker.Force, error)

// ForcedOpen calls f.
func (f ForceSourceFunc) ForcedOpen(ctx context.Context, dependency string) (breaker.Force, error) {
	return f(ctx, dependency)
}

var (
	_ ForceSource = ForceSourceFunc(nil)
	// The control plane's override client is the production source.
	_ ForceSource = (*breaker.Overrides)(nil)
)

// Defaults used for zero-valued [WatcherSettings] fields.
const (
	// DefaultRefreshInterval: the override is read at most once per
	// [breaker.CacheTTL] (5 s).
	DefaultRefreshInterval = breaker.CacheTTL
	// DefaultReadTimeout bounds one read of the override, so a slow store
	// delays the call that triggers the refresh by at most this long.
	DefaultReadTimeout = 500 * time.Millisecond
)

// WatcherSettings configure a [ForceWatcher]. Every zero field takes the
// default written in its comment.
type WatcherSettings struct {
	// RefreshInterval is the cache age after which the next Sync reads the
	// source again. Zero means 5 s.
	RefreshInterval time.Duration
	// ReadTimeout bounds one read of the source. Zero means 500 ms.
	ReadTimeout time.Duration
	// Clock tells the cache's age. Nil means the breaker's clock.
	Clock clock.Clock
	// Logger receives one event per failed read. Nil means the breaker's
	// logger.
	Logger *slog.Logger
}

// ForceWatcher applies a dependency's forced_open override to its breaker.
// It caches what the [ForceSource] said and reads it again at most once per
// refresh interval, on the first [ForceWatcher.Sync] after the cache has aged;
// concurrent callers do not wait for that read, they use the cached value.
//
// The rules are those of the design's degradation matrix: an active override
// forces the breaker open from any state; an absent or expired override
// clears it (the breaker closes); a failed read keeps the last known value
// and is counted ([ForceWatcher.ReadErrors]) for a metric and an alarm. An
// override's expiry is honored when it passes, even between reads and while
// the store is failing.
type ForceWatcher struct {
	b        *Breaker
	src      ForceSource
	clock    clock.Clock
	logger   *slog.Logger
	interval time.Duration
	timeout  time.Duration

	next      atomic.Int64 // UnixNano at or after which the cache is stale
	expiresAt atomic.Int64 // UnixNano expiry of an active cached force, 0 if none
	reading   atomic.Bool  // a read is in progress
	reads     atomic.Uint64
	errors    atomic.Uint64

	mu   sync.Mutex // serializes applying a value to the breaker
	last breaker.Force
}

// NewForceWatcher returns a watcher applying src's override for b.Name() to b.
// Nothing is read until the first Sync.
func NewForceWatcher(b *Breaker, src ForceSource, s WatcherSettings) *ForceWatcher {
	if s.RefreshInterval <= 0 {
		s.RefreshInterval = DefaultRefreshInterval
	}
	if s.ReadTimeout <= 0 {
		s.ReadTimeout = DefaultReadTimeout
	}
	if s.Clock == nil {
		s.Clock = b.clock
	}
	if s.Logger == nil {
		s.Logger = b.logger
	}
	return &ForceWatcher{
		b:        b,
		src:      src,
		clock:    s.Clock,
		logger:   s.Logger,
		interval: s.RefreshInterval,
		timeout:  s.ReadTimeout,
	}
}

// Breaker returns the breaker the watcher drives.
func (w *ForceWatcher) Breaker() *Breaker { return w.b }

// Sync brings the breaker in line with the override: it reads the source if
// the cached value is older than the refresh interval (bounded by ctx and the
// read timeout), and otherwise only checks the cached override's expiry. Call
// it before [Breaker.Allow] on the request path; a fresh cache costs a clock
// read and two atomic loads. It reports whether it read the source (and so
// may have taken up to the read timeout).
func (w *ForceWatcher) Sync(ctx context.Context) (read bool) {
	now := w.clock.Now()
	ns := now.UnixNano()
	if ns < w.next.Load() {
		if exp := w.expiresAt.Load(); exp != 0 && ns >= exp {
			w.expire(now)
		}
		return false
	}
	if !w.reading.CompareAndSwap(false, true) {
		return false // another caller is reading; use the cached value meanwhile
	}
	defer w.reading.Store(false)
	if ns < w.next.Load() { // refreshed between our check and the CAS
		return false
	}
	rctx, cancel := context.WithTimeout(ctx, w.timeout)
	f, err := w.src.ForcedOpen(rctx, w.b.Name())
	cancel()
	w.reads.Add(1)
	if err != nil {
		if ctx.Err() != nil {
			// The caller gave up, not the store: try again on the next call.
			return true
		}
		w.errors.Add(1)
		w.next.Store(ns + int64(w.interval))
		w.logger.LogAttrs(ctx, slog.LevelWarn, "breaker override read failed; keeping last known value",
			slog.String("event", "breaker_override_read_failed"),
			slog.String("dependency", w.b.Name()),
			slog.Bool("forced", w.lastForce().ActiveAt(now)),
			slog.Uint64("read_errors", w.errors.Load()),
			slog.String("error", err.Error()),
		)
		if exp := w.expiresAt.Load(); exp != 0 && ns >= exp {
			w.expire(now)
		}
		return true
	}
	w.apply(f, now)
	w.next.Store(ns + int64(w.interval))
	return true
}

// apply records f as the last known value and forces or clears the breaker.
func (w *ForceWatcher) apply(f breaker.Force, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if f.Malformed != "" && f.Malformed != w.last.Malformed {
		w.logger.LogAttrs(context.Background(), slog.LevelWarn, "breaker override item is malformed; applying the safe reading",
			slog.String("event", "breaker_override_malformed"),
			slog.String("dependency", w.b.Name()),
			slog.Bool("forced", f.ActiveAt(now)),
			slog.String("problem", f.Malformed),
		)
	}
	w.last = f
	if f.ActiveAt(now) {
		var exp int64
		if !f.ExpiresAt.IsZero() {
			exp = f.ExpiresAt.UnixNano()
		}
		w.expiresAt.Store(exp)
		if w.b.force(true, ReasonOverrideSet) && f.Reason != "" {
			w.logger.LogAttrs(context.Background(), slog.LevelWarn, "breaker override applied",
				slog.String("event", "breaker_override_applied"),
				slog.String("dependency", w.b.Name()),
				slog.String("override_reason", f.Reason),
			)
		}
		return
	}
	w.expiresAt.Store(0)
	reason := ReasonOverrideCleared
	if f.Active { // present but past its expiry
		reason = ReasonOverrideExpired
	}
	w.b.force(false, reason)
}

// expire clears the breaker when the cached override's expiry has passed.
func (w *ForceWatcher) expire(now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	exp := w.expiresAt.Load()
	if exp == 0 || now.UnixNano() < exp {
		return
	}
	w.expiresAt.Store(0)
	w.b.force(false, ReasonOverrideExpired)
}

func (w *ForceWatcher) lastForce() breaker.Force {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

// NextSync is the earliest instant a [ForceWatcher.Sync] has something to
// do: the cache goes stale (the next Sync reads the source) or the cached
// override expires, whichever is first. Zero before the first read. A
// caller without traffic of its own syncs at this instant, so a change
// written just after a read reaches the breaker within one refresh
// interval, never a polling period later.
func (w *ForceWatcher) NextSync() time.Time {
	at := w.next.Load()
	if at == 0 {
		return time.Time{}
	}
	if exp := w.expiresAt.Load(); exp != 0 && exp < at {
		at = exp
	}
	return time.Unix(0, at)
}

// Last returns the override as last read successfully (the zero [breaker.Force] before
// the first successful read).
func (w *ForceWatcher) Last() breaker.Force { return w.lastForce() }

// Reads counts reads of the source, failed ones included.
func (w *ForceWatcher) Reads() uint64 { return w.reads.Load() }

// ReadErrors counts failed reads of the source (reads abandoned because the
// caller's context ended are not counted). Expose it as a metric: while it
// grows, overrides are not being applied.
func (w *ForceWatcher) ReadErrors() uint64 { return w.errors.Load() }
