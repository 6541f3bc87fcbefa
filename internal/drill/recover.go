package drill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/fsutil"
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

// maxJournalSize bounds the journal file read.
const maxJournalSize = 64 << 20

// ReadJournal reads a journal file.
func ReadJournal(path string) (*Journal, error) {
	// A pipe or device is refused at once: it could block forever, and
	// only a regular file is a journal a run wrote.
	b, _, err := fsutil.ReadRegular(path, maxJournalSize)
	if err != nil {
		return nil, fmt.Errorf("read journal: %w", unwrapPath(err))
	}
	var j Journal
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, fmt.Errorf("%s is not a drill journal: %v", path, err)
	}
	if j.Kind != "DrillRun" || j.RunID == "" || j.Drill.Name == "" {
		return nil, fmt.Errorf("%s is not a drill journal (kind %q)", path, j.Kind)
	}
	return &j, nil
}

// Pending returns the rollbacks of j that did not succeed (pending,
// running, failed or abandoned), in the order they must run: the reverse
// of registration.
func Pending(j *Journal) []int {
	var out []int
	for i := len(j.Rollbacks) - 1; i >= 0; i-- {
		if j.Rollbacks[i].Status != StatusOK {
			out = append(out, i)
		}
	}
	return out
}

// Recovery runs the rollbacks a dead run left pending.
type Recovery struct {
	// Deps are the journal's context's (its store, audit log); Actor
	// is who recovers.
	Deps *Deps
	// RollbackTimeout bounds each rollback; zero means the default.
	RollbackTimeout time.Duration
	// Log receives one line per rollback (may be nil).
	Log func(string)
}

// Run runs every pending rollback of j in reverse order of registration,
// with the run's rules (an override someone else moved since is left
// alone and reported), records each outcome and the recovery in j and in
// the audit log, and returns the recovery record. It does nothing (and
// returns nil) when nothing is pending.
func (rv *Recovery) Run(ctx context.Context, j *Journal) *RecoveryRecord {
	pending := Pending(j)
	if len(pending) == 0 {
		return nil
	}
	svc := rv.Deps
	timeout := rv.RollbackTimeout
	if timeout <= 0 {
		timeout = DefaultRollbackTimeout
	}
	d := &Drill{Name: j.Drill.Name, File: j.Drill.File, Timeout: time.Duration(j.TimeoutSeconds * float64(time.Second)), RollbackTimeout: timeout}
	rc := newRunContext(d, j.RunID, svc, nil)
	rc.started, rc.deadline = j.StartedAt, j.Deadline
	rc.actor, rc.recoveredBy = j.Actor, svc.Actor
	rec := &RecoveryRecord{At: rc.Now().UTC(), Actor: svc.Actor, Rollbacks: []string{}, OK: true}
	for _, i := range pending {
		r := &j.Rollbacks[i]
		rec.Rollbacks = append(rec.Rollbacks, r.ID)
		start := rc.Now()
		r.StartedAt, r.RecoveredAt, r.Error, r.Detail = timePtr(start), timePtr(start), "", ""
		rb, err := rollbackFromRecord(*r)
		var detail string
		attempts := 0
		if err == nil {
			rctx, cancel := context.WithTimeout(ctx, timeout)
			rc.setCurrentStep(r.Step)
			detail, attempts, err = undoWithRetry(rctx, rc, rb)
			cancel()
		}
		end := rc.Now()
		r.Attempts += attempts
		r.EndedAt, r.DurationSeconds, r.Detail = timePtr(end), seconds(end.Sub(start)), rc.Redact(detail)
		if err != nil {
			r.Status, r.Error, rec.OK = StatusFailed, rc.Redact(err.Error()), false
		} else {
			r.Status = StatusOK
		}
		if rv.Log != nil {
			line := fmt.Sprintf("%-6s %s %s: %s", map[bool]string{true: "ok", false: "FAILED"}[err == nil], r.ID, r.Subject, firstNonEmpty(r.Error, r.Detail))
			rv.Log(line)
		}
	}
	j.RollbacksOK = !slices.ContainsFunc(j.Rollbacks, func(r RollbackRecord) bool { return r.Status != StatusOK })
	if j.Outcome == OutcomeRunning {
		j.Outcome = OutcomeKilled
		j.Reason = "the run's process died before it finished; drill recover ran its rollbacks"
		j.ExitCode = ExitRollbackFailed
	}
	if j.RollbacksOK && j.ExitCode == ExitRollbackFailed && j.Outcome == OutcomeKilled {
		j.ExitCode = ExitFailed
	}
	n := len(rec.Rollbacks)
	rec.Detail = fmt.Sprintf("%d rollback(s) run, %d ok", n, n-countFailed(j, rec.Rollbacks))
	if svc.Audit != nil {
		outcome := "ok"
		if !rec.OK {
			outcome = "failed"
		}
		_, err := svc.Audit.Append(ctx, audit.Entry{Actor: svc.Actor, Action: ActionRecover, Subject: "drill#" + j.Drill.Name,
			Reason: rc.Reason(rec.Detail + " (" + strings.Join(rec.Rollbacks, ", ") + ")"), Outcome: outcome,
			After: map[string]any{"run_id": j.RunID, "rollbacks": rec.Rollbacks, "ok": rec.OK}})
		if err != nil {
			rec.OK = false
			rec.Detail += "; the recovery's audit record could not be written: " + err.Error()
		}
	}
	j.Recoveries = append(j.Recoveries, *rec)
	return rec
}

func countFailed(j *Journal, ids []string) int {
	n := 0
	for _, r := range j.Rollbacks {
		if slices.Contains(ids, r.ID) && r.Status != StatusOK {
			n++
		}
	}
	return n
}
