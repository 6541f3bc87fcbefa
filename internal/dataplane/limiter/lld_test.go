package limiter_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/dataplane/limiter"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/ratelimit/ratelimittest"
	"github.com/kosha-platform/koshactl/internal/store"
)

// variant selects the take a test or the benchmark runs: the production
// [limiter.Limiter] (fixed), or the LLD's pseudocode as written (lld),
// which exists only here, so its four known flaws (docs/contracts/
// rate-limit-bucket.md) stay measured without being something a caller can
// select.
type variant uint8

const (
	variantFixed variant = iota
	variantLLD
)

var variants = []variant{variantFixed, variantLLD}

func (v variant) String() string {
	if v == variantLLD {
		return "lld"
	}
	return "fixed"
}

// taker is what the tests and the benchmark call.
type taker interface {
	Take(ctx context.Context, client string) (limiter.Decision, error)
}

var (
	_ taker = (*limiter.Limiter)(nil)
	_ taker = (*lldLimiter)(nil)
)

// newTaker returns the production limiter for variantFixed and the LLD
// reference for variantLLD, configured alike.
func newTaker(s limiter.BucketStore, v variant, cfg limiter.Config) (taker, error) {
	if v == variantFixed {
		return limiter.New(s, cfg)
	}
	l := cfg.Limits.WithDefaults()
	if err := l.Validate(); err != nil {
		return nil, err
	}
	retries := cfg.MaxCASRetries
	switch {
	case retries == 0:
		retries = limiter.DefaultMaxCASRetries
	case retries < 0:
		retries = 0
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	return &lldLimiter{store: s, limits: l, retries: retries, clock: clk}, nil
}

// lldLimiter is section 6's pseudocode, line for line:
//
//	item = get(pk) or {"tokens": CAPACITY, "updated_at": now}
//	refilled = min(CAPACITY, item.tokens + (now - item.updated_at) / 1000 * RATE)
//	if refilled < 1: raise RateLimited(retry_after=(1 - refilled) / RATE)
//	update(pk, SET tokens = refilled - 1, updated_at = now,
//	       IF attribute_not_exists(pk) OR updated_at = :seen)
//	# ConditionalCheckFailed -> re-read and retry (max 3), then allow (fail-open)
type lldLimiter struct {
	store   limiter.BucketStore
	limits  ratelimit.Limits
	retries int
	clock   clock.Clock
}

func (l *lldLimiter) Take(ctx context.Context, client string) (limiter.Decision, error) {
	if err := ratelimit.ValidateClientID(client); err != nil {
		return limiter.Decision{Limits: l.limits}, err
	}
	d, err := l.take(ctx, client)
	d.Limits = l.limits
	return d, err
}

func (l *lldLimiter) take(ctx context.Context, client string) (limiter.Decision, error) {
	pk := ratelimit.Key(client)
	for retries := 0; ; retries++ {
		b, absent, err := l.read(ctx, pk)
		if err != nil {
			return l.failure(ctx, retries, err)
		}
		now := l.clock.Now().UnixMilli()
		if absent {
			b = ratelimit.Bucket{Client: client, Tokens: l.limits.Capacity, UpdatedAtMs: now}
		}
		refilled := ratelimittest.RefillLLD(l.limits, b.Tokens, b.UpdatedAtMs, now)
		if refilled < 1 {
			return limiter.Decision{Outcome: limiter.OutcomeDenied, Remaining: refilled,
				RetryAfter: l.limits.RetryAfter(refilled), CASRetries: retries}, nil
		}
		next := ratelimit.Bucket{Client: client, Tokens: refilled - 1, UpdatedAtMs: now}
		next.TTL = l.limits.TTL(now, next.Tokens)
		err = putAbsentOrEquals(ctx, l.store, next.Item(), absent, ratelimit.AttrUpdatedAt, b.UpdatedAtMs)
		switch {
		case err == nil:
			return limiter.Decision{Allowed: true, Outcome: limiter.OutcomeAdmitted, Remaining: next.Tokens, CASRetries: retries}, nil
		case !errors.Is(err, store.ErrConditionFailed):
			return l.failure(ctx, retries, err)
		case retries == l.retries:
			return limiter.Decision{Allowed: true, FailOpen: true, Outcome: limiter.OutcomeFailOpenContention,
				CASRetries: retries + 1, Cause: limiter.ErrContention}, nil
		}
	}
}

func (l *lldLimiter) read(ctx context.Context, pk string) (b ratelimit.Bucket, absent bool, err error) {
	it, err := l.store.Get(ctx, pk)
	if errors.Is(err, store.ErrNotFound) {
		return b, true, nil
	}
	if err != nil {
		return b, false, err
	}
	b, err = ratelimit.BucketFromItem(it)
	return b, false, err
}

// failure fails open on a store error, as the production limiter does.
func (l *lldLimiter) failure(ctx context.Context, retries int, err error) (limiter.Decision, error) {
	if ctx.Err() != nil {
		return limiter.Decision{CASRetries: retries}, fmt.Errorf("take token: %w", ctx.Err())
	}
	return limiter.Decision{Allowed: true, FailOpen: true, Outcome: limiter.OutcomeFailOpenError, CASRetries: retries, Cause: err}, nil
}

// putAbsentOrEquals is the LLD's "attribute_not_exists(pk) OR attr = :v".
// The store contract offers each half (nothing in production needs the
// disjunction), so it writes the half that matches what was read: a
// compare-and-set on attr for a present item (the item vanishing before the
// write is the other half, and nothing here deletes one); for an absent one,
// create, and when that is refused by an item whose attr is v (another first
// take in the same millisecond: flaw 4), the compare-and-set. It costs the
// round trips the single write would, except on that race.
func putAbsentOrEquals(ctx context.Context, s limiter.BucketStore, it store.Item, readAbsent bool, attr string, v int64) error {
	if !readAbsent {
		return s.Put(ctx, it, store.IfEquals(attr, v))
	}
	err := s.Put(ctx, it, store.IfAbsent())
	if !errors.Is(err, store.ErrConditionFailed) {
		return err
	}
	var ce *store.ConditionError
	if errors.As(err, &ce) && ce.Current != nil {
		if got, ok := ce.Current.Int(attr); !ok || got != v {
			return err
		}
	}
	return s.Put(ctx, it, store.IfEquals(attr, v))
}
