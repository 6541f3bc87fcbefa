package drill

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// pollResult is how a polled condition ended.
type pollResult struct {
	obs   Observation
	err   error // the last evaluation error, if the last poll had one
	polls int
	// elapsed is measured on the run's clock.
	elapsed time.Duration
}

// ErrNotMet reports a condition that did not hold in time.
var ErrNotMet = errors.New("condition not met")

// poll evaluates cond until it holds or within has passed (within zero:
// once). Each evaluation is bounded by attempt. onChange is called when
// the observed detail changes. The returned error is nil when the
// condition held, wraps ErrNotMet when it did not in time, and is ctx's
// error when ctx ended first.
func poll(ctx context.Context, rc *RunContext, cond Condition, within, interval, attempt time.Duration, onChange func(string)) (pollResult, error) {
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	if attempt <= 0 {
		attempt = DefaultCheckTimeout
	}
	// Everything is measured on the run's clock: how long within has run,
	// and the wait between polls.
	start := rc.Now()
	var res pollResult
	last := ""
	for {
		res.polls++
		actx, cancel := context.WithTimeout(withAlarmRound(ctx), attempt)
		obs, err := cond.Check(actx, rc)
		cancel()
		res.elapsed = rc.Now().Sub(start)
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		res.obs, res.err = obs, err
		if err == nil && obs.Holds {
			return res, nil
		}
		detail := obs.Detail
		if err != nil {
			detail = "could not check: " + rc.Redact(err.Error())
		}
		if detail != last && onChange != nil {
			onChange(detail)
		}
		last = detail
		if within <= 0 {
			return res, fmt.Errorf("%w: %s", ErrNotMet, detail)
		}
		notMet := fmt.Errorf("%w within %s (%d checks); last: %s", ErrNotMet, within, res.polls, detail)
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
