package ratelimit_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/ratelimit/ratelimittest"
)

// t0 is an arbitrary epoch-ms instant the math tests count from.
const t0 = ratelimittest.T0

var epoch = ratelimittest.Epoch

func TestRefillFormula(t *testing.T) {
	l := ratelimit.DefaultLimits()
	cases := []struct {
		name          string
		tokens        float64
		updated, now  int64
		want, wantLLD float64
		limits        *ratelimit.Limits
	}{
		{name: "no time passed", tokens: 7, updated: t0, now: t0, want: 7, wantLLD: 7},
		{name: "1.5 s refills 1.5 tokens", tokens: 3, updated: t0, now: t0 + 1500, want: 4.5, wantLLD: 4.5},
		{name: "one millisecond is a thousandth", tokens: 0.999, updated: t0, now: t0 + 1, want: 1, wantLLD: 1},
		{name: "capped at capacity", tokens: 19, updated: t0, now: t0 + 60_000, want: 20, wantLLD: 20},
		{name: "empty bucket refills to full in 20 s", tokens: 0, updated: t0, now: t0 + 20_000, want: 20, wantLLD: 20},
		{name: "timed drain stays below zero", tokens: -30, updated: t0, now: t0 + 10_000, want: -20, wantLLD: -20},
		{name: "reader 2 s behind the writer: clamped, LLD refills backwards", tokens: 5, updated: t0 + 2000, now: t0, want: 5, wantLLD: 3},
		{name: "stored above capacity reads as capacity", tokens: 50, updated: t0, now: t0, want: 20, wantLLD: 20},
		{name: "custom rate 0.5/s", tokens: 0, updated: t0, now: t0 + 3000, want: 1.5, wantLLD: 1.5,
			limits: &ratelimit.Limits{Capacity: 5, RefillPerSecond: 0.5}},
		{name: "custom rate 100/s capped", tokens: 0, updated: t0, now: t0 + 3000, want: 200, wantLLD: 200,
			limits: &ratelimit.Limits{Capacity: 200, RefillPerSecond: 100}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lim := l
			if tc.limits != nil {
				lim = *tc.limits
			}
			if got := lim.Refill(tc.tokens, tc.updated, tc.now); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("Refill = %v, want %v", got, tc.want)
			}
			if got := ratelimittest.RefillLLD(lim, tc.tokens, tc.updated, tc.now); math.Abs(got-tc.wantLLD) > 1e-9 {
				t.Errorf("RefillLLD = %v, want %v", got, tc.wantLLD)
			}
		})
	}
}

func TestTimeUntil(t *testing.T) {
	l := ratelimit.DefaultLimits()
	cases := []struct {
		name string
		got  time.Duration
		want time.Duration
	}{
		{"retry after at 0 tokens is one second", l.RetryAfter(0), time.Second},
		{"retry after at 0.25 tokens", l.RetryAfter(0.25), 750 * time.Millisecond},
		{"retry after rounds up to the millisecond", l.RetryAfter(0.9995), time.Millisecond},
		{"retry after is zero with a token", l.RetryAfter(1), 0},
		{"retry after a 30 s drain", l.RetryAfter(-30), 31 * time.Second},
		{"float error does not add a millisecond", l.RetryAfter(1 - 0.999), 999 * time.Millisecond},
		{"until full from 0", l.UntilFull(0), 20 * time.Second},
		{"until full from 19.5", l.UntilFull(19.5), 500 * time.Millisecond},
		{"until full when full", l.UntilFull(20), 0},
		{"next token from 3.4", l.NextToken(3.4), 600 * time.Millisecond},
		{"next token from a whole 3", l.NextToken(3), time.Second},
		{"next token from 19.9 is the last", l.NextToken(19.9), 100 * time.Millisecond},
		{"next token when full", l.NextToken(20), 0},
		{"rate 4/s: one token in 250 ms", ratelimit.Limits{Capacity: 10, RefillPerSecond: 4}.RetryAfter(0), 250 * time.Millisecond},
	}
	for _, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

func TestTTL(t *testing.T) {
	l := ratelimit.DefaultLimits()
	// One hour after the write, in whole seconds rounded up.
	if got, want := l.TTL(t0+1, 19), (t0/1000)+1+3600; got != want {
		t.Errorf("TTL = %d, want %d", got, want)
	}
	if got, want := l.TTL(t0, 19), t0/1000+3600; got != want {
		t.Errorf("TTL on a whole second = %d, want %d", got, want)
	}
	// A bucket that needs longer than an hour to refill is kept until full,
	// so collecting it changes nothing a reader sees.
	if got, want := l.TTL(t0, -4000), t0/1000+4020; got != want {
		t.Errorf("TTL of a deep drain = %d, want %d", got, want)
	}
}

func TestLimitsDefaultsAndValidate(t *testing.T) {
	if got := (ratelimit.Limits{}).WithDefaults(); got != ratelimit.DefaultLimits() {
		t.Errorf("zero limits = %+v, want the LLD's %+v", got, ratelimit.DefaultLimits())
	}
	if got := (ratelimit.Limits{Capacity: 50}).WithDefaults(); got.Capacity != 50 || got.RefillPerSecond != 1 {
		t.Errorf("partial limits = %+v", got)
	}
	for _, bad := range []ratelimit.Limits{
		{Capacity: 0.5}, {Capacity: -1}, {RefillPerSecond: -2}, {Capacity: math.NaN()}, {RefillPerSecond: math.Inf(1)}, {Capacity: 2e9},
	} {
		if err := bad.Validate(); !errors.Is(err, ratelimit.ErrInvalidLimits) {
			t.Errorf("Validate(%+v) = %v, want ErrInvalidLimits", bad, err)
		}
	}
	if err := (ratelimit.Limits{}).Validate(); err != nil {
		t.Errorf("defaults invalid: %v", err)
	}
	if got := ratelimit.DefaultLimits().String(); got != "capacity 20, 1 token/s" {
		t.Errorf("String = %q", got)
	}
}

func TestNewLimitsDefaultsAndRefuses(t *testing.T) {
	l, err := ratelimit.NewLimits(0, 0)
	if err != nil || l != ratelimit.DefaultLimits() {
		t.Errorf("NewLimits(0, 0) = %+v, %v; want the LLD's defaults", l, err)
	}
	if l, err := ratelimit.NewLimits(5, 0.5); err != nil || l.Capacity != 5 || l.RefillPerSecond != 0.5 {
		t.Errorf("NewLimits(5, 0.5) = %+v, %v", l, err)
	}
	for _, c := range [][2]float64{{0.5, 1}, {-1, 1}, {1, -1}, {math.NaN(), 1}, {1, math.Inf(1)}, {2e9, 1}} {
		if l, err := ratelimit.NewLimits(c[0], c[1]); !errors.Is(err, ratelimit.ErrInvalidLimits) || l != (ratelimit.Limits{}) {
			t.Errorf("NewLimits(%g, %g) = %+v, %v; want ErrInvalidLimits and no limits", c[0], c[1], l, err)
		}
	}
}
