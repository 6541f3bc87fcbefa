package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/store"
)

// Rollback retries: a rollback that fails (the store throttled, a write
// raced) is tried again within its own timeout.
const (
	rollbackAttempts = 3
	rollbackBackoff  = 250 * time.Millisecond
)

// ErrDrillTimeout is the cause of a run context ended by the drill's timeout.
var ErrDrillTimeout = errors.New("drill timeout reached")

// StopError is the cause of a run context ended by a stop condition.
type StopError struct {
	// Condition is the stop condition's name; Detail what it observed.
	Condition string
	Detail    string
	// Alarms are the alarms that fired (alarm conditions).
	Alarms []metrics.Alarm
}

// Error names the condition and what it observed.
func (e *StopError) Error() string {
	return fmt.Sprintf("stop condition %q held: %s", e.Condition, e.Detail)
}

// EventKind says what happened in an [Event].
type EventKind uint8

// Event kinds, in the order a run emits them.
const (
	EventRunStarted EventKind = iota
	// EventPhase: a phase began (Event.Phase: hypothesis before, steps,
	// rollback, hypothesis after).
	EventPhase
	EventCheckDone
	EventStepStarted
	EventRollbackRegistered
	EventStepDone
	EventRollbackStarted
	EventRollbackDone
	// EventNotice: a progress message or warning (Event.Message).
	EventNotice
	EventRunFinished
)

// Event is one thing that happened during a run. The pointers are valid
// only during the Report call.
type Event struct {
	Kind    EventKind
	Time    time.Time
	Journal *drill.Journal
	Phase   string
	// StepIndex is the 1-based index of Step among the drill's steps.
	StepIndex int
	Step      *drill.StepRecord
	Check     *drill.CheckRecord
	Rollback  *drill.RollbackRecord
	Message   string
}

// Reporter receives a run's events, one at a time, on the runner's
// goroutine (or under its lock).
type Reporter interface {
	Report(ev Event)
}

// Runner runs drills.
type Runner struct {
	// Deps are what steps act on.
	Deps *drill.Deps
	// Reporters receive every event (live log, journal file, JUnit).
	Reporters []Reporter
	// RollbackContext is the parent of every rollback's context and of the
	// hypothesis checks after them; it is NOT the run context, so a
	// canceled run still rolls back. Canceling it abandons the remaining
	// rollbacks (the command does so on a third signal). Nil means
	// context.Background().
	RollbackContext context.Context
	// RunID identifies the run; empty means a random one.
	RunID string
	// Process, when set, identifies the process running the drill in the
	// journal (pid, host, lock file), for drill recover.
	Process *drill.RunnerRecord
	// Notifier announces the run to the context's channel: started (when
	// the steps begin), stopped (when a stop condition holds, before the
	// rollbacks) and finished (after them, with each lever's state and
	// every audit record the run wrote). Nil announces nothing.
	Notifier notify.Notifier

	mu      sync.Mutex
	journal *drill.Journal
	// rbs[i] is the rollback of journal.Rollbacks[i].
	rbs []drill.Rollback
	// stopNoticed holds the last evaluation error noticed per stop
	// condition, so a condition failing every poll is noted once.
	stopNoticed map[string]string
	// guardCode is the exit code of a refused run or a lost guard.
	guardCode int
}

type stackEntry struct {
	rb  drill.Rollback
	idx int // into journal.Rollbacks
}

// run is one run of a drill: what its phases share.
type run struct {
	r        *Runner
	d        *drill.Drill
	rc       *drill.RunContext
	j        *drill.Journal
	rbParent context.Context
	// cancel ends the steps with a cause (a stop, a lost guard).
	cancel context.CancelCauseFunc
	// stack is the rollbacks in registration order (the main goroutine's).
	stack []stackEntry
	// stepIdx is the step running now (1-based), for notices; guarded by r.mu.
	stepIdx int

	// guards follows each stop condition's failed evaluations in a row
	// (the monitor and the steps' loop both evaluate them).
	guardMu sync.Mutex
	guards  map[*drill.Check]*drill.GuardState
}

// Run runs d: variables, the preflight of every guard, the hypothesis, the
// steps (watching the stop conditions), every registered rollback in
// reverse order, and the hypothesis again. It returns the journal;
// Journal.ExitCode says how the command should exit. Canceling ctx
// interrupts the steps; rollbacks still run on contexts derived from
// RollbackContext.
func (r *Runner) Run(ctx context.Context, d *drill.Drill) *drill.Journal {
	u := r.start(d)
	if !u.resolve(ctx) {
		return r.finish(u.rc, u.j)
	}
	runCtx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	runCtx, cancelTimeout := context.WithTimeoutCause(runCtx, d.Timeout, ErrDrillTimeout)
	defer cancelTimeout()
	u.cancel = cancelRun
	if !u.preflight(runCtx) {
		return r.finish(u.rc, u.j)
	}
	for _, s := range d.Rollbacks {
		u.push(&explicitRollback{step: s, timeout: d.RollbackTimeout}, "drill", true)
	}
	beforeFailed := u.hypothesisBefore(runCtx)
	failed := beforeFailed
	announced := false
	if !failed && runCtx.Err() == nil {
		announced = true
		u.announce(ctx, notify.ActionDrillStarted, "", fmt.Sprintf("%d step(s), timeout %s", len(d.Steps), d.Timeout))
		failed = u.steps(runCtx)
	}
	u.verdict(runCtx, failed)
	cancelTimeout()
	if se := (*StopError)(nil); announced && errors.As(context.Cause(runCtx), &se) {
		u.announce(u.rbParent, notify.ActionDrillStopped, drill.OutcomeStopped, se.Error()+"; rolling back")
	}
	u.rollbackAll()
	u.hypothesisAfter(ctx, beforeFailed)
	j := r.finish(u.rc, u.j)
	if announced {
		detail := fmt.Sprintf("exit %d; %s", j.ExitCode, rollbackSummary(j))
		if j.Reason != "" {
			detail = j.Reason + "; " + detail
		}
		u.announce(u.rbParent, notify.ActionDrillFinished, j.Outcome, detail)
	}
	return j
}

// announce sends one notification about the run (a nil Notifier sends
// none): the levers as the journal has them, every audit record the run
// wrote so far.
func (u *run) announce(ctx context.Context, action, outcome, detail string) {
	r, rc := u.r, u.rc
	if r.Notifier == nil {
		return
	}
	r.mu.Lock()
	levers := drillLevers(u.j.Rollbacks)
	ids := make([]string, 0, len(u.j.Audit))
	for _, a := range u.j.Audit {
		ids = append(ids, a.ID)
	}
	r.mu.Unlock()
	r.Notifier.Notify(ctx, notify.Event{Action: action, Source: notify.SourceDrill, Context: rc.Deps.ContextName, Actor: rc.Deps.Actor,
		Reason: rc.Reason(""), Outcome: outcome, Detail: rc.Redact(detail), Drill: &notify.Drill{Name: rc.Drill.Name, RunID: rc.RunID},
		Levers: levers, AuditIDs: ids})
}

func rollbackSummary(j *drill.Journal) string {
	ok := 0
	for _, rb := range j.Rollbacks {
		if rb.Status == drill.StatusOK {
			ok++
		}
	}
	if len(j.Rollbacks) == 0 {
		return "no rollbacks"
	}
	return fmt.Sprintf("%d of %d rollback(s) ok", ok, len(j.Rollbacks))
}

// start builds the journal and the run context, and announces the run.
func (r *Runner) start(d *drill.Drill) *run {
	svc := r.Deps
	if svc == nil {
		svc = &drill.Deps{}
	}
	runID := r.RunID
	if runID == "" {
		runID = NewRunID()
	}
	u := &run{r: r, d: d, rbParent: r.RollbackContext, guards: map[*drill.Check]*drill.GuardState{}}
	if u.rbParent == nil {
		u.rbParent = context.Background()
	}
	rc := drill.NewRunContext(d, runID, svc, nil)
	j := &drill.Journal{Kind: "DrillRun", Version: drill.JournalVersion, Drill: drill.DrillInfo{Name: d.Name, File: d.File, Description: d.Description},
		RunID: runID, Context: svc.ContextName, Store: svc.StoreDescription, Actor: svc.Actor,
		StartedAt: rc.Started().UTC(), Deadline: rc.Deadline().UTC(), TimeoutSeconds: drill.Seconds(d.Timeout), Outcome: drill.OutcomeRunning,
		Hypothesis: drill.Hypothesis{Before: []drill.CheckRecord{}, After: []drill.CheckRecord{}}, Steps: make([]drill.StepRecord, len(d.Steps)),
		Rollbacks: []drill.RollbackRecord{}, RollbacksOK: true, Runner: r.Process}
	if svc.Gauges != nil {
		j.Gauges = svc.Gauges.Describe()
	}
	for i, s := range d.Steps {
		j.Steps[i] = drill.StepRecord{ID: s.ID, Name: s.Name, Kind: s.Kind.Name(), Status: drill.StatusPending}
	}
	u.rc, u.j = rc, j
	r.mu.Lock()
	r.journal, r.guardCode = j, 0
	r.mu.Unlock()
	rc.SetNotify(func(msg string) {
		r.mu.Lock()
		idx := u.stepIdx
		if idx > 0 {
			s := &j.Steps[idx-1]
			if len(s.Log) < 200 {
				s.Log = append(s.Log, rc.Now().UTC().Format("15:04:05.000Z")+" "+msg)
			}
		}
		r.mu.Unlock()
		r.emit(Event{Kind: EventNotice, Message: msg, StepIndex: idx})
	})
	r.emit(Event{Kind: EventRunStarted})
	return u
}

// resolve resolves the variables, the alarm requests and metrics_url; it
// reports false (the run is invalid) when one cannot be.
func (u *run) resolve(ctx context.Context) bool {
	r, d, rc, j := u.r, u.d, u.rc, u.j
	invalid := func(reason string) bool {
		r.update(func() { j.Outcome, j.Reason = drill.OutcomeInvalid, reason })
		return false
	}
	for _, v := range d.Vars {
		val, err := rc.Expand(v.Value)
		if err != nil {
			return invalid(fmt.Sprintf("variable %s: %v", v.Name, err))
		}
		rc.SetVar(v.Name, val, v.Secret)
	}
	if err := rc.CheckAlarms(ctx); err != nil {
		return invalid(rc.Redact(err.Error()))
	}
	if !d.MetricsURL.IsZero() {
		murl, err := rc.ExpandURL(d.MetricsURL)
		if err != nil {
			return invalid(fmt.Sprintf("metrics_url: %v", err))
		}
		own := *rc.Deps
		if own.HTTP == nil {
			own.HTTP = drill.NewHTTPClient()
		}
		own.Gauges = drill.PrometheusGauges(murl, own.HTTP, rc.Clock())
		rc.Deps = &own
		r.update(func() { j.Gauges = own.Gauges.Describe() })
	}
	// From here every breaker_state read and audit record is journaled.
	rc.Deps = r.recording(rc)
	return true
}

// evaluate evaluates c once, bounded by its timeout.
func evaluate(ctx context.Context, rc *drill.RunContext, c *drill.Check) (drill.Observation, error) {
	timeout := c.Timeout
	if timeout == 0 {
		timeout = drill.DefaultCheckTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return c.Condition.Check(cctx, rc)
}

// preflight evaluates every stop condition and hypothesis check once,
// before anything is done (one poll round: the alarm conditions share one
// DescribeAlarms call). A guard that cannot be evaluated refuses the run:
// nothing is written but the journal and the reports saying so. It
// reports whether the run may go on.
func (u *run) preflight(ctx context.Context) bool {
	r, d, rc, j := u.r, u.d, u.rc, u.j
	if len(d.StopConditions)+len(d.Hypothesis) == 0 {
		return true
	}
	r.emit(Event{Kind: EventPhase, Phase: drill.PhasePreflight})
	round := drill.WithAlarmRound(ctx)
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
		rec := drill.CheckRecord{Phase: drill.PhasePreflight, Name: c.Name, Kind: c.Kind.Name(), Description: rc.Redact(c.Condition.Describe(rc)),
			OK: err == nil, Checks: 1, StartedAt: start.UTC(), EndedAt: drill.TimePtr(end), DurationSeconds: drill.Seconds(end.Sub(start))}
		if err == nil {
			rec.Detail = "can be evaluated: " + rc.Redact(obs.Detail)
		} else {
			failures++
			cause, fix := rc.Redact(err.Error()), rc.Redact(drill.GuardFix(err))
			rec.Error = fmt.Sprintf("%s could not be evaluated: %s (fix: %s)", role, cause, fix)
			if refusal == nil {
				refusal = &drill.GuardRecord{Phase: drill.GuardPreflight, Role: role, Condition: c.Name, Cause: cause, Fix: fix, At: end.UTC()}
				refusalErr = err
			}
		}
		r.update(func() { j.Preflight = append(j.Preflight, rec) })
		r.emit(Event{Kind: EventCheckDone, Phase: drill.PhasePreflight, Check: &rec})
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
	r.update(func() {
		j.Outcome, j.Reason, j.Guard = drill.OutcomeRefused, reason+"; nothing was done", refusal
		r.guardCode = drill.GuardExitCode(refusalErr)
		for i := range j.Steps {
			j.Steps[i].Status = drill.StatusSkipped
		}
		j.Hypothesis.AfterSkipped = "refused at preflight: nothing was done"
	})
	return false
}

// push registers a rollback (before the step that needs it acts).
func (u *run) push(rb drill.Rollback, step string, explicit bool) string {
	r, j, rc := u.r, u.j, u.rc
	r.mu.Lock()
	id := fmt.Sprintf("rb-%d", len(j.Rollbacks)+1)
	j.Rollbacks = append(j.Rollbacks, drill.RollbackRecord{ID: id, Step: step, Subject: rb.Subject(), Description: rc.Redact(rb.Describe()),
		Explicit: explicit, RegisteredAt: rc.Now().UTC(), Status: drill.StatusPending})
	idx := len(j.Rollbacks) - 1
	if l := rb.LeverRecord(); l != nil {
		j.Rollbacks[idx].Lever = l
	}
	r.rbs = append(r.rbs, rb)
	u.stack = append(u.stack, stackEntry{rb: rb, idx: idx})
	rec := j.Rollbacks[idx]
	r.mu.Unlock()
	r.emit(Event{Kind: EventRollbackRegistered, Rollback: &rec})
	return id
}

// hypothesisBefore checks the steady state before the steps; it reports
// whether it failed. A check whose guard is lost ends the run.
func (u *run) hypothesisBefore(runCtx context.Context) bool {
	r, j := u.r, u.j
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
					j.Reason = fmt.Sprintf("the hypothesis did not hold before the drill: %s: %s", rec.Name, firstNonEmpty(rec.Error, rec.Detail))
				})
			}
		}
		if runCtx.Err() != nil {
			break
		}
	}
	return failed
}

// steps runs the steps while the stop conditions are watched; it reports
// whether one failed.
func (u *run) steps(runCtx context.Context) bool {
	r, d, j := u.r, u.d, u.j
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
		r.update(func() { u.stepIdx = i + 1 })
		ok := u.step(runCtx, s, i)
		r.update(func() {
			u.stepIdx = 0
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
	r, d, rc, j := u.r, u.d, u.rc, u.j
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
		var gl *drill.GuardLostError
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

// lostGuard records gl as the run's lost guard; the caller holds r.mu.
func (u *run) lostGuard(gl *drill.GuardLostError) {
	rc, j := u.rc, u.j
	j.Reason = rc.Redact(gl.Error()) + ": " + rc.Redact(drill.GuardFix(gl.Err))
	j.Guard = &drill.GuardRecord{Phase: drill.GuardDuringRun, Role: gl.Role, Condition: gl.Name, Cause: rc.Redact(gl.Err.Error()),
		Fix: rc.Redact(drill.GuardFix(gl.Err)), Polls: gl.Polls, Since: drill.TimePtr(gl.Since), GracePolls: gl.Grace.Polls,
		GraceSeconds: drill.Seconds(gl.Grace.For), At: rc.Now().UTC()}
	u.r.guardCode = drill.GuardExitCode(gl.Err)
}

// rollbackAll runs every registered rollback, last registered first.
func (u *run) rollbackAll() {
	u.r.emit(Event{Kind: EventPhase, Phase: drill.PhaseRollback})
	for i := len(u.stack) - 1; i >= 0; i-- {
		u.r.rollback(u.rbParent, u.rc, u.d, u.stack[i])
	}
}

// hypothesisAfter checks the steady state again after the rollbacks,
// unless the operator interrupted (they asked to stop; rollback is what
// must happen) or abandoned the rollback. An interrupt during these checks
// ends them.
func (u *run) hypothesisAfter(ctx context.Context, beforeFailed bool) {
	r, d, j := u.r, u.d, u.j
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
				j.Reason = fmt.Sprintf("the hypothesis did not hold after the rollback: %s: %s", rec.Name, firstNonEmpty(rec.Error, rec.Detail))
			}
		})
	}
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// finish stamps the end, computes the exit code and emits the last event.
func (r *Runner) finish(rc *drill.RunContext, j *drill.Journal) *drill.Journal {
	end := rc.Now()
	r.mu.Lock()
	j.EndedAt = drill.TimePtr(end)
	j.DurationSeconds = drill.Seconds(end.Sub(rc.Started()))
	if !rollbacksOK(j) {
		j.RollbacksOK = false
	}
	switch {
	case j.Outcome == drill.OutcomeInvalid:
		j.ExitCode = drill.ExitInvalid
	case !j.RollbacksOK:
		j.ExitCode = drill.ExitRollbackFailed
	case j.Outcome == drill.OutcomeInterrupted:
		j.ExitCode = drill.ExitInterrupted
	case (j.Outcome == drill.OutcomeRefused || j.Outcome == drill.OutcomeGuardLost) && r.guardCode != 0:
		j.ExitCode = r.guardCode
	case j.Outcome == drill.OutcomePassed:
		j.ExitCode = drill.ExitPassed
	default:
		j.ExitCode = drill.ExitFailed
	}
	r.mu.Unlock()
	r.emit(Event{Kind: EventRunFinished})
	return j
}

// update runs f under the journal lock: reporters may be reading the
// journal from another goroutine's event.
func (r *Runner) update(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f()
}

// Notice records a warning (a repeated signal) in the journal and the
// live log. It is safe to call from any goroutine during Run.
func (r *Runner) Notice(msg string) {
	r.mu.Lock()
	j := r.journal
	if j != nil {
		j.Notices = append(j.Notices, msg)
	}
	r.mu.Unlock()
	r.emit(Event{Kind: EventNotice, Message: msg})
}

// emit delivers ev to every reporter, one event at a time.
func (r *Runner) emit(ev Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev.Journal = r.journal
	if ev.Time.IsZero() {
		ev.Time = time.Now()
		if r.Deps != nil && r.Deps.Clock != nil {
			ev.Time = r.Deps.Clock.Now()
		}
	}
	if ev.StepIndex > 0 && ev.Step == nil && ev.Journal != nil && ev.StepIndex <= len(ev.Journal.Steps) {
		ev.Step = &ev.Journal.Steps[ev.StepIndex-1]
	}
	for _, rep := range r.Reporters {
		rep.Report(ev)
	}
}

// stepTimeout is the step's own timeout, or what its kind needs, or the
// drill's default.
func stepTimeout(d *drill.Drill, s *drill.Step) time.Duration {
	if s.Timeout > 0 {
		return s.Timeout
	}
	t := d.StepTimeout
	if dt, ok := s.Action.(drill.DefaultTimeouter); ok {
		t = max(t, dt.DefaultTimeout())
	}
	return t
}

// step runs one step and reports whether it passed. A step whose guard
// was lost (a wait-for) ends the run.
func (u *run) step(runCtx context.Context, s *drill.Step, i int) bool {
	r, d, rc, j := u.r, u.d, u.rc, u.j
	rec := &j.Steps[i]
	rc.SetCurrentStep(s.ID)
	timeout := stepTimeout(d, s)
	start := rc.Now()
	r.mu.Lock()
	rec.Status, rec.StartedAt, rec.TimeoutSeconds = drill.StatusRunning, drill.TimePtr(start), drill.Seconds(timeout)
	rec.Description = rc.Redact(s.Action.Describe(rc))
	r.mu.Unlock()
	r.emit(Event{Kind: EventStepStarted, StepIndex: i + 1})

	sctx, cancel := context.WithTimeout(runCtx, timeout)
	defer cancel()
	for _, rb := range s.Rollback {
		id := u.push(&explicitRollback{step: rb, timeout: d.RollbackTimeout}, s.ID, true)
		r.update(func() { rec.Rollbacks = append(rec.Rollbacks, id) })
	}
	var outs *drill.Outputs
	var err error
	if m, ok := s.Action.(drill.Mutating); ok {
		var rb drill.Rollback
		if rb, err = m.Prepare(sctx, rc); err == nil && rb != nil {
			id := u.push(rb, s.ID, false)
			r.update(func() { rec.Rollbacks = append(rec.Rollbacks, id) })
		}
	}
	if err == nil {
		outs, err = s.Action.Run(sctx, rc)
	}
	if gl := (*drill.GuardLostError)(nil); errors.As(err, &gl) && runCtx.Err() == nil {
		if gl.Name == "" {
			gl.Name = s.ID
		}
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
	if outs != nil {
		rec.Detail = rc.Redact(outs.Detail)
		rec.Fleet = outs.Fleet
	}
	if fe := (*drill.FleetError)(nil); errors.As(err, &fe) {
		rec.Fleet = fe.Fleet
	}
	switch {
	case err == nil:
		rec.Status = drill.StatusPassed
	case runCtx.Err() != nil:
		rec.Status, rec.Error = runStatus(context.Cause(runCtx))
		rec.Error = rc.Redact(rec.Error)
	case sctx.Err() != nil && errors.Is(err, context.DeadlineExceeded):
		rec.Status, rec.Error = drill.StatusFailed, fmt.Sprintf("the step's timeout (%s) passed", timeout)
	default:
		rec.Status, rec.Error = drill.StatusFailed, rc.Redact(err.Error())
	}
	r.mu.Unlock()
	r.emit(Event{Kind: EventStepDone, StepIndex: i + 1})
	return err == nil
}

// runStatus maps the run context's cause to a step status and message.
func runStatus(cause error) (string, string) {
	var se *StopError
	var gl *drill.GuardLostError
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

// check evaluates one hypothesis check and records it. A check that polls
// (within) is a guard: when it stays unevaluable past the drill's grace it
// ends with the lost guard, unless it says on_error: continue.
func (u *run) check(ctx context.Context, c *drill.Check, phase string) (drill.CheckRecord, *drill.GuardLostError) {
	r, d, rc := u.r, u.d, u.rc
	start := rc.Now()
	interval := c.Interval
	if interval == 0 {
		interval = d.PollInterval
	}
	spec := drill.PollSpec{Within: c.Within, Interval: interval, Attempt: c.Timeout}
	if c.Within > 0 && c.OnError != drill.OnErrorContinue {
		spec.Guard = &drill.PollGuard{Role: drill.RoleHypothesis, Name: c.Name, Grace: d.GuardGrace}
	}
	res, err := drill.PollWith(ctx, rc, c.Condition, spec)
	end := rc.Now()
	rec := drill.CheckRecord{Phase: phase, Name: c.Name, Kind: c.Kind.Name(), Description: rc.Redact(c.Condition.Describe(rc)),
		OK: err == nil, Detail: rc.Redact(res.Obs.Detail), Checks: res.Polls, StartedAt: start.UTC(), EndedAt: drill.TimePtr(end),
		DurationSeconds: drill.Seconds(end.Sub(start))}
	var lost *drill.GuardLostError
	switch {
	case err == nil:
	case errors.As(err, &lost):
		rec.Error = rc.Redact(lost.Error())
	case ctx.Err() != nil:
		_, rec.Error = runStatus(context.Cause(ctx))
		rec.Error = rc.Redact(rec.Error)
	case res.Err != nil:
		rec.Error = "could not check: " + rc.Redact(res.Err.Error())
	case c.Within > 0:
		rec.Error = fmt.Sprintf("did not hold within %s (%d checks)", c.Within, res.Polls)
	}
	r.mu.Lock()
	if phase == drill.PhaseBefore {
		r.journal.Hypothesis.Before = append(r.journal.Hypothesis.Before, rec)
	} else {
		r.journal.Hypothesis.After = append(r.journal.Hypothesis.After, rec)
	}
	r.mu.Unlock()
	r.emit(Event{Kind: EventCheckDone, Phase: phase, Check: &rec})
	return rec, lost
}

// firstStop evaluates the stop conditions once and returns the first that
// holds (a *StopError), or the first whose guard is lost: one that stayed
// unevaluable past the drill's guard_grace (a *drill.GuardLostError). An
// evaluation error within the grace, or of a condition that says
// on_error: continue, is a notice.
func (u *run) firstStop(ctx context.Context) error {
	r, d, rc := u.r, u.d, u.rc
	// One poll round: the alarm conditions share one DescribeAlarms call.
	round := drill.WithAlarmRound(ctx)
	for _, c := range d.StopConditions {
		obs, err := evaluate(round, rc, c)
		if ctx.Err() != nil {
			return nil
		}
		ev := drill.StopEvaluation{At: rc.Now().UTC(), Condition: c.Name, Holds: err == nil && obs.Holds, Detail: rc.Redact(obs.Detail)}
		if err != nil {
			ev.Error = rc.Redact(err.Error())
		}
		r.recordStop(ev)
		u.guardMu.Lock()
		g := u.guards[c]
		if g == nil {
			g = &drill.GuardState{Grace: d.GuardGrace}
			u.guards[c] = g
		}
		var lost *drill.GuardLostError
		recovered := false
		if err != nil {
			if g.Fail(rc.Now(), err) && c.OnError != drill.OnErrorContinue {
				lost = g.Lost(drill.RoleStopCondition, c.Name, rc.Now())
			}
		} else {
			recovered = g.OK()
		}
		u.guardMu.Unlock()
		switch {
		case lost != nil:
			return lost
		case err != nil:
			then := fmt.Sprintf("the run stops and rolls back if it stays so for %s", d.GuardGrace)
			if c.OnError == drill.OnErrorContinue {
				then = "on_error: continue: the run goes on without this guard"
			}
			r.noticeStop(c.Name, fmt.Sprintf("stop condition %q could not be evaluated: %s; %s", c.Name, rc.Redact(err.Error()), then))
			continue
		case recovered:
			r.noticeStop(c.Name, fmt.Sprintf("stop condition %q can be evaluated again", c.Name))
		}
		if obs.Holds {
			alarms := slices.Clone(obs.Alarms)
			for i := range alarms {
				alarms[i].Reason = rc.Redact(alarms[i].Reason)
			}
			return &StopError{Condition: c.Name, Detail: rc.Redact(obs.Detail), Alarms: alarms}
		}
	}
	return nil
}

// noticeStop notes msg about a stop condition, once while it repeats.
func (r *Runner) noticeStop(name, msg string) {
	r.mu.Lock()
	if r.stopNoticed == nil {
		r.stopNoticed = map[string]string{}
	}
	repeated := r.stopNoticed[name] == msg
	r.stopNoticed[name] = msg
	r.mu.Unlock()
	if !repeated {
		r.Notice(msg)
	}
}

// monitor evaluates the stop conditions every poll interval while the
// steps run, and cancels the run when one holds or its guard is lost. It
// returns a function that stops it and waits for it.
func (u *run) monitor(ctx context.Context) func() {
	d, rc := u.d, u.rc
	if len(d.StopConditions) == 0 {
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

// rollback runs one rollback on a fresh context with its own timeout,
// retrying a failure while time is left.
func (r *Runner) rollback(parent context.Context, rc *drill.RunContext, d *drill.Drill, e stackEntry) {
	j := r.journal
	r.mu.Lock()
	rec := &j.Rollbacks[e.idx]
	if parent.Err() != nil {
		rec.Status, rec.Error = drill.StatusAbandoned, "abandoned: the operator stopped the rollback"
		r.addExpiry(rec, e.rb)
		snap := *rec
		r.mu.Unlock()
		r.emit(Event{Kind: EventRollbackDone, Rollback: &snap})
		return
	}
	start := rc.Now()
	rec.Status, rec.StartedAt = drill.StatusRunning, drill.TimePtr(start)
	snap := *rec
	r.mu.Unlock()
	r.emit(Event{Kind: EventRollbackStarted, Rollback: &snap})

	ctx, cancel := context.WithTimeout(parent, d.RollbackTimeout)
	defer cancel()
	rc.SetCurrentStep(rec.Step)
	detail, attempts, err := undoWithRetry(ctx, rc, e.rb)
	end := rc.Now()
	r.mu.Lock()
	rec.Attempts, rec.EndedAt, rec.DurationSeconds = attempts, drill.TimePtr(end), drill.Seconds(end.Sub(start))
	rec.Detail = rc.Redact(detail)
	// A lever change and its record are one write: a rollback restored
	// its lever (ok), or did not, or nobody can tell (failed, its error
	// says what to read).
	switch {
	case err == nil:
		rec.Status, rec.Error = drill.StatusOK, ""
	case parent.Err() != nil:
		rec.Status, rec.Error = drill.StatusAbandoned, "abandoned: the operator stopped the rollback"
	case ctx.Err() != nil:
		rec.Status, rec.Error = drill.StatusFailed, fmt.Sprintf("did not finish within the rollback timeout (%s): %s", d.RollbackTimeout, rc.Redact(err.Error()))
	default:
		rec.Status, rec.Error = drill.StatusFailed, rc.Redact(err.Error())
	}
	r.addExpiry(rec, e.rb)
	snap = *rec
	r.mu.Unlock()
	r.emit(Event{Kind: EventRollbackDone, Rollback: &snap})
}

// undoWithRetry runs rb.Undo, retrying a failure up to rollbackAttempts
// times within ctx (the rollback's timeout); a change whose outcome is
// unknown (store.ErrOutcomeUnknown: the store could not be reached to
// settle it) ends it: a retry could find the lever restored and say
// "already", hiding that nobody knows what the first one did.
func undoWithRetry(ctx context.Context, rc *drill.RunContext, rb drill.Rollback) (detail string, attempts int, err error) {
	for attempts < rollbackAttempts {
		attempts++
		detail, err = rb.Undo(ctx, rc)
		if err == nil || ctx.Err() != nil || errors.Is(err, store.ErrOutcomeUnknown) {
			return detail, attempts, err
		}
		if attempts < rollbackAttempts {
			// Wall time, like the rollback timeout (a context deadline)
			// that bounds the retries: the run's clock may be a frozen one.
			wait := time.NewTimer(rollbackBackoff << (attempts - 1))
			select {
			case <-ctx.Done():
			case <-wait.C:
			}
			wait.Stop()
			if ctx.Err() != nil {
				return detail, attempts, err
			}
		}
	}
	return detail, attempts, err
}

// addExpiry records when the lever lapses on its own (for rollbacks that
// did not succeed, the worst case).
func (r *Runner) addExpiry(rec *drill.RollbackRecord, rb drill.Rollback) {
	if t := rb.ExpiresAt(); !t.IsZero() {
		rec.ExpiresAt = drill.TimePtr(t)
	}
	rec.Subject = rb.Subject()
	if l := rb.LeverRecord(); l != nil {
		rec.Lever = l
	}
}

// explicitRollback runs a step from a rollback list.
type explicitRollback struct {
	step    *drill.Step
	timeout time.Duration
}

func (e *explicitRollback) Subject() string { return e.step.Kind.Name() }

// ExpiresAt is zero: a rollback step's effect does not lapse on its own.
func (e *explicitRollback) ExpiresAt() time.Time { return time.Time{} }

func (e *explicitRollback) Describe() string {
	if e.step.Name != "" && e.step.Name != e.step.ID {
		return e.step.Name
	}
	return "run the " + e.step.Kind.Name() + " rollback"
}

func (e *explicitRollback) Undo(ctx context.Context, rc *drill.RunContext) (string, error) {
	if e.step.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.step.Timeout)
		defer cancel()
	}
	out, err := e.step.Action.Run(ctx, rc)
	detail := e.step.Action.Describe(rc)
	if out != nil && out.Detail != "" {
		detail += ": " + out.Detail
	}
	return detail, err
}

func (e *explicitRollback) LeverRecord() *drill.LeverRecord {
	return &drill.LeverRecord{Kind: drill.LeverExplicit, Inverse: "run-step"}
}

// NewRunID returns a random run id: 12 lowercase hex digits.
func NewRunID() string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return strings.Repeat("0", 12)
	}
	return hex.EncodeToString(b[:])
}
