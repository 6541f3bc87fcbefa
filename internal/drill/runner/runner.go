package runner

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

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
	Deps *runtime.Deps
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
	// Approvals, when set, is asked before any lever
	// (approval.Service.AuthorizeDrill): on a table whose policy needs
	// approvals for the drill's levers, the run needs Request, an approved
	// drill.run request for this file and context; without it the run is
	// refused, nothing done. Nil asks nothing.
	Approvals Authorizer
	// Identity is who runs, as the policy judges it (asked only when the
	// table has a policy); nil is Deps.Actor, unverified.
	Identity func(context.Context) (audit.Identity, error)
	// Request is the id of the approved drill.run request (--request).
	Request string
	// Freeze reads the fleet's freeze: the run does not start while it
	// holds, and stops at a guard poll once it does (freeze.go). Nil
	// checks no freeze.
	Freeze FreezeReader

	// live is the journal of the run in progress, for [Runner.Notice];
	// everything else a run holds lives in the run.
	live atomic.Pointer[runJournal]
}

// run is one run of a drill: what its phases share. Its journal is
// written through jr, which holds the lock.
type run struct {
	cfg      *Runner
	jr       *runJournal
	d        *drill.Drill
	rc       *runtime.RunContext
	j        *drill.Journal
	rbParent context.Context
	// cancel ends the steps with a cause (a stop, a lost guard).
	cancel context.CancelCauseFunc

	// guards follows each stop condition's failed evaluations in a row
	// (the monitor and the steps' loop both evaluate them), and the
	// freeze's failed reads under the nil key.
	guardMu sync.Mutex
	guards  map[*drill.Check]*runtime.GuardState
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
		return u.finish()
	}
	runCtx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	runCtx, cancelTimeout := context.WithTimeoutCause(runCtx, d.Timeout, ErrDrillTimeout)
	defer cancelTimeout()
	u.cancel = cancelRun
	if !u.authorize(runCtx) || !u.unfrozen(runCtx) || !u.preflight(runCtx) {
		return u.finish()
	}
	for _, s := range d.Rollbacks {
		u.push(&explicitRollback{step: s}, "drill", true)
	}
	beforeFailed := u.hypothesisBefore(runCtx)
	failed := beforeFailed
	announced := !failed && runCtx.Err() == nil
	if announced {
		u.announce(ctx, notify.ActionDrillStarted, "", fmt.Sprintf("%s, timeout %s", human.Count(int64(len(d.Steps)), "step"), human.Duration(d.Timeout)))
		failed = u.steps(runCtx)
	}
	u.verdict(runCtx, failed)
	cancelTimeout()
	if se := (*StopError)(nil); announced && errors.As(context.Cause(runCtx), &se) {
		u.announce(u.rbParent, notify.ActionDrillStopped, drill.OutcomeStopped, se.Error()+"; rolling back")
	}
	u.rollbackAll()
	u.hypothesisAfter(ctx, beforeFailed)
	j := u.finish()
	if announced {
		detail := fmt.Sprintf("exit %d; %d of %s ok", j.ExitCode, okRollbacks(j), human.Count(int64(len(j.Rollbacks)), "rollback"))
		if len(j.Rollbacks) == 0 {
			detail = fmt.Sprintf("exit %d; no rollbacks", j.ExitCode)
		}
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
	r, rc := u.jr, u.rc
	if u.cfg.Notifier == nil {
		return
	}
	r.mu.Lock()
	levers := drillLevers(u.j.Rollbacks)
	ids := make([]string, 0, len(u.j.Audit))
	for _, a := range u.j.Audit {
		ids = append(ids, a.ID)
	}
	r.mu.Unlock()
	u.cfg.Notifier.Notify(ctx, notify.Event{Action: action, Source: notify.SourceDrill, Context: rc.Deps.ContextName, Actor: rc.Deps.Actor,
		Reason: rc.Reason(""), Outcome: outcome, Detail: rc.Redact(detail), Drill: &notify.Drill{Name: rc.Drill.Name, RunID: rc.RunID},
		Levers: levers, AuditIDs: ids})
}

// start builds the journal and the run context, and announces the run.
func (r *Runner) start(d *drill.Drill) *run {
	svc, runID := cmp.Or(r.Deps, &runtime.Deps{}), cmp.Or(r.RunID, NewRunID())
	u := &run{cfg: r, d: d, rbParent: cmp.Or(r.RollbackContext, context.Background()), guards: map[*drill.Check]*runtime.GuardState{}}
	// The recorder first: the run context sends its notices there.
	jr := &runJournal{reporters: r.Reporters, clock: svc.Clock, stopNoticed: map[string]string{}}
	rc := runtime.NewRunContext(d, runID, svc, jr.stepNotice)
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
	u.rc, u.j, u.jr = rc, j, jr
	jr.rc, jr.journal = rc, j
	r.live.Store(jr)
	jr.emit(Event{Kind: EventRunStarted})
	return u
}

// resolve resolves the variables, the alarm requests and metrics_url; it
// reports false (the run is invalid) when one cannot be.
func (u *run) resolve(ctx context.Context) bool {
	r, d, rc, j := u.jr, u.d, u.rc, u.j
	invalid := func(reason string) bool {
		r.update(func() { j.Outcome, j.Reason = drill.OutcomeInvalid, reason })
		return false
	}
	if err := rc.ResolveVars(); err != nil {
		return invalid(err.Error())
	}
	if err := rc.CheckAlarms(ctx); err != nil {
		return invalid(err.Error())
	}
	if !d.MetricsURL.IsZero() {
		murl, err := d.MetricsURL.ExpandURL(rc)
		if err != nil {
			return invalid(fmt.Sprintf("metrics_url: %v", err))
		}
		own := *rc.Deps
		if own.HTTP == nil {
			own.HTTP = runtime.NewHTTPClient()
		}
		own.Gauges = runtime.PrometheusGauges(murl, own.HTTP, rc.Clock())
		rc.Deps = &own
		r.update(func() { j.Gauges = own.Gauges.Describe() })
	}
	// From here every breaker_state read and audit record is journaled.
	rc.Deps = r.recording(rc)
	return true
}

// finish stamps the end and the exit code (the [outcome]'s), and emits the
// last event.
func (u *run) finish() *drill.Journal {
	r, rc, j := u.jr, u.rc, u.j
	end := rc.Now()
	r.mu.Lock()
	j.EndedAt = drill.TimePtr(end)
	j.DurationSeconds = drill.Seconds(end.Sub(rc.Started()))
	if okRollbacks(j) < len(j.Rollbacks) {
		j.RollbacksOK = false
	}
	j.ExitCode = exitcode.Of(outcome(j, r.refusal))
	r.mu.Unlock()
	r.emit(Event{Kind: EventRunFinished})
	return j
}

// outcome is the outcome of j, a finished run, as an error of its kind of
// failure (nil: it passed, every rollback ok), which exitcode.Of maps to
// the run's exit code as root maps a command's error. A refused run or a
// lost guard is of the kind of what refused it (refusal).
func outcome(j *drill.Journal, refusal error) error {
	kind := exitcode.Kind(exitcode.Error)
	switch {
	case j.Outcome == drill.OutcomeInvalid:
		kind = exitcode.Usage
	case !j.RollbacksOK:
		kind = exitcode.Rollback
	case j.Outcome == drill.OutcomeInterrupted:
		kind = exitcode.Interrupted
	case refusal != nil:
		kind = exitcode.Kind(exitcode.Of(refusal))
	case j.Outcome == drill.OutcomePassed:
		return nil
	}
	what := j.Outcome
	if j.Outcome == drill.OutcomeRefused {
		// Nothing was done: the refusal itself, one line naming the guard,
		// the cause and the fix.
		what = textsafe.OneLine(j.Reason)
	}
	return exitcode.Errorf(kind, "drill %s %s", j.Drill.Name, what)
}

// NewRunID returns a random run id: 12 lowercase hex digits.
func NewRunID() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // it never fails: it crashes the program first
	return hex.EncodeToString(b[:])
}

// drillLevers are the levers a drill registered a rollback for (explicit
// rollback steps left out: they move nothing of their own), each said as
// its rollback left it: moved (rollbacks not run yet), rolled back, or not
// rolled back with when it lapses on its own.
func drillLevers(rbs []drill.RollbackRecord) []notify.Lever {
	var ls []notify.Lever
	for _, r := range rbs {
		if r.Explicit {
			continue
		}
		l := notify.Lever{Subject: r.Subject, ExpiresAt: r.ExpiresAt}
		switch r.Status {
		case drill.StatusOK:
			l.Change, l.ExpiresAt = "moved by the drill, rolled back", nil
		case drill.StatusPending, drill.StatusRunning:
			l.Change = "moved by the drill: " + r.Description
		default:
			l.Change = "NOT rolled back (" + r.Status + "): " + r.Error
		}
		ls = append(ls, l)
	}
	return ls
}
