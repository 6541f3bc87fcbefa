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

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/notify"
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

// Phases of a run.
const (
	PhaseBefore   = "hypothesis before"
	PhaseSteps    = "steps"
	PhaseRollback = "rollback"
	PhaseAfter    = "hypothesis after"
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
	// the steps begin), stopped (when a stop condition holds) and finished
	// (after the rollbacks, with each lever's state and every audit record
	// the run wrote). Nil announces nothing.
	Notifier notify.Notifier

	mu      sync.Mutex
	journal *drill.Journal
	// rbs[i] is the rollback of journal.Rollbacks[i].
	rbs []drill.Rollback
	// stopNoticed holds the last evaluation error noticed per stop
	// condition, so a condition failing every poll is noted once.
	stopNoticed map[string]string
}

type stackEntry struct {
	rb  drill.Rollback
	idx int // into journal.Rollbacks
}

// Run runs d: variables, the hypothesis, the steps (watching the stop
// conditions), every registered rollback in reverse order, and the
// hypothesis again. It returns the journal; Journal.ExitCode says how the
// command should exit. Canceling ctx interrupts the steps; rollbacks
// still run on contexts derived from RollbackContext.
func (r *Runner) Run(ctx context.Context, d *drill.Drill) *drill.Journal {
	svc := r.Deps
	if svc == nil {
		svc = &drill.Deps{}
	}
	// The run's audit records are collected for its notifications.
	audited := &auditRecorder{}
	if svc.Audit != nil {
		own := *svc
		audited.inner = svc.Audit
		own.Audit = audited
		svc = &own
	}
	runID := r.RunID
	if runID == "" {
		runID = NewRunID()
	}
	rbParent := r.RollbackContext
	if rbParent == nil {
		rbParent = context.Background()
	}
	rc := drill.NewRunContext(d, runID, svc, nil)
	j := &drill.Journal{Kind: "DrillRun", Version: drill.Version, Drill: drill.DrillInfo{Name: d.Name, File: d.File, Description: d.Description},
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
	r.mu.Lock()
	r.journal = j
	r.mu.Unlock()
	var stepIdx int // the step running now (1-based), for notices
	rc.SetNotify(func(msg string) {
		r.mu.Lock()
		if stepIdx > 0 {
			s := &j.Steps[stepIdx-1]
			if len(s.Log) < 200 {
				s.Log = append(s.Log, rc.Now().UTC().Format("15:04:05.000Z")+" "+msg)
			}
		}
		r.mu.Unlock()
		r.emit(Event{Kind: EventNotice, Message: msg, StepIndex: stepIdx})
	})
	r.emit(Event{Kind: EventRunStarted})

	for _, v := range d.Vars {
		val, err := rc.Expand(v.Value)
		if err != nil {
			r.update(func() { j.Outcome, j.Reason = drill.OutcomeInvalid, fmt.Sprintf("variable %s: %v", v.Name, err) })
			return r.finish(rc, j)
		}
		rc.SetVar(v.Name, val, v.Secret)
	}
	if err := rc.CheckAlarms(ctx); err != nil {
		r.update(func() { j.Outcome, j.Reason = drill.OutcomeInvalid, rc.Redact(err.Error()) })
		return r.finish(rc, j)
	}
	if !d.MetricsURL.IsZero() {
		u, err := rc.ExpandURL(d.MetricsURL)
		if err != nil {
			r.update(func() { j.Outcome, j.Reason = drill.OutcomeInvalid, fmt.Sprintf("metrics_url: %v", err) })
			return r.finish(rc, j)
		}
		own := *svc
		if own.HTTP == nil {
			own.HTTP = drill.NewHTTPClient()
		}
		own.Gauges = drill.PrometheusGauges(u, own.HTTP, rc.Clock())
		rc.Deps = &own
		r.update(func() { j.Gauges = own.Gauges.Describe() })
	}

	runCtx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	runCtx, cancelTimeout := context.WithTimeoutCause(runCtx, d.Timeout, ErrDrillTimeout)
	defer cancelTimeout()

	var stack []stackEntry
	push := func(rb drill.Rollback, step string, explicit bool) string {
		r.mu.Lock()
		id := fmt.Sprintf("rb-%d", len(j.Rollbacks)+1)
		j.Rollbacks = append(j.Rollbacks, drill.RollbackRecord{ID: id, Step: step, Subject: rb.Subject(), Description: rc.Redact(rb.Describe()),
			Explicit: explicit, RegisteredAt: rc.Now().UTC(), Status: drill.StatusPending})
		idx := len(j.Rollbacks) - 1
		if l := rb.LeverRecord(); l != nil {
			j.Rollbacks[idx].Lever = l
		}
		r.rbs = append(r.rbs, rb)
		stack = append(stack, stackEntry{rb: rb, idx: idx})
		rec := j.Rollbacks[idx]
		r.mu.Unlock()
		r.emit(Event{Kind: EventRollbackRegistered, Rollback: &rec})
		return id
	}
	for _, s := range d.Rollbacks {
		push(&explicitRollback{step: s, timeout: d.RollbackTimeout}, "drill", true)
	}

	failed := false
	r.emit(Event{Kind: EventPhase, Phase: PhaseBefore})
	for _, c := range d.Hypothesis {
		rec := r.check(runCtx, rc, d, c, PhaseBefore)
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
	beforeFailed := failed

	announced := false
	if !failed && runCtx.Err() == nil {
		r.emit(Event{Kind: EventPhase, Phase: PhaseSteps})
		announced = true
		r.announce(ctx, rc, notify.ActionDrillStarted, "", fmt.Sprintf("%d step(s), timeout %s", len(d.Steps), d.Timeout), audited)
		stopMonitor := r.monitor(runCtx, rc, d, cancelRun)
		for i, s := range d.Steps {
			if runCtx.Err() != nil || failed {
				break
			}
			if stop := r.firstStop(runCtx, rc, d); stop != nil {
				cancelRun(stop)
				break
			}
			r.update(func() { stepIdx = i + 1 })
			ok := r.step(runCtx, rc, d, s, i, push)
			r.update(func() {
				stepIdx = 0
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
		stopMonitor()
	}

	// Why did the steps end?
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
		default:
			j.Outcome, j.Reason = drill.OutcomeInterrupted, "interrupted"
		}
	})
	cancelTimeout()
	if se := (*StopError)(nil); announced && errors.As(cause, &se) {
		r.announce(rbParent, rc, notify.ActionDrillStopped, drill.OutcomeStopped, se.Error()+"; rolling back", audited)
	}

	r.emit(Event{Kind: EventPhase, Phase: PhaseRollback})
	for i := len(stack) - 1; i >= 0; i-- {
		r.rollback(rbParent, rc, d, stack[i])
	}

	// The steady state is checked again after the rollbacks, unless the
	// operator interrupted (they asked to stop; rollback is what must
	// happen) or abandoned the rollback. An interrupt during these checks
	// ends them.
	skip := ""
	switch {
	case j.Outcome == drill.OutcomeInterrupted || ctx.Err() != nil:
		skip = "interrupted: the rollbacks ran; the steady state was not re-checked"
	case rbParent.Err() != nil:
		skip = "rollback abandoned"
	case beforeFailed:
		skip = "the hypothesis did not hold before the drill"
	}
	if skip != "" {
		r.update(func() { j.Hypothesis.AfterSkipped = skip })
	} else if len(d.Hypothesis) > 0 {
		actx, cancelAfter := context.WithCancel(rbParent)
		stopAfter := context.AfterFunc(ctx, cancelAfter)
		r.emit(Event{Kind: EventPhase, Phase: PhaseAfter})
		for _, c := range d.Hypothesis {
			if actx.Err() != nil {
				break
			}
			rec := r.check(actx, rc, d, c, PhaseAfter)
			r.update(func() {
				switch {
				case ctx.Err() != nil:
					if j.Outcome == drill.OutcomePassed || j.Outcome == drill.OutcomeFailed {
						j.Outcome, j.Reason = drill.OutcomeInterrupted, "interrupted while re-checking the hypothesis"
					}
				case !rec.OK && j.Outcome == drill.OutcomePassed:
					j.Outcome = drill.OutcomeFailed
					j.Reason = fmt.Sprintf("the hypothesis did not hold after the rollback: %s: %s", rec.Name, firstNonEmpty(rec.Error, rec.Detail))
				}
			})
		}
		stopAfter()
		cancelAfter()
	}
	j = r.finish(rc, j)
	if announced {
		detail := fmt.Sprintf("exit %d; %s", j.ExitCode, rollbackSummary(j))
		if j.Reason != "" {
			detail = j.Reason + "; " + detail
		}
		r.announce(rbParent, rc, notify.ActionDrillFinished, j.Outcome, detail, audited)
	}
	return j
}

// announce sends one notification about the run (a nil Notifier sends
// none): the levers as the journal has them, every audit record so far.
func (r *Runner) announce(ctx context.Context, rc *drill.RunContext, action, outcome, detail string, audited *auditRecorder) {
	if r.Notifier == nil {
		return
	}
	r.mu.Lock()
	levers := drillLevers(r.journal.Rollbacks)
	r.mu.Unlock()
	r.Notifier.Notify(ctx, notify.Event{Action: action, Source: notify.SourceDrill, Context: rc.Deps.ContextName, Actor: rc.Deps.Actor,
		Reason: rc.Reason(""), Outcome: outcome, Detail: rc.Redact(detail), Drill: &notify.Drill{Name: rc.Drill.Name, RunID: rc.RunID},
		Levers: levers, AuditIDs: audited.IDs()})
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

// auditRecorder passes audit entries on and keeps the ids of the records
// written, for the run's notifications.
type auditRecorder struct {
	inner audit.Appender
	mu    sync.Mutex
	ids   []string
}

func (a *auditRecorder) Append(ctx context.Context, e audit.Entry) (audit.Record, error) {
	rec, err := a.inner.Append(ctx, e)
	if err == nil && rec.ID != "" {
		a.mu.Lock()
		a.ids = append(a.ids, rec.ID)
		a.mu.Unlock()
	}
	return rec, err
}

// IDs returns the ids recorded so far.
func (a *auditRecorder) IDs() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.ids)
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
	for _, rb := range j.Rollbacks {
		if rb.Status != drill.StatusOK {
			j.RollbacksOK = false
		}
	}
	switch {
	case j.Outcome == drill.OutcomeInvalid:
		j.ExitCode = drill.ExitInvalid
	case !j.RollbacksOK:
		j.ExitCode = drill.ExitRollbackFailed
	case j.Outcome == drill.OutcomeInterrupted:
		j.ExitCode = drill.ExitInterrupted
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

// step runs one step and reports whether it passed.
func (r *Runner) step(runCtx context.Context, rc *drill.RunContext, d *drill.Drill, s *drill.Step, i int, push func(drill.Rollback, string, bool) string) bool {
	j := r.journal
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
		id := push(&explicitRollback{step: rb, timeout: d.RollbackTimeout}, s.ID, true)
		r.update(func() { rec.Rollbacks = append(rec.Rollbacks, id) })
	}
	var outs *drill.Outputs
	var err error
	if m, ok := s.Action.(drill.Mutating); ok {
		var rb drill.Rollback
		if rb, err = m.Prepare(sctx, rc); err == nil && rb != nil {
			id := push(rb, s.ID, false)
			r.update(func() { rec.Rollbacks = append(rec.Rollbacks, id) })
		}
	}
	if err == nil {
		outs, err = s.Action.Run(sctx, rc)
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
	}
	switch {
	case err == nil:
		rec.Status = drill.StatusPassed
	case runCtx.Err() != nil:
		rec.Status, rec.Error = runStatus(context.Cause(runCtx))
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
	switch {
	case errors.Is(cause, ErrDrillTimeout):
		return drill.StatusTimedOut, "the drill's timeout passed"
	case errors.As(cause, &se):
		return drill.StatusStopped, se.Error()
	}
	return drill.StatusInterrupted, "interrupted"
}

// check evaluates one hypothesis check and records it.
func (r *Runner) check(ctx context.Context, rc *drill.RunContext, d *drill.Drill, c *drill.Check, phase string) drill.CheckRecord {
	start := rc.Now()
	interval := c.Interval
	if interval == 0 {
		interval = d.PollInterval
	}
	res, err := drill.Poll(ctx, rc, c.Condition, c.Within, interval, c.Timeout, nil)
	end := rc.Now()
	rec := drill.CheckRecord{Phase: phase, Name: c.Name, Kind: c.Kind.Name(), Description: rc.Redact(c.Condition.Describe(rc)),
		OK: err == nil, Detail: rc.Redact(res.Obs.Detail), Checks: res.Polls, StartedAt: start.UTC(), EndedAt: drill.TimePtr(end),
		DurationSeconds: drill.Seconds(end.Sub(start))}
	switch {
	case err == nil:
	case ctx.Err() != nil:
		_, rec.Error = runStatus(context.Cause(ctx))
	case res.Err != nil:
		rec.Error = "could not check: " + rc.Redact(res.Err.Error())
	case c.Within > 0:
		rec.Error = fmt.Sprintf("did not hold within %s (%d checks)", c.Within, res.Polls)
	}
	r.mu.Lock()
	if phase == PhaseBefore {
		r.journal.Hypothesis.Before = append(r.journal.Hypothesis.Before, rec)
	} else {
		r.journal.Hypothesis.After = append(r.journal.Hypothesis.After, rec)
	}
	r.mu.Unlock()
	r.emit(Event{Kind: EventCheckDone, Phase: phase, Check: &rec})
	return rec
}

// firstStop evaluates the stop conditions once and returns the first that
// holds. One that cannot be evaluated is a notice, not a stop.
func (r *Runner) firstStop(ctx context.Context, rc *drill.RunContext, d *drill.Drill) *StopError {
	// One poll round: the alarm conditions share one DescribeAlarms call.
	round := drill.WithAlarmRound(ctx)
	for _, c := range d.StopConditions {
		timeout := c.Timeout
		if timeout == 0 {
			timeout = drill.DefaultCheckTimeout
		}
		cctx, cancel := context.WithTimeout(round, timeout)
		obs, err := c.Condition.Check(cctx, rc)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			msg := fmt.Sprintf("stop condition %q could not be evaluated: %s", c.Name, rc.Redact(err.Error()))
			r.mu.Lock()
			if r.stopNoticed == nil {
				r.stopNoticed = map[string]string{}
			}
			repeated := r.stopNoticed[c.Name] == msg
			r.stopNoticed[c.Name] = msg
			r.mu.Unlock()
			if !repeated {
				r.Notice(msg)
			}
			continue
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

// monitor evaluates the stop conditions every poll interval while the
// steps run, and cancels the run when one holds. It returns a function
// that stops it and waits for it.
func (r *Runner) monitor(ctx context.Context, rc *drill.RunContext, d *drill.Drill, cancel context.CancelCauseFunc) func() {
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
			if se := r.firstStop(mctx, rc, d); se != nil {
				cancel(se)
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
	switch {
	case err == nil:
		rec.Status = drill.StatusOK
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
// times within ctx (the rollback's timeout).
func undoWithRetry(ctx context.Context, rc *drill.RunContext, rb drill.Rollback) (detail string, attempts int, err error) {
	for attempts < rollbackAttempts {
		attempts++
		detail, err = rb.Undo(ctx, rc)
		if err == nil || ctx.Err() != nil {
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
