package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
	"github.com/kosha-platform/koshactl/internal/human"
)

// The hypothesis phases: the steady state checked before the steps and
// again after the rollbacks.

// hypothesisBefore checks the steady state before the steps; it reports
// whether it failed. A check whose guard is lost ends the run.
func (u *run) hypothesisBefore(runCtx context.Context) bool {
	r, j := u.jr, u.j
	failed := false
	r.emit(Event{Kind: EventPhase, Phase: drill.PhaseBefore})
	for _, c := range u.d.Hypothesis {
		rec, lost := u.check(runCtx, c, drill.PhaseBefore)
		if lost != nil {
			u.cancel(lost)
		}
		if !rec.OK && !failed {
			failed = true
			if runCtx.Err() == nil {
				r.update(func() {
					j.Reason = fmt.Sprintf("the hypothesis did not hold before the drill: %s: %s", rec.Name, cmp.Or(rec.Error, rec.Detail))
				})
			}
		}
		if runCtx.Err() != nil {
			break
		}
	}
	return failed
}

// hypothesisAfter checks the steady state again after the rollbacks,
// unless the operator interrupted (they asked to stop; rollback is what
// must happen) or abandoned the rollback. An interrupt during these checks
// ends them.
func (u *run) hypothesisAfter(ctx context.Context, beforeFailed bool) {
	r, d, j := u.jr, u.d, u.j
	skip := ""
	switch {
	case j.Outcome == drill.OutcomeInterrupted || ctx.Err() != nil:
		skip = "interrupted: the rollbacks ran; the steady state was not re-checked"
	case u.rbParent.Err() != nil:
		skip = "rollback abandoned"
	case beforeFailed:
		skip = "the hypothesis did not hold before the drill"
	}
	if skip != "" {
		r.update(func() { j.Hypothesis.AfterSkipped = skip })
		return
	}
	if len(d.Hypothesis) == 0 {
		return
	}
	actx, cancelAfter := context.WithCancel(u.rbParent)
	defer cancelAfter()
	stopAfter := context.AfterFunc(ctx, cancelAfter)
	defer stopAfter()
	r.emit(Event{Kind: EventPhase, Phase: drill.PhaseAfter})
	for _, c := range d.Hypothesis {
		if actx.Err() != nil {
			break
		}
		rec, lost := u.check(actx, c, drill.PhaseAfter)
		r.update(func() {
			switch {
			case ctx.Err() != nil:
				if j.Outcome == drill.OutcomePassed || j.Outcome == drill.OutcomeFailed {
					j.Outcome, j.Reason = drill.OutcomeInterrupted, "interrupted while re-checking the hypothesis"
				}
			case lost != nil && j.Outcome == drill.OutcomePassed:
				j.Outcome = drill.OutcomeGuardLost
				u.lostGuard(lost)
			case !rec.OK && j.Outcome == drill.OutcomePassed:
				j.Outcome = drill.OutcomeFailed
				j.Reason = fmt.Sprintf("the hypothesis did not hold after the rollback: %s: %s", rec.Name, cmp.Or(rec.Error, rec.Detail))
			}
		})
	}
}

// check evaluates one hypothesis check and records it. A check that polls
// (within) is a guard: when it stays unevaluable past the drill's grace it
// ends with the lost guard, unless it says on_error: continue.
func (u *run) check(ctx context.Context, c *drill.Check, phase string) (drill.CheckRecord, *runtime.GuardLostError) {
	r, d, rc := u.jr, u.d, u.rc
	start := rc.Now()
	spec := runtime.PollSpec{Within: c.Within, Interval: cmp.Or(c.Interval, d.PollInterval), Attempt: c.Timeout}
	if c.Within > 0 && c.OnError != drill.OnErrorContinue {
		spec.Guard = &runtime.PollGuard{Role: drill.RoleHypothesis, Name: c.Name, Grace: d.GuardGrace}
	}
	res, err := runtime.Poll(ctx, rc, runtime.ConditionOf(c), spec)
	end := rc.Now()
	rec := drill.CheckRecord{Phase: phase, Name: c.Name, Kind: c.Kind.Name(), Description: runtime.ConditionOf(c).Describe(rc),
		OK: err == nil, Detail: res.Obs.Detail, Checks: res.Polls, StartedAt: start.UTC(), EndedAt: drill.TimePtr(end),
		DurationSeconds: drill.Seconds(end.Sub(start))}
	var lost *runtime.GuardLostError
	switch {
	case err == nil:
	case errors.As(err, &lost):
		rec.Error = lost.Error()
	case ctx.Err() != nil:
		_, rec.Error = runStatus(context.Cause(ctx))
	case res.Err != nil:
		rec.Error = "could not check: " + res.Err.Error()
	case c.Within > 0:
		rec.Error = fmt.Sprintf("did not hold within %s (%s)", c.Within, human.Count(int64(res.Polls), "check"))
	}
	r.recordCheck(rec)
	return rec, lost
}
