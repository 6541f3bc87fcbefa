package metrics

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock"
)

// ErrNotConfirmed is wrapped by the error of a [Waiter.Wait] that ran out
// of time before the gauges confirmed every change.
var ErrNotConfirmed = errors.New("the fleet did not confirm the change")

// Waiter polls a gauge source until it confirms override changes ([Judge])
// or its timeout passes. It reads only what it needs: the fleet statistics
// of the dependencies not yet confirmed, and their per-instance breakdown
// only when Instances is set (CloudWatch bills one metric per instance
// series; a scrape has it anyway).
type Waiter struct {
	Gauges GaugeSource
	// Clock measures the timeout and the polls; a [clock.Waiter] (the fake
	// in tests) is waited on, so tests never sleep.
	Clock clock.Clock
	// Timeout bounds the wait from its start; zero means
	// [DefaultWaitTimeout] of the source's lag ([LagOf]).
	Timeout time.Duration
	// Poll is the time between fetches; zero means [ScrapeWaitPoll] for a
	// live source, [CloudWatchWaitPoll] otherwise.
	Poll time.Duration
	// Instances asks for the per-instance breakdown, so CloudWatch can name
	// stragglers.
	Instances bool
	// Progress, when set, is called after every fetch.
	Progress func(WaitProgress)
}

// WaitProgress is the state after one fetch.
type WaitProgress struct {
	// Convergences holds every change's latest verdict, in the order asked.
	Convergences []Convergence
	// Elapsed since the wait began; Timeout is when it gives up.
	Elapsed, Timeout time.Duration
	// Bound is the source's lag bound.
	Bound time.Duration
	// Err is the fetch's error, if it failed (the wait goes on).
	Err error
}

// WaitResult is how a wait ended.
type WaitResult struct {
	// Convergences holds every change's final verdict, in the order asked;
	// a confirmed one keeps the snapshot that confirmed it (its Elapsed is
	// the time from the write to confirmation).
	Convergences []Convergence
	// Confirmed reports that every change was confirmed.
	Confirmed bool
	// Elapsed is how long the wait took; Timeout the limit it ran under.
	Elapsed, Timeout time.Duration
	// FetchErr is the last fetch's error, when the last fetch failed.
	FetchErr error
	// Polls counts the fetches.
	Polls int
}

// Wait polls until every change is confirmed, the timeout passes or ctx
// ends. Each fetch's context ends at the wait's deadline (measured on
// Clock), so the wait never outlasts its timeout; a poll due at the
// deadline is not made. Running out of time returns the result and an error wrapping
// [ErrNotConfirmed] (and the last fetch's error, if it failed); ctx's end
// returns ctx's error. Changes of dependencies that are not valid names are
// judged as the source reports them (never).
func (w *Waiter) Wait(ctx context.Context, changes []Change) (WaitResult, error) {
	clk := w.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	lag := LagOf(w.Gauges)
	timeout := w.Timeout
	if timeout <= 0 {
		timeout = DefaultWaitTimeout(lag)
	}
	start := clk.Now()
	res := WaitResult{Timeout: timeout, Convergences: make([]Convergence, len(changes))}
	for i, c := range changes {
		res.Convergences[i] = Convergence{Change: c, Bound: lag}
	}
	done := make([]bool, len(changes))
	confirmed, err := pollUntil(ctx, clk, timeout, func(fctx context.Context) (bool, time.Duration) {
		var ask []string
		for i, c := range changes {
			if !done[i] {
				ask = append(ask, c.Dependency)
			}
		}
		req := FetchRequest{Dependencies: ask, Window: WaitWindow}
		if w.Instances {
			req.Instances = ask
		}
		snap, err := w.Gauges.Fetch(fctx, req)
		res.Polls++
		if ctx.Err() != nil {
			return false, 0
		}
		res.FetchErr = err
		live := true
		if err == nil {
			live = snap.Live
			for i, c := range changes {
				if done[i] {
					continue
				}
				res.Convergences[i] = Judge(c, &snap)
				done[i] = res.Convergences[i].Verdict == Confirmed
			}
		}
		res.Elapsed = clk.Now().Sub(start)
		if w.Progress != nil {
			w.Progress(WaitProgress{Convergences: append([]Convergence(nil), res.Convergences...), Elapsed: res.Elapsed,
				Timeout: timeout, Bound: lag, Err: err})
		}
		poll := w.Poll
		if poll <= 0 {
			poll = CloudWatchWaitPoll
			if live {
				poll = ScrapeWaitPoll
			}
		}
		return !slices.Contains(done, false), poll
	})
	switch {
	case err != nil:
		return res, err
	case confirmed:
		res.Confirmed = true
		return res, nil
	}
	res.Elapsed = clk.Now().Sub(start)
	if res.FetchErr != nil {
		return res, errors.Join(ErrNotConfirmed, res.FetchErr)
	}
	return res, ErrNotConfirmed
}

// pollUntil calls read until it reports done, timeout (from now on clk)
// passes or ctx ends, waiting between reads the time read asks for. Each
// read's context ends at the deadline, so a source that hangs cannot carry
// the wait past its timeout; a read due at the deadline is not made. It
// returns whether read reported done, and ctx's error when ctx ended.
func pollUntil(ctx context.Context, clk clock.Clock, timeout time.Duration, read func(ctx context.Context) (done bool, poll time.Duration)) (bool, error) {
	deadline := clk.Now().Add(timeout)
	for {
		left := deadline.Sub(clk.Now())
		if left <= 0 {
			return false, nil
		}
		fctx, cancel := context.WithTimeout(ctx, left)
		done, poll := read(fctx)
		cancel()
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if done {
			return true, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-clock.After(clk, min(poll, max(deadline.Sub(clk.Now()), 0))):
		}
	}
}
