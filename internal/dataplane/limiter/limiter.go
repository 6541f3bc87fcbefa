package limiter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/store"
)

// DefaultMaxCASRetries is the LLD's bound on refused conditional writes per
// take ("max 3").
const DefaultMaxCASRetries = 3

// ErrContention is the cause recorded when a take gave up after its
// conditional writes were refused MaxCASRetries+1 times in a row.
var ErrContention = errors.New("bucket contended: conditional write refused on every attempt")

// BucketStore is what [Limiter] needs of a store.
type BucketStore interface {
	Get(ctx context.Context, pk string) (store.Item, error)
	Put(ctx context.Context, item store.Item, cond store.Condition) error
}

var _ BucketStore = store.Store(nil)

// Outcome classifies a take for metrics and logs.
type Outcome uint8

const (
	// OutcomeAdmitted: a token was spent.
	OutcomeAdmitted Outcome = iota
	// OutcomeDenied: the bucket held less than one token.
	OutcomeDenied
	// OutcomeDeniedContention: the take gave up after its conditional
	// writes were refused on every attempt, and refused the request.
	OutcomeDeniedContention
	// OutcomeFailOpenContention: what the LLD's pseudocode does after its
	// conditional writes were refused on every attempt: allow the request
	// unmetered (flaw 3). [Limiter] never decides it; the label stays so a
	// data plane that follows the pseudocode reports in the same terms.
	OutcomeFailOpenContention
	// OutcomeFailOpenError: the store failed (unavailable, throttled, a
	// malformed item); the request was allowed unmetered, as the degradation
	// matrix says.
	OutcomeFailOpenError
)

// String returns the outcome's metric label: admitted, denied,
// denied_contention, fail_open_contention or fail_open_error.
func (o Outcome) String() string {
	switch o {
	case OutcomeAdmitted:
		return "admitted"
	case OutcomeDenied:
		return "denied"
	case OutcomeDeniedContention:
		return "denied_contention"
	case OutcomeFailOpenContention:
		return "fail_open_contention"
	case OutcomeFailOpenError:
		return "fail_open_error"
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// Decision is the result of one take.
type Decision struct {
	// Allowed says whether the request may proceed.
	Allowed bool
	// Outcome says why.
	Outcome Outcome
	// FailOpen is true when the request was allowed without spending a token
	// (Outcome is OutcomeFailOpenError or OutcomeFailOpenContention).
	FailOpen bool
	// Remaining is the tokens left after the take (when admitted) or the
	// refilled level that was too low (when denied). It is meaningless when
	// FailOpen.
	Remaining float64
	// RetryAfter is, for a refused request, how long until the bucket holds a
	// token: the LLD's retry_after. On contention it is one refill interval.
	RetryAfter time.Duration
	// CASRetries counts the conditional writes refused before the decision.
	CASRetries int
	// Cause is the store error (or ErrContention) behind a fail-open or a
	// contention denial; nil otherwise. It never reaches the client.
	Cause error
	// Limits are the limits the decision was made with.
	Limits ratelimit.Limits
}

// Observer receives every decision a [Limiter] makes, for metrics (the
// sandbox exports them as Prometheus counters, labeled by
// [Outcome.String]). It is called synchronously at the end of each take that
// returns a decision (not for an invalid client id or a canceled context)
// and must be safe for concurrent use.
type Observer interface {
	ObserveTake(client string, d Decision)
}

// ObserverFunc adapts a function to [Observer].
type ObserverFunc func(client string, d Decision)

// ObserveTake calls f.
func (f ObserverFunc) ObserveTake(client string, d Decision) { f(client, d) }

// Config configures a [Limiter]. The zero value is the LLD's limits, 3 CAS
// retries and the wall clock.
type Config struct {
	// Limits of every bucket; zero fields take the LLD's defaults.
	Limits ratelimit.Limits
	// MaxCASRetries bounds refused conditional writes per take; zero means
	// DefaultMaxCASRetries, negative means none (one attempt).
	MaxCASRetries int
	// Clock tells the time; nil means the wall clock.
	Clock clock.Clock
	// Observer, when set, sees every decision.
	Observer Observer
}

// Limiter takes tokens from buckets on a store. It is safe for concurrent use
// and holds no per-client state: every take reads and conditionally writes the
// bucket item, so any number of limiters (one per data-plane instance) share
// the buckets correctly.
type Limiter struct {
	store    BucketStore
	limits   ratelimit.Limits
	retries  int
	clock    clock.Clock
	observer Observer
}

// New returns a Limiter on s. It fails only when cfg.Limits are invalid.
func New(s BucketStore, cfg Config) (*Limiter, error) {
	l := cfg.Limits.WithDefaults()
	if err := l.Validate(); err != nil {
		return nil, err
	}
	retries := cfg.MaxCASRetries
	switch {
	case retries == 0:
		retries = DefaultMaxCASRetries
	case retries < 0:
		retries = 0
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	return &Limiter{store: s, limits: l, retries: retries, clock: clk, observer: cfg.Observer}, nil
}

// Limits returns the limiter's limits.
func (l *Limiter) Limits() ratelimit.Limits { return l.limits }

// Take decides whether client may make one request now, spending a token if
// so. Store failures do not return an error: they fail open (Allowed, FailOpen,
// Cause set), as the LLD's degradation matrix requires. Take returns an error
// only for an invalid client id (wrapping [ratelimit.ErrInvalidClient]) or when ctx ends
// (wrapping ctx.Err()); the Decision is then not allowed.
func (l *Limiter) Take(ctx context.Context, client string) (Decision, error) {
	if err := ratelimit.ValidateClientID(client); err != nil {
		return Decision{Limits: l.limits}, err
	}
	d, err := l.take(ctx, client)
	d.Limits = l.limits
	if err != nil {
		return d, err
	}
	if l.observer != nil {
		l.observer.ObserveTake(client, d)
	}
	return d, nil
}

// read returns the bucket (nil when absent).
func (l *Limiter) read(ctx context.Context, pk string) (*ratelimit.Bucket, error) {
	it, err := l.store.Get(ctx, pk)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	b, err := ratelimit.BucketFromItem(it)
	if err != nil {
		return nil, err
	}
	return &b, nil
}

// storeFailure turns a store error into a fail-open decision, unless the
// caller's context ended (the request is gone: no decision to make).
func storeFailure(ctx context.Context, retries int, err error) (Decision, error) {
	if ctx.Err() != nil {
		return Decision{CASRetries: retries}, fmt.Errorf("take token: %w", ctx.Err())
	}
	return Decision{Allowed: true, FailOpen: true, Outcome: OutcomeFailOpenError, CASRetries: retries, Cause: err}, nil
}

// take is the LLD's take with its four known flaws fixed (the pseudocode as
// written is kept beside the tests, lld_test.go, which measure the flaws).
// Against the LLD it changes four things:
//
//   - updated_at is written as max(now, seen+1): strictly increasing, so the
//     "updated_at = :seen" condition is a real compare-and-set even for two
//     takes in one millisecond or on a lagging clock (flaw 1);
//   - elapsed time is clamped at zero: a lagging clock neither refills
//     backwards nor moves updated_at backwards (flaw 2);
//   - when the refused writes run out, the request is denied, not allowed:
//     contention is the client's own concurrency (flaw 3); only store failures
//     fail open;
//   - a missing item is created under attribute_not_exists(pk) alone, so two
//     first takes cannot both create it (flaw 4).
//
// After a refused write it re-reads, or uses the current item when the store
// returned it with the refusal.
func (l *Limiter) take(ctx context.Context, client string) (Decision, error) {
	pk := ratelimit.Key(client)
	var (
		b      *ratelimit.Bucket
		reread = true
	)
	for retries := 0; ; retries++ {
		if reread {
			var err error
			if b, err = l.read(ctx, pk); err != nil {
				return storeFailure(ctx, retries, err)
			}
		}
		now := l.clock.Now().UnixMilli()
		var (
			refilled = l.limits.Capacity
			stamp    = now
			cond     = store.IfAbsent()
		)
		if b != nil {
			refilled = l.limits.Refill(b.Tokens, b.UpdatedAtMs, now)
			stamp = max(now, b.UpdatedAtMs+1)
			cond = store.IfEquals(ratelimit.AttrUpdatedAt, b.UpdatedAtMs)
		}
		if refilled < 1 {
			wait := l.limits.RetryAfter(refilled)
			if b != nil && b.UpdatedAtMs > now {
				wait += time.Duration(b.UpdatedAtMs-now) * time.Millisecond
			}
			return Decision{Outcome: OutcomeDenied, Remaining: refilled, RetryAfter: wait, CASRetries: retries}, nil
		}
		next := ratelimit.Bucket{Client: client, Tokens: refilled - 1, UpdatedAtMs: stamp}
		if b != nil {
			// The contract: a take carries the operator's write token forward.
			next.WriteID = b.WriteID
		}
		next.TTL = l.limits.TTL(stamp, next.Tokens)
		err := l.store.Put(ctx, next.Item(), cond)
		switch {
		case err == nil:
			return Decision{Allowed: true, Outcome: OutcomeAdmitted, Remaining: next.Tokens, CASRetries: retries}, nil
		case !errors.Is(err, store.ErrConditionFailed):
			return storeFailure(ctx, retries, err)
		case retries == l.retries:
			return Decision{Outcome: OutcomeDeniedContention, Remaining: refilled,
				RetryAfter: l.limits.TimeUntil(0, 1), CASRetries: retries + 1, Cause: ErrContention}, nil
		}
		b, reread = currentFrom(err)
	}
}

// currentFrom returns the current bucket carried by a refusal, when the store
// sent a well-formed one; otherwise it asks for a re-read.
func currentFrom(err error) (*ratelimit.Bucket, bool) {
	var ce *store.ConditionError
	if !errors.As(err, &ce) || ce.Current == nil {
		return nil, true
	}
	b, derr := ratelimit.BucketFromItem(ce.Current)
	if derr != nil {
		return nil, true
	}
	return &b, false
}
