package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/kinds"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
)

// ActionRecover is the audit action of `drill recover`.
const ActionRecover = "drill.recover"

// ErrJournalLocked reports a journal whose run (or recovery) is alive.
var ErrJournalLocked = errors.New("journal is locked by a live process")

// LockPath is the lock file of a journal: held by `drill run --journal`
// for as long as the run lives, and by `drill recover` while it recovers.
func LockPath(journal string) string { return journal + ".lock" }

// Pending returns the rollbacks of j that did not succeed (pending,
// running, failed or abandoned), in the order they must run: the reverse
// of registration.
func Pending(j *drill.Journal) []int {
	var out []int
	for i := len(j.Rollbacks) - 1; i >= 0; i-- {
		if j.Rollbacks[i].Status != drill.StatusOK {
			out = append(out, i)
		}
	}
	return out
}

// AuditTrail reads the audit records recovery trusts; *audit.Log
// implements it.
type AuditTrail interface {
	List(ctx context.Context, q audit.Query) (audit.Listing, error)
}

var _ AuditTrail = (*audit.Log)(nil)

// Recovery runs the rollbacks a dead run left pending.
type Recovery struct {
	// Deps are the journal's context's (its store, audit log); Actor
	// is who recovers.
	Deps *runtime.Deps
	// Trail reads the audit log of the journal's store: what the run
	// recorded doing, which recovery acts on (the journal only says where
	// to look).
	Trail AuditTrail
	// AllowNoExpiry lets a rollback restore an override that never
	// expires (recover's --yes).
	AllowNoExpiry bool
	// RollbackTimeout bounds each rollback; zero means the default.
	RollbackTimeout time.Duration
	// Log receives one line per rollback (may be nil).
	Log func(string)
	// Notifier announces the recovery (drill.recovered) after its audit
	// record; nil announces nothing.
	Notifier notify.Notifier
}

// DisagreementError reports a journal whose claims the audit trail
// contradicts: recovery wrote nothing. Lines name each disagreement.
type DisagreementError struct {
	RunID string
	Lines []string
}

func (e *DisagreementError) Error() string {
	return fmt.Sprintf("the journal disagrees with the audit trail of run %s in %d place(s): %s", e.RunID, len(e.Lines), strings.Join(e.Lines, "; "))
}

// trailSkew is how far before the journal's started_at recovery reads the
// run's audit records: the clocks of the run and its store's records are
// the same process's, so this is only a margin.
const trailSkew = 5 * time.Minute

// plan rebuilds every pending rollback from the audit trail. It returns
// the rollbacks (nil where one cannot be rebuilt, with its error), or a
// *DisagreementError when the journal's claims disagree with the trail.
func (rv *Recovery) plan(ctx context.Context, j *drill.Journal, pending []int) ([]runtime.Rollback, []error, error) {
	if rv.Trail == nil {
		return nil, nil, errors.New("recovery needs the audit log of the journal's store")
	}
	running := map[string]bool{}
	for _, s := range j.Steps {
		running[s.ID] = s.Status == drill.StatusRunning
	}
	rbs := make([]runtime.Rollback, len(pending))
	errs := make([]error, len(pending))
	trails := map[string][]audit.Record{}
	var lines []string
	for k, i := range pending {
		r := j.Rollbacks[i]
		in := kinds.RecoverInput{Record: r, RunID: j.RunID, Actor: j.Actor, StepRunning: running[r.Step], AllowNoExpiry: rv.AllowNoExpiry}
		if kinds.NeedsTrail(r) {
			var subject string
			if r.Lever.Kind == drill.LeverOverride {
				subject = breaker.OverrideKey(r.Lever.Dependency)
			} else {
				subject = ratelimit.Key(r.Lever.Client)
			}
			t, ok := trails[subject]
			if !ok {
				// Every writer's records: a change is the run's only when
				// every record of it is (kinds.RecoverRollback).
				l, err := rv.Trail.List(ctx, audit.Query{Subject: subject, Since: j.StartedAt.Add(-trailSkew)})
				if err != nil {
					return nil, nil, fmt.Errorf("read the audit trail of run %s on %s: %w", j.RunID, subject, err)
				}
				t = l.Records
				trails[subject] = t
			}
			in.Trail = t
		}
		rb, dis, err := kinds.RecoverRollback(in)
		lines = append(lines, dis...)
		rbs[k], errs[k] = rb, err
	}
	if len(lines) > 0 {
		return nil, nil, &DisagreementError{RunID: j.RunID, Lines: lines}
	}
	return rbs, errs, nil
}

// Run runs every pending rollback of j in reverse order of registration.
// The journal says which levers to look at; what to do comes from the
// levers' items and the audit trail: an override is acted on only while
// its item carries the write_id of one of the run's changes, and a restore
// takes its values from the run's own record of that change
// ([kinds.RecoverRollback]), through the rules of any new override; a
// bucket from the run's records of it. A journal
// whose claims the trail contradicts is refused (*DisagreementError) before
// anything is written. Otherwise each outcome, and the recovery, is
// recorded in j and in the audit log, and the recovery record returned.
// It does nothing (and returns nil, nil) when nothing is pending.
func (rv *Recovery) Run(ctx context.Context, j *drill.Journal) (*drill.RecoveryRecord, error) {
	pending := Pending(j)
	if len(pending) == 0 {
		return nil, nil
	}
	rbs, buildErrs, err := rv.plan(ctx, j, pending)
	if err != nil {
		return nil, err
	}
	// Every audit record the recovery writes is named in the journal.
	auditStart := len(j.Audit)
	own := *rv.Deps
	if own.Audit != nil {
		own.Audit = newJournalingAudit(own.Audit, func(a drill.AuditRef) { j.Audit = append(j.Audit, a) })
	}
	svc := &own
	timeout := rv.RollbackTimeout
	if timeout <= 0 {
		timeout = drill.DefaultRollbackTimeout
	}
	d := &drill.Drill{Name: j.Drill.Name, File: j.Drill.File, Timeout: time.Duration(j.TimeoutSeconds * float64(time.Second)), RollbackTimeout: timeout}
	rc := runtime.NewRecoveryContext(d, j, svc)
	rec := &drill.RecoveryRecord{At: rc.Now().UTC(), Actor: svc.Actor, Rollbacks: []string{}, OK: true}
	failed := 0
	for k, i := range pending {
		r := &j.Rollbacks[i]
		rec.Rollbacks = append(rec.Rollbacks, r.ID)
		start := rc.Now()
		r.StartedAt, r.RecoveredAt, r.Error, r.Detail = drill.TimePtr(start), drill.TimePtr(start), "", ""
		rb, err := rbs[k], buildErrs[k]
		var detail string
		attempts := 0
		if err == nil {
			rctx, cancel := context.WithTimeout(ctx, timeout)
			rc.SetCurrentStep(r.Step)
			detail, attempts, err = undoWithRetry(rctx, rc, rb)
			cancel()
		}
		end := rc.Now()
		r.Attempts += attempts
		r.EndedAt, r.DurationSeconds, r.Detail = drill.TimePtr(end), drill.Seconds(end.Sub(start)), rc.Redact(detail)
		mark := "ok"
		r.Status = drill.StatusOK
		if err != nil {
			r.Status, r.Error, rec.OK, mark = drill.StatusFailed, rc.Redact(err.Error()), false, "FAILED"
			failed++
		}
		if rv.Log != nil {
			rv.Log(fmt.Sprintf("%-6s %s %s: %s", mark, r.ID, r.Subject, cmp.Or(r.Error, r.Detail)))
		}
	}
	j.RollbacksOK = rollbacksOK(j)
	if j.Outcome == drill.OutcomeRunning {
		j.Outcome = drill.OutcomeKilled
		j.Reason = "the run's process died before it finished; drill recover ran its rollbacks"
	}
	if j.Outcome == drill.OutcomeKilled {
		j.ExitCode = exitcode.Of(outcome(j, nil))
	}
	rec.Detail = fmt.Sprintf("%d rollback(s) run, %d ok", len(rec.Rollbacks), len(rec.Rollbacks)-failed)
	outcome := "ok"
	if !rec.OK {
		outcome = "failed"
	}
	var auditIDs []string
	if svc.Audit != nil {
		arec, err := svc.Audit.Append(ctx, audit.Entry{Actor: svc.Actor, Action: ActionRecover, Subject: "drill#" + j.Drill.Name,
			Reason: rc.Reason(rec.Detail + " (" + strings.Join(rec.Rollbacks, ", ") + ")"), Outcome: outcome,
			RunID: j.RunID, After: map[string]any{"run_id": j.RunID, "rollbacks": rec.Rollbacks, "ok": rec.OK}})
		if err != nil {
			rec.OK = false
			rec.Detail += "; the recovery's audit record could not be written: " + err.Error()
		} else {
			auditIDs = append(auditIDs, arec.ID)
		}
	}
	j.Recoveries = append(j.Recoveries, *rec)
	// The journal is now written by this koshactl, with what it records.
	j.Version = max(j.Version, drill.JournalVersion)
	if rv.Notifier != nil {
		var recovered []drill.RollbackRecord
		for _, i := range pending {
			recovered = append(recovered, j.Rollbacks[i])
		}
		// The records the recovery's rollbacks wrote, then its own.
		var ids []string
		for _, a := range j.Audit[min(auditStart, len(j.Audit)):] {
			ids = append(ids, a.ID)
		}
		rv.Notifier.Notify(ctx, notify.Event{Action: notify.ActionDrillRecovered, Source: notify.SourceDrill, Context: svc.ContextName,
			Actor: svc.Actor, Reason: rc.Reason(""), Outcome: outcome, Detail: rc.Redact(rec.Detail),
			Drill: &notify.Drill{Name: j.Drill.Name, RunID: j.RunID}, Levers: drillLevers(recovered), AuditIDs: append(ids, auditIDs...)})
	}
	return rec, nil
}
