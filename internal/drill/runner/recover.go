package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/kinds"
	"github.com/kosha-platform/koshactl/internal/notify"
)

// ActionRecover is the audit action of `drill recover`.
const ActionRecover = "drill.recover"

// OutcomeKilled: the run's process died before it finished (SIGKILL, a
// lost machine); `drill recover` found it so.
const OutcomeKilled = "killed"

// ErrJournalLocked reports a journal whose run (or recovery) is alive.
var ErrJournalLocked = errors.New("journal is locked by a live process")

// LockPath is the lock file of a journal: held by `drill run --journal`
// for as long as the run lives, and by `drill recover` while it recovers.
func LockPath(journal string) string { return journal + ".lock" }

// LockJournal takes journal's lock without waiting; ErrJournalLocked means
// a live process holds it. The returned function releases it.
func LockJournal(journal string) (func(), error) {
	return lockFile(LockPath(journal))
}

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

// Recovery runs the rollbacks a dead run left pending.
type Recovery struct {
	// Deps are the journal's context's (its store, audit log); Actor
	// is who recovers.
	Deps *drill.Deps
	// RollbackTimeout bounds each rollback; zero means the default.
	RollbackTimeout time.Duration
	// Log receives one line per rollback (may be nil).
	Log func(string)
	// Notifier announces the recovery (drill.recovered) after its audit
	// record; nil announces nothing.
	Notifier notify.Notifier
}

// Run runs every pending rollback of j in reverse order of registration,
// with the run's rules (an override someone else moved since is left
// alone and reported), records each outcome and the recovery in j and in
// the audit log, and returns the recovery record. It does nothing (and
// returns nil) when nothing is pending.
func (rv *Recovery) Run(ctx context.Context, j *drill.Journal) *drill.RecoveryRecord {
	pending := Pending(j)
	if len(pending) == 0 {
		return nil
	}
	svc := rv.Deps
	timeout := rv.RollbackTimeout
	if timeout <= 0 {
		timeout = drill.DefaultRollbackTimeout
	}
	d := &drill.Drill{Name: j.Drill.Name, File: j.Drill.File, Timeout: time.Duration(j.TimeoutSeconds * float64(time.Second)), RollbackTimeout: timeout}
	rc := drill.NewRecoveryContext(d, j, svc)
	rec := &drill.RecoveryRecord{At: rc.Now().UTC(), Actor: svc.Actor, Rollbacks: []string{}, OK: true}
	for _, i := range pending {
		r := &j.Rollbacks[i]
		rec.Rollbacks = append(rec.Rollbacks, r.ID)
		start := rc.Now()
		r.StartedAt, r.RecoveredAt, r.Error, r.Detail = drill.TimePtr(start), drill.TimePtr(start), "", ""
		rb, err := kinds.RollbackFromRecord(*r)
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
		if err != nil {
			r.Status, r.Error, rec.OK = drill.StatusFailed, rc.Redact(err.Error()), false
		} else {
			r.Status = drill.StatusOK
		}
		if rv.Log != nil {
			line := fmt.Sprintf("%-6s %s %s: %s", map[bool]string{true: "ok", false: "FAILED"}[err == nil], r.ID, r.Subject, firstNonEmpty(r.Error, r.Detail))
			rv.Log(line)
		}
	}
	j.RollbacksOK = !slices.ContainsFunc(j.Rollbacks, func(r drill.RollbackRecord) bool { return r.Status != drill.StatusOK })
	if j.Outcome == drill.OutcomeRunning {
		j.Outcome = OutcomeKilled
		j.Reason = "the run's process died before it finished; drill recover ran its rollbacks"
		j.ExitCode = drill.ExitRollbackFailed
	}
	if j.RollbacksOK && j.ExitCode == drill.ExitRollbackFailed && j.Outcome == OutcomeKilled {
		j.ExitCode = drill.ExitFailed
	}
	n := len(rec.Rollbacks)
	rec.Detail = fmt.Sprintf("%d rollback(s) run, %d ok", n, n-countFailed(j, rec.Rollbacks))
	outcome := "ok"
	if !rec.OK {
		outcome = "failed"
	}
	var auditIDs []string
	if svc.Audit != nil {
		arec, err := svc.Audit.Append(ctx, audit.Entry{Actor: svc.Actor, Action: ActionRecover, Subject: "drill#" + j.Drill.Name,
			Reason: rc.Reason(rec.Detail + " (" + strings.Join(rec.Rollbacks, ", ") + ")"), Outcome: outcome,
			After: map[string]any{"run_id": j.RunID, "rollbacks": rec.Rollbacks, "ok": rec.OK}})
		if err != nil {
			rec.OK = false
			rec.Detail += "; the recovery's audit record could not be written: " + err.Error()
		} else {
			auditIDs = append(auditIDs, arec.ID)
		}
	}
	j.Recoveries = append(j.Recoveries, *rec)
	if rv.Notifier != nil {
		var recovered []drill.RollbackRecord
		for _, i := range pending {
			recovered = append(recovered, j.Rollbacks[i])
		}
		rv.Notifier.Notify(ctx, notify.Event{Action: notify.ActionDrillRecovered, Source: notify.SourceDrill, Context: svc.ContextName,
			Actor: svc.Actor, Reason: rc.Reason(""), Outcome: outcome, Detail: rc.Redact(rec.Detail),
			Drill: &notify.Drill{Name: j.Drill.Name, RunID: j.RunID}, Levers: drillLevers(recovered), AuditIDs: auditIDs})
	}
	return rec
}

func countFailed(j *drill.Journal, ids []string) int {
	n := 0
	for _, r := range j.Rollbacks {
		if slices.Contains(ids, r.ID) && r.Status != drill.StatusOK {
			n++
		}
	}
	return n
}
