package runtime

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/drill"

	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

type neverHolds struct{ checks int }

func (c *neverHolds) Describe(*RunContext) string { return "never" }

func (c *neverHolds) Check(context.Context, *RunContext) (Observation, error) {
	c.checks++
	return Observation{Detail: "not yet"}, nil
}

// poll measures within and its interval on the run's clock only: an hour
// of fake time passes without an hour of wall time, and the number of
// checks follows from the fake clock alone.
func TestPollRunsOnTheInjectedClockOnly(t *testing.T) {
	fake := clocktest.NewFake(time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC))
	rc := NewRunContext(&drill.Drill{Name: "d", Timeout: 2 * time.Hour}, "r1", &Deps{Clock: fake}, nil)
	cond := &neverHolds{}
	done := make(chan error, 1)
	var res PollResult
	go func() {
		var err error
		res, err = Poll(context.Background(), rc, cond, PollSpec{Within: time.Hour, Interval: time.Minute, Attempt: time.Second})
		done <- err
	}()
	for {
		var err error
		ended := false
		wait.Until(t, "Poll to wait on the fake clock (not another one) or end", func() bool {
			select {
			case err = <-done:
				ended = true
				return true
			default:
				return fake.Waiters() > 0
			}
		})
		if ended {
			if !errors.Is(err, ErrNotMet) {
				t.Fatalf("poll: %v, want ErrNotMet", err)
			}
			if res.Polls != 60 || cond.checks != 60 {
				t.Errorf("polls %d, checks %d, want 60 (one a minute for an hour of the fake clock)", res.Polls, cond.checks)
			}
			if res.Elapsed != 59*time.Minute {
				t.Errorf("elapsed %s, want 59m on the fake clock", res.Elapsed)
			}
			return
		}
		fake.Advance(time.Minute)
	}
}
