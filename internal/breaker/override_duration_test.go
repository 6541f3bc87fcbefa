package breaker_test

import (
	"errors"
	"github.com/kosha-platform/koshactl/internal/config"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
)

func TestDurationPolicyCheckFor(t *testing.T) {
	p := breaker.DurationPolicy{Max: 2 * time.Hour}
	for _, tc := range []struct {
		d    time.Duration
		want error
	}{
		{0, breaker.ErrDurationNotPositive},
		{-time.Second, breaker.ErrDurationNotPositive},
		{breaker.MinOverride - time.Millisecond, breaker.ErrDurationTooShort},
		{breaker.MinOverride, nil},
		{2 * time.Hour, nil},
		{2*time.Hour + time.Millisecond, breaker.ErrDurationTooLong},
	} {
		err := p.CheckFor(tc.d)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("CheckFor(%s) = %v, want %v", tc.d, err, tc.want)
		}
	}
	// The zero policy is the default maximum.
	if got := (breaker.DurationPolicy{}).MaxFor(); got != 24*time.Hour {
		t.Errorf("default max = %s", got)
	}
	if err := (breaker.DurationPolicy{}).CheckFor(25 * time.Hour); !errors.Is(err, breaker.ErrDurationTooLong) ||
		err.Error() != "25h is over this context's max-override of 24h" {
		t.Errorf("25h on the default policy: %v", err)
	}
	err := p.CheckFor(2 * time.Second)
	var de *breaker.DurationError
	if !errors.As(err, &de) || de.Limit != breaker.MinOverride ||
		err.Error() != "2s is under the 5s minimum: a shorter override lapses before the fleet reads it (the data plane's override cache period)" {
		t.Errorf("2s: %v", err)
	}
}

func TestDurationPolicyExpiresAt(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	p := breaker.DurationPolicy{Max: time.Hour}
	for _, tc := range []struct {
		name    string
		l       breaker.Lifetime
		expires time.Time
		forDur  time.Duration
		want    error
	}{
		{"for", breaker.LastFor(30 * time.Minute), now.Add(30 * time.Minute), 30 * time.Minute, nil},
		{"for the default", breaker.LastFor(breaker.DefaultFor), now.Add(time.Hour), time.Hour, nil},
		{"for zero", breaker.LastFor(0), time.Time{}, 0, breaker.ErrDurationNotPositive},
		{"for too short", breaker.LastFor(time.Second), time.Time{}, 0, breaker.ErrDurationTooShort},
		{"for too long", breaker.LastFor(61 * time.Minute), time.Time{}, 0, breaker.ErrDurationTooLong},
		{"until", breaker.LastUntil(now.Add(10 * time.Minute)), now.Add(10 * time.Minute), 0, nil},
		{"until now", breaker.LastUntil(now), time.Time{}, 0, breaker.ErrExpiryPast},
		{"until the year 1", breaker.LastUntil(time.Time{}), time.Time{}, 0, breaker.ErrExpiryPast},
		{"until too soon", breaker.LastUntil(now.Add(time.Second)), time.Time{}, 0, breaker.ErrDurationTooShort},
		{"until too late", breaker.LastUntil(now.Add(2 * time.Hour)), time.Time{}, 0, breaker.ErrDurationTooLong},
		{"no expiry is not capped", breaker.NoExpiry(), time.Time{}, 0, nil},
	} {
		exp, forDur, err := p.ExpiresAt(now, tc.l)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.want)
		}
		if !exp.Equal(tc.expires) || forDur != tc.forDur {
			t.Errorf("%s: expires %s for %s, want %s for %s", tc.name, exp, forDur, tc.expires, tc.forDur)
		}
	}
}

func TestDurationPolicyBounded(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	p := breaker.DurationPolicy{Max: 10 * time.Minute}
	for _, tc := range []struct {
		name       string
		deadline   time.Time
		forDur     time.Duration
		d          time.Duration
		byDeadline bool
		want       error
	}{
		{"the deadline", now.Add(3*time.Minute + 1500*time.Microsecond), 0, 3*time.Minute + time.Millisecond, true, nil},
		{"for, shorter", now.Add(3 * time.Minute), time.Minute, time.Minute, false, nil},
		{"for, longer than the deadline", now.Add(3 * time.Minute), time.Hour, 3 * time.Minute, true, nil},
		{"the max-override", now.Add(time.Hour), 0, 10 * time.Minute, false, nil},
		{"too little left", now.Add(4 * time.Second), 0, 4 * time.Second, true, breaker.ErrDurationTooShort},
		{"past the deadline", now.Add(-time.Minute), 0, 0, true, breaker.ErrDurationTooShort},
	} {
		d, by, err := p.Bounded(now, tc.deadline, tc.forDur)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.want)
		}
		if d != tc.d || by != tc.byDeadline {
			t.Errorf("%s: %s by deadline %v, want %s %v", tc.name, d, by, tc.d, tc.byDeadline)
		}
	}
}

// A context's max-override is the config's setting (its range checked at
// load and save): the policy's default is the context's, and no context
// can allow less than the shortest override the fleet can see.
func TestTheDefaultMaxOverrideIsTheContexts(t *testing.T) {
	if breaker.DefaultMaxOverride != config.DefaultMaxOverride {
		t.Errorf("the policy's default max-override %s, the context's %s", breaker.DefaultMaxOverride, config.DefaultMaxOverride)
	}
	if config.MinMaxOverride < breaker.MinOverride || config.CheckMaxOverride(breaker.MinOverride) == nil {
		t.Errorf("a context may allow %s at most, under the minimum override %s", config.MinMaxOverride, breaker.MinOverride)
	}
}
