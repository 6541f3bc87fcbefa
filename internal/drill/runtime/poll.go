package runtime

import (
	"context"
	"errors"
	"fmt"
	"github.com/kosha-platform/koshactl/internal/drill"
	"time"
)

// PollResult is how a polled condition ended.
type PollResult struct {
	Obs   Observation
	Err   error // the last evaluation error, if the last poll had one
	Polls int
	// Elapsed is measured on the run's clock.
	Elapsed time.Duration
}

// ErrNotMet reports a condition that did not hold in time.
var ErrNotMet = errors.New("condition not met")

// PollSpec says how [Poll] polls: until the condition holds or Within has
// passed (zero: once), every Interval, each evaluation bounded by Attempt;
// OnChange is called when the observed detail changes.
type PollSpec struct {
	Within, Interval, Attempt time.Duration
	OnChange                  func(string)
	// Guard, when set, makes the condition a guard: once its evaluations
	// have failed past Guard.Grace, the poll ends with a *GuardLostError
	// (Role and Name from Guard) instead of polling on blind.
	Guard *PollGuard
}

// PollGuard names a polled guard and its grace.
type PollGuard struct {
	Role, Name string
	Grace      drill.GuardGrace
}

// Poll evaluates cond as spec says. The returned error is nil when the
// condition held, wraps ErrNotMet when it did not in time, is a
// *GuardLostError when its guard was lost, and is ctx's error when ctx
// ended first.
func Poll(ctx context.Context, rc *RunContext, cond Condition, spec PollSpec) (PollResult, error) {
	within, interval, attempt, onChange := spec.Within, spec.Interval, spec.Attempt, spec.OnChange
	var guard *GuardState
	if spec.Guard != nil {
		guard = &GuardState{Grace: spec.Guard.Grace}
	}
	if interval <= 0 {
		interval = drill.DefaultPollInterval
	}
	if attempt <= 0 {
		attempt = drill.DefaultCheckTimeout
	}
	// Everything is measured on the run's clock: how long within has run,
	// and the wait between polls.
	start := rc.Now()
	var res PollResult
	last := ""
	for {
		res.Polls++
		actx, cancel := context.WithTimeout(WithAlarmRound(ctx), attempt)
		obs, err := cond.Check(actx, rc)
		cancel()
		res.Elapsed = rc.Now().Sub(start)
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		res.Obs, res.Err = obs, err
		if err == nil && obs.Holds {
			return res, nil
		}
		detail := obs.Detail
		if err != nil {
			detail = "could not check: " + rc.Redact(err.Error())
			if guard != nil && guard.Fail(rc.Now(), err) {
				lost := guard.Lost(spec.Guard.Role, spec.Guard.Name, rc.Now())
				if onChange != nil && detail != last {
					onChange(detail)
				}
				return res, lost
			}
		} else if guard != nil {
			guard.OK()
		}
		if detail != last && onChange != nil {
			onChange(detail)
		}
		last = detail
		if within <= 0 {
			return res, fmt.Errorf("%w: %s", ErrNotMet, detail)
		}
		notMet := fmt.Errorf("%w within %s (%d checks); last: %s", ErrNotMet, within, res.Polls, detail)
		left := within - rc.Now().Sub(start)
		if left <= 0 {
			return res, notMet
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-rc.After(min(interval, left)):
		}
		if rc.Now().Sub(start) >= within {
			return res, notMet
		}
	}
}
