package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
)

// The guards of a run: the preflight of every stop condition and
// hypothesis check, the first stop condition that holds (or whose guard is
// lost), and the monitor that watches them while the steps run.

// ErrDrillTimeout is the cause of a run context ended by the drill's timeout.
var ErrDrillTimeout = errors.New("drill timeout reached")

// StopError is the cause of a run context ended by a stop condition.
type StopError struct {
	// Condition is the stop condition's name; Detail what it observed.
	Condition string
	Detail    string
	// Alarms are the alarms that fired (alarm conditions).
	Alarms []drill.Alarm
}

// Error names the condition and what it observed.
func (e *StopError) Error() string {
	return fmt.Sprintf("stop condition %q held: %s", e.Condition, e.Detail)
}

// evaluate evaluates c once, bounded by its timeout.
func evaluate(ctx context.Context, rc *runtime.RunContext, c *drill.Check) (runtime.Observation, error) {
	cctx, cancel := context.WithTimeout(ctx, cmp.Or(c.Timeout, drill.DefaultCheckTimeout))
	defer cancel()
	return runtime.ConditionOf(c).Check(cctx, rc)
}

// preflight evaluates every stop condition and hypothesis check once,
// before anything is done (one poll round: the alarm conditions share one
// DescribeAlarms call). A guard that cannot be evaluated refuses the run:
// nothing is written but the journal and the reports saying so. It
// reports whether the run may go on.
func (u *run) preflight(ctx context.Context) bool {
	r, d, rc, j := u.jr, u.d, u.rc, u.j
	if len(d.StopConditions)+len(d.Hypothesis) == 0 {
		return true
	}
	r.emit(Event{Kind: EventPhase, Phase: drill.PhasePreflight})
	round := runtime.WithAlarmRound(ctx)
	var refusal *drill.GuardRecord
	var refusalErr error
	failures := 0
	eval := func(role string, c *drill.Check) {
		start := rc.Now()
		obs, err := evaluate(round, rc, c)
		if ctx.Err() != nil {
			return
		}
		end := rc.Now()
		rec := drill.CheckRecord{Phase: drill.PhasePreflight, Role: role, Name: c.Name, Kind: c.Kind.Name(), Description: runtime.ConditionOf(c).Describe(rc),
			OK: err == nil, Checks: 1, StartedAt: start.UTC(), EndedAt: drill.TimePtr(end), DurationSeconds: drill.Seconds(end.Sub(start))}
		if err == nil {
			// Whether it holds now is said apart from its name: a stop
			// condition named for what it guards against ("core-api's
			// breaker opened") must not read as having happened.
			now := "it does not hold now"
			if obs.Holds {
				now = "it holds now"
			}
			rec.Detail = "can be evaluated (" + now + "): " + obs.Detail
		} else {
			failures++
			cause, fix := err.Error(), runtime.GuardFix(err)
			rec.Error = fmt.Sprintf("%s could not be evaluated: %s (fix: %s)", role, cause, fix)
			if refusal == nil {
				refusal = &drill.GuardRecord{Phase: drill.GuardPreflight, Role: role, Condition: c.Name, Cause: cause, Fix: fix, At: end.UTC()}
				refusalErr = err
			}
		}
		r.recordCheck(rec)
	}
	for _, c := range d.StopConditions {
		eval(drill.RoleStopCondition, c)
	}
	for _, c := range d.Hypothesis {
		eval(drill.RoleHypothesis, c)
	}
	switch {
	case ctx.Err() != nil:
		u.verdict(ctx, false)
		r.update(func() { j.Hypothesis.AfterSkipped = "interrupted at preflight: nothing was done" })
		return false
	case refusal == nil:
		return true
	}
	reason := fmt.Sprintf("refused before any lever was pulled: %s %q could not be evaluated: %s: %s",
		refusal.Role, refusal.Condition, refusal.Cause, refusal.Fix)
	if failures > 1 {
		reason += fmt.Sprintf(" (and %d more guards; see the journal's preflight)", failures-1)
	}
	return u.refuse(reason, refusal, runtime.GuardFailure(refusalErr))
}

// refuse records a run refused before any lever was pulled: why, the guard
// that refused it (nil: the table's policy) and the error that did, whose
// kind is the run's. It reports false: the run may not go on.
func (u *run) refuse(reason string, guard *drill.GuardRecord, cause error) bool {
	j := u.j
	u.jr.update(func() {
		j.Outcome, j.Reason, j.Guard = drill.OutcomeRefused, reason+"; nothing was done", guard
		u.jr.refusal = cause
		for i := range j.Steps {
			j.Steps[i].Status = drill.StatusSkipped
		}
		j.Hypothesis.AfterSkipped = "refused at preflight: nothing was done"
	})
	return false
}

// lostGuard records gl as the run's lost guard; the caller holds r.mu.
func (u *run) lostGuard(gl *runtime.GuardLostError) {
	rc, j := u.rc, u.j
	j.Reason = gl.Error() + ": " + runtime.GuardFix(gl.Err)
	j.Guard = &drill.GuardRecord{Phase: drill.GuardDuringRun, Role: gl.Role, Condition: gl.Name, Cause: gl.Err.Error(),
		Fix: runtime.GuardFix(gl.Err), Polls: gl.Polls, Since: drill.TimePtr(gl.Since), GracePolls: gl.Grace.Polls,
		GraceSeconds: drill.Seconds(gl.Grace.For), At: rc.Now().UTC()}
	u.jr.refusal = runtime.GuardFailure(gl.Err)
}

// firstStop evaluates the stop conditions once and returns the first that
// holds (a *StopError), or the first whose guard is lost: one that stayed
// unevaluable past the drill's guard_grace (a *runtime.GuardLostError). An
// evaluation error within the grace, or of a condition that says
// on_error: continue, is a notice.
func (u *run) firstStop(ctx context.Context) error {
	r, d, rc := u.jr, u.d, u.rc
	if err := u.freezeStop(ctx); err != nil {
		return err
	}
	// One poll round: the alarm conditions share one DescribeAlarms call.
	round := runtime.WithAlarmRound(ctx)
	for _, c := range d.StopConditions {
		obs, err := evaluate(round, rc, c)
		if ctx.Err() != nil {
			return nil
		}
		ev := drill.StopEvaluation{At: rc.Now().UTC(), Condition: c.Name, Holds: err == nil && obs.Holds, Detail: obs.Detail}
		if err != nil {
			ev.Error = err.Error()
		}
		r.recordStop(ev)
		lost, recovered := u.pollGuard(c, drill.RoleStopCondition, c.Name, err, c.OnError != drill.OnErrorContinue)
		switch {
		case lost != nil:
			return lost
		case err != nil:
			then := fmt.Sprintf("the run stops and rolls back if it stays so for %s", d.GuardGrace)
			if c.OnError == drill.OnErrorContinue {
				then = "on_error: continue: the run goes on without this guard"
			}
			r.noticeStop(c.Name, fmt.Sprintf("stop condition %q could not be evaluated: %s; %s", c.Name, err, then))
			continue
		case recovered:
			r.noticeStop(c.Name, fmt.Sprintf("stop condition %q can be evaluated again", c.Name))
		}
		if obs.Holds {
			return &StopError{Condition: c.Name, Detail: obs.Detail, Alarms: obs.Alarms}
		}
	}
	return nil
}

// pollGuard records one evaluation of the guard of c (nil: the fleet's
// freeze), err saying it could not be evaluated: lost once it has been
// unevaluable past the drill's guard_grace and a loss stops the run
// (stops), recovered when it can be evaluated again after failing.
func (u *run) pollGuard(c *drill.Check, role, name string, err error, stops bool) (lost *runtime.GuardLostError, recovered bool) {
	now := u.rc.Now()
	u.guardMu.Lock()
	defer u.guardMu.Unlock()
	g := u.guards[c]
	if g == nil {
		g = &runtime.GuardState{Grace: u.d.GuardGrace}
		u.guards[c] = g
	}
	if lost, recovered = g.Poll(now, err, role, name); !stops {
		lost = nil
	}
	return lost, recovered
}

// noticeStop notes msg about a stop condition, once while it repeats.
func (r *runJournal) noticeStop(name, msg string) {
	r.mu.Lock()
	repeated := r.stopNoticed[name] == msg
	r.stopNoticed[name] = msg
	r.mu.Unlock()
	if !repeated {
		r.notice(msg)
	}
}

// monitor evaluates the stop conditions every poll interval while the
// steps run, and cancels the run when one holds or its guard is lost. It
// returns a function that stops it and waits for it.
func (u *run) monitor(ctx context.Context) func() {
	d, rc := u.d, u.rc
	if len(d.StopConditions) == 0 && u.cfg.Freeze == nil {
		return func() {}
	}
	mctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-mctx.Done():
				return
			case <-rc.After(d.PollInterval):
			}
			if err := u.firstStop(mctx); err != nil {
				u.cancel(err)
				return
			}
		}
	}()
	return func() { stop(); <-done }
}
