package ratelimit_test

import (
	"errors"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/ratelimit"
)

// The drain-hold bound is one rule: CheckDrainHold, which Change.Validate
// applies; a rollback's restoring drain is clamped into the same range.
func TestDrainHoldBound(t *testing.T) {
	for d, ok := range map[time.Duration]bool{-time.Millisecond: false, 0: true, 30 * time.Second: true,
		ratelimit.MaxDrainHold: true, ratelimit.MaxDrainHold + time.Millisecond: false} {
		err := ratelimit.CheckDrainHold(d)
		if ok != (err == nil) || !ok && (!errors.Is(err, ratelimit.ErrDrainHold) || !errors.Is(err, ratelimit.ErrInvalidTokens)) {
			t.Errorf("CheckDrainHold(%s) = %v", d, err)
		}
		verr := ratelimit.Change{Op: ratelimit.OpDrain, Client: "c1", HoldFor: d}.Validate(ratelimit.Limits{})
		if ok != (verr == nil) || !ok && verr.Error() != err.Error() {
			t.Errorf("Validate of a drain for %s = %v, want CheckDrainHold's %v", d, verr, err)
		}
		if c := ratelimit.ClampDrainHold(d); ratelimit.CheckDrainHold(c) != nil || ok && c != d {
			t.Errorf("ClampDrainHold(%s) = %s", d, c)
		}
	}
	if err := ratelimit.CheckDrainHold(2 * time.Hour); err.Error() != "invalid token count: drain for 2h: give a duration from 0 to 1h" {
		t.Errorf("message: %v", err)
	}
}
