package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
)

// The steps phase: each step with its rollbacks registered before it
// acts, and the verdict on why the steps ended.

// steps runs the steps while the stop conditions are watched; it reports
// whether one failed.
func (u *run) steps(runCtx context.Context) bool {
	r, d, j := u.jr, u.d, u.j
	failed := false
	r.emit(Event{Kind: EventPhase, Phase: drill.PhaseSteps})
	stopMonitor := u.monitor(runCtx)
	defer stopMonitor()
	for i, s := range d.Steps {
		if runCtx.Err() != nil || failed {
			break
		}
		if stop := u.firstStop(runCtx); stop != nil {
			u.cancel(stop)
			break
		}
		r.update(func() { r.stepIdx = i + 1 })
		ok := u.step(runCtx, s, i)
		r.update(func() {
			r.stepIdx = 0
			if !ok && j.Reason == "" && runCtx.Err() == nil {
				// With continue_on_failure the drill still fails, but
				// later steps run.
				j.Reason = fmt.Sprintf("step %s failed: %s", s.ID, j.Steps[i].Error)
			}
		})
		if !ok && !s.ContinueOnFailure {
			failed = true
		}
	}
	return failed
}

// verdict records why the steps ended.
func (u *run) verdict(runCtx context.Context, failed bool) {
	r, d, rc, j := u.jr, u.d, u.rc, u.j
	cause := context.Cause(runCtx)
	r.update(func() {
		for i := range j.Steps {
			if j.Steps[i].Status == drill.StatusPending {
				j.Steps[i].Status = drill.StatusSkipped
			}
			if j.Steps[i].Status == drill.StatusFailed {
				failed = true
			}
		}
		var se *StopError
		var gl *runtime.GuardLostError
		switch {
		case runCtx.Err() == nil && failed:
			j.Outcome = drill.OutcomeFailed
		case runCtx.Err() == nil:
			j.Outcome = drill.OutcomePassed
		case errors.Is(cause, ErrDrillTimeout):
			j.Outcome, j.Reason = drill.OutcomeTimedOut, fmt.Sprintf("the drill's timeout (%s) ended it", d.Timeout)
		case errors.As(cause, &se):
			j.Outcome, j.Reason = drill.OutcomeStopped, se.Error()
			j.Stop = &drill.StopRecord{Condition: se.Condition, Detail: se.Detail, At: rc.Now().UTC(), Alarms: se.Alarms}
		case errors.As(cause, &gl):
			j.Outcome = drill.OutcomeGuardLost
			u.lostGuard(gl)
		default:
			j.Outcome, j.Reason = drill.OutcomeInterrupted, "interrupted"
		}
	})
}

// stepTimeout is the step's own timeout, or what its kind needs, or the
// drill's default.
func stepTimeout(d *drill.Drill, s *drill.Step) time.Duration {
	if s.Timeout > 0 {
		return s.Timeout
	}
	t := d.StepTimeout
	if dt, ok := s.Spec.(runtime.DefaultTimeouter); ok {
		t = max(t, dt.DefaultTimeout())
	}
	return t
}

// step runs one step and reports whether it passed. A step whose guard
// was lost (a wait-for) ends the run.
func (u *run) step(runCtx context.Context, s *drill.Step, i int) bool {
	r, d, rc, j := u.jr, u.d, u.rc, u.j
	rec := &j.Steps[i]
	rc.SetCurrentStep(s.ID)
	timeout := stepTimeout(d, s)
	start := rc.Now()
	r.mu.Lock()
	rec.Status, rec.StartedAt, rec.TimeoutSeconds = drill.StatusRunning, drill.TimePtr(start), drill.Seconds(timeout)
	rec.Description = runtime.ActionOf(s).Describe(rc)
	r.mu.Unlock()
	r.emit(Event{Kind: EventStepStarted, StepIndex: i + 1})

	sctx, cancel := context.WithTimeout(runCtx, timeout)
	defer cancel()
	for _, rb := range s.Rollback {
		id := u.push(&explicitRollback{step: rb}, s.ID, true)
		r.update(func() { rec.Rollbacks = append(rec.Rollbacks, id) })
	}
	var outs *runtime.Outputs
	var err error
	if m, ok := s.Spec.(runtime.Mutating); ok {
		var rb runtime.Rollback
		if rb, err = m.Prepare(sctx, rc); err == nil && rb != nil {
			id := u.push(rb, s.ID, false)
			r.update(func() { rec.Rollbacks = append(rec.Rollbacks, id) })
		}
	}
	if err == nil {
		outs, err = runtime.ActionOf(s).Run(sctx, rc)
	}
	if gl := (*runtime.GuardLostError)(nil); errors.As(err, &gl) && runCtx.Err() == nil {
		gl.Name = cmp.Or(gl.Name, s.ID)
		u.cancel(gl)
	}
	if outs != nil {
		rc.SetOutputs(s.ID, outs)
	}
	end := rc.Now()
	r.mu.Lock()
	// The levers this step moved now have expiries: record them at once,
	// so a journal left by a killed run says when each lapses.
	// Every lever, not only this step's: a later step moving a lever
	// again changes what the drill wrote (its version) and its expiry.
	for k := range j.Rollbacks {
		r.addExpiry(&j.Rollbacks[k], r.rbs[k])
	}
	rec.EndedAt, rec.DurationSeconds = drill.TimePtr(end), drill.Seconds(end.Sub(start))
	rec.Outputs = outs.Public()
	rec.Reason = rc.StepReason(s.ID)
	if outs != nil {
		rec.Detail = outs.Detail
		rec.Fleet = outs.Fleet
	}
	if fe := (*runtime.FleetError)(nil); errors.As(err, &fe) {
		rec.Fleet = fe.Fleet
	}
	switch {
	case err == nil:
		rec.Status = drill.StatusPassed
	case runCtx.Err() != nil:
		rec.Status, rec.Error = runStatus(context.Cause(runCtx))
	case sctx.Err() != nil && errors.Is(err, context.DeadlineExceeded):
		rec.Status, rec.Error = drill.StatusFailed, fmt.Sprintf("the step's timeout (%s) passed", timeout)
	default:
		rec.Status, rec.Error = drill.StatusFailed, err.Error()
	}
	r.mu.Unlock()
	r.emit(Event{Kind: EventStepDone, StepIndex: i + 1})
	return err == nil
}

// runStatus maps the run context's cause to a step status and message.
func runStatus(cause error) (string, string) {
	var se *StopError
	var gl *runtime.GuardLostError
	switch {
	case errors.Is(cause, ErrDrillTimeout):
		return drill.StatusTimedOut, "the drill's timeout passed"
	case errors.As(cause, &se):
		return drill.StatusStopped, se.Error()
	case errors.As(cause, &gl):
		return drill.StatusGuardLost, gl.Error()
	}
	return drill.StatusInterrupted, "interrupted"
}
