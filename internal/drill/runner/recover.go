package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/kinds"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/fsutil"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/notify"
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
	return fmt.Sprintf("the journal disagrees with the audit trail of run %s in %s: %s", e.RunID, human.Count(int64(len(e.Lines)), "place"), strings.Join(e.Lines, "; "))
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
			subject := kinds.LeverSubject(r.Lever)
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
	timeout := cmp.Or(max(rv.RollbackTimeout, 0), drill.DefaultRollbackTimeout)
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
	j.RollbacksOK = okRollbacks(j) == len(j.Rollbacks)
	if j.Outcome == drill.OutcomeRunning {
		j.Outcome = drill.OutcomeKilled
		j.Reason = "the run's process died before it finished; drill recover ran its rollbacks"
	}
	if j.Outcome == drill.OutcomeKilled {
		j.ExitCode = exitcode.Of(outcome(j, nil))
	}
	rec.Detail = fmt.Sprintf("%s run, %d ok", human.Count(int64(len(rec.Rollbacks)), "rollback"), len(rec.Rollbacks)-failed)
	outcome := "ok"
	if !rec.OK {
		outcome = "failed"
	}
	if svc.Audit != nil {
		_, err := svc.Audit.Append(ctx, audit.Entry{Actor: svc.Actor, Action: ActionRecover, Subject: "drill#" + j.Drill.Name,
			Reason: rc.Reason(rec.Detail + " (" + strings.Join(rec.Rollbacks, ", ") + ")"), Outcome: outcome,
			RunID: j.RunID, After: map[string]any{"run_id": j.RunID, "rollbacks": rec.Rollbacks, "ok": rec.OK}})
		if err != nil {
			rec.OK = false
			rec.Detail += "; the recovery's audit record could not be written: " + err.Error()
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
		// The records the recovery's rollbacks wrote, then its own (all
		// named in the journal as they were written).
		var ids []string
		for _, a := range j.Audit[min(auditStart, len(j.Audit)):] {
			ids = append(ids, a.ID)
		}
		rv.Notifier.Notify(ctx, notify.Event{Action: notify.ActionDrillRecovered, Source: notify.SourceDrill, Context: svc.ContextName,
			Actor: svc.Actor, Reason: rc.Reason(""), Outcome: outcome, Detail: rc.Redact(rec.Detail),
			Drill: &notify.Drill{Name: j.Drill.Name, RunID: j.RunID}, Levers: drillLevers(recovered), AuditIDs: ids})
	}
	return rec, nil
}

// RecoverSession is one `drill recover` as the command asks for it: the
// journal of a run that died and the JUnit file to write ("": none).
// [RecoverSession.Open] takes the journal's lock and shows its run dead,
// [RecoverSession.Target] checks the context and store the recovery acts
// on, [RecoverSession.Finish] writes the recovery back, [RecoverSession.Close]
// releases the lock.
type RecoverSession struct {
	Journal, JUnit string

	lock *JournalLock
}

// StillGoingError is a live process holding a journal: its lock is held,
// or the run's own process is alive although the lock was free.
type StillGoingError struct {
	// Holder is the live process (nil when the lock holder wrote nothing
	// readable and the journal names no process).
	Holder *drill.RunnerRecord
	// Lock is the journal's lock file; LockFree says it was free.
	Lock     string
	LockFree bool
}

func (e *StillGoingError) Error() string {
	what := "a run is still going: "
	if e.Holder == nil {
		what += "a live process holds " + e.Lock
	} else {
		if e.Holder.Command == "drill recover" {
			what = "a drill recover is still going: "
		}
		q := *e.Holder
		q.Command = ""
		what += DescribeProcess(q)
	}
	if e.LockFree {
		what += fmt.Sprintf(", although its lock %s was free (a file system that does not honor flock?)", e.Lock)
	}
	return what + ": it rolls back itself; interrupt it (SIGINT) rather than recover it; nothing was done"
}

// Open takes the journal's lock and reads the journal; with rollbacks
// pending it checks the run's own process too (by pid and start time), so
// that a file system that does not honor flock never lets recover act
// under a live run. note says what that check found when the run is not
// alive ("the lock is stale: ..."). A live process is a
// [*StillGoingError]; any other error means the journal cannot be used.
// Nothing is written either way.
func (s *RecoverSession) Open() (j *drill.Journal, note string, err error) {
	lock, err := LockJournal(s.Journal, ThisProcess("drill recover", LockPath(s.Journal)))
	if locked := (*LockedError)(nil); errors.As(err, &locked) {
		holder := locked.Holder
		if holder == nil {
			if j, rerr := drill.StreamJournal(s.Journal, nil); rerr == nil {
				holder = j.Runner
			}
		}
		return nil, "", &StillGoingError{Holder: holder, Lock: locked.Lock}
	}
	if err != nil {
		return nil, "", fmt.Errorf("journal %s: cannot take its lock: %w; nothing was done", s.Journal, err)
	}
	s.lock = lock
	if j, err = drill.StreamJournal(s.Journal, nil); err != nil {
		return nil, "", fmt.Errorf("%w; nothing was done", err)
	}
	// The recovery is written back to the journal: one that cannot be (a
	// link, which is read through but never written through) is refused
	// before any lever is touched, not after.
	if err := fsutil.CheckOutput(s.Journal, false); err != nil {
		return nil, "", fmt.Errorf("journal %s: %w; nothing was done", s.Journal, err)
	}
	if j.Runner == nil {
		return nil, "", fmt.Errorf("journal %s does not say which process ran the drill (written by an older koshactl): it cannot be shown dead; restore its levers by hand (each lapses at its expires_at)", s.Journal)
	}
	if len(Pending(j)) == 0 {
		return j, "", nil
	}
	p := DescribeProcess(*j.Runner)
	switch live, why := CheckProcess(*j.Runner); live {
	case LivenessAlive:
		return nil, "", &StillGoingError{Holder: j.Runner, Lock: LockPath(s.Journal), LockFree: true}
	case LivenessGone:
		note = fmt.Sprintf("the lock is stale: pid %d is gone (%s)", j.Runner.PID, p)
	case LivenessReused:
		note = fmt.Sprintf("the lock is stale: pid %d is gone (%s; the pid now belongs to a process started at another time)", j.Runner.PID, p)
	default:
		note = fmt.Sprintf("note: whether the run (%s) is alive cannot be told from here: %v; its lock here is free", p, why)
	}
	return j, note, nil
}

// Target checks where the recovery acts: on the journal's context
// (selected, when not "", must be it) and on the store the drill acted on
// (store, that context's store now). It returns the context to use.
func (s *RecoverSession) Target(j *drill.Journal, selected string) (string, error) {
	if selected != "" && selected != j.Context {
		return "", fmt.Errorf("journal %s is of context %q, but --context (or $KOSHACTL_CONTEXT) selects %q: recover acts on the journal's context; nothing was done", s.Journal, j.Context, selected)
	}
	return j.Context, nil
}

// CheckStore refuses a context whose store (its description) is not the
// journal's.
func (s *RecoverSession) CheckStore(j *drill.Journal, context, store string) error {
	if store != j.Store {
		return fmt.Errorf("journal %s was written against %s, but context %q now uses %s: recover only on the store the drill acted on; nothing was done", s.Journal, j.Store, context, store)
	}
	return nil
}

// Finish writes j, with the recovery, back to the journal, and as JUnit
// XML when asked.
func (s *RecoverSession) Finish(ctx context.Context, j *drill.Journal) error {
	err := WriteJournal(s.Journal, j)
	if s.JUnit != "" {
		err = errors.Join(err, writeJUnit(ctx, s.JUnit, j))
	}
	return err
}

// Close releases the journal's lock.
func (s *RecoverSession) Close() {
	if s.lock != nil {
		s.lock.Release()
	}
}
