package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
	"github.com/kosha-platform/koshactl/internal/store"
)

// The rollback of a run: the stack of registered rollbacks, each undone
// with retries on a fresh context, the explicit rollback steps, and what
// the journal says of their status.

// Rollback retries: a rollback that fails (the store throttled, a write
// raced) is tried again within its own timeout.
const (
	rollbackAttempts = 3
	rollbackBackoff  = 250 * time.Millisecond
)

// abandoned is the error of a rollback the operator abandoned.
const abandoned = "abandoned: the operator stopped the rollback"

// push registers a rollback (before the step that needs it acts).
func (u *run) push(rb runtime.Rollback, step string, explicit bool) string {
	r, j, rc := u.jr, u.j, u.rc
	r.mu.Lock()
	id := fmt.Sprintf("rb-%d", len(j.Rollbacks)+1)
	j.Rollbacks = append(j.Rollbacks, drill.RollbackRecord{ID: id, Step: step, Description: rb.Describe(), Explicit: explicit,
		RegisteredAt: rc.Now().UTC(), Status: drill.StatusPending})
	r.rbs = append(r.rbs, rb)
	rec := &j.Rollbacks[len(j.Rollbacks)-1]
	r.addExpiry(rec, rb)
	r.mu.Unlock()
	r.emit(Event{Kind: EventRollbackRegistered, Rollback: rec})
	return id
}

// rollbackAll runs every registered rollback, last registered first.
func (u *run) rollbackAll() {
	u.jr.emit(Event{Kind: EventPhase, Phase: drill.PhaseRollback})
	for i := len(u.jr.rbs) - 1; i >= 0; i-- {
		u.rollback(i)
	}
}

// rollback runs the i-th registered rollback on a fresh context with its
// own timeout, retrying a failure while time is left.
func (u *run) rollback(i int) {
	r, parent, rc, d, j := u.jr, u.rbParent, u.rc, u.d, u.j
	r.mu.Lock()
	rec, rb := &j.Rollbacks[i], r.rbs[i]
	if parent.Err() != nil {
		rec.Status, rec.Error = drill.StatusAbandoned, abandoned
	} else {
		start := rc.Now()
		rec.Status, rec.StartedAt = drill.StatusRunning, drill.TimePtr(start)
		r.mu.Unlock()
		r.emit(Event{Kind: EventRollbackStarted, Rollback: rec})
		ctx, cancel := context.WithTimeout(parent, d.RollbackTimeout)
		defer cancel()
		rc.SetCurrentStep(rec.Step)
		detail, attempts, err := undoWithRetry(ctx, rc, rb)
		end := rc.Now()
		r.mu.Lock()
		rec.Attempts, rec.EndedAt, rec.DurationSeconds = attempts, drill.TimePtr(end), drill.Seconds(end.Sub(start))
		rec.Detail = detail
		// A lever change and its record are one write: a rollback restored
		// its lever (ok), or did not, or nobody can tell (failed, its error
		// says what to read).
		switch {
		case err == nil:
			rec.Status, rec.Error = drill.StatusOK, ""
		case parent.Err() != nil:
			rec.Status, rec.Error = drill.StatusAbandoned, abandoned
		case ctx.Err() != nil:
			rec.Status, rec.Error = drill.StatusFailed, fmt.Sprintf("did not finish within the rollback timeout (%s): %s", d.RollbackTimeout, err)
		default:
			rec.Status, rec.Error = drill.StatusFailed, err.Error()
		}
	}
	r.addExpiry(rec, rb)
	r.mu.Unlock()
	r.emit(Event{Kind: EventRollbackDone, Rollback: rec})
}

// undoWithRetry runs rb.Undo, retrying a failure up to rollbackAttempts
// times within ctx (the rollback's timeout); a change whose outcome is
// unknown (store.ErrOutcomeUnknown: the store could not be reached to
// settle it) ends it: a retry could find the lever restored and say
// "already", hiding that nobody knows what the first one did.
func undoWithRetry(ctx context.Context, rc *runtime.RunContext, rb runtime.Rollback) (detail string, attempts int, err error) {
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

// addExpiry records rb's subject and lever record as they are now, and
// when its lever lapses on its own (for rollbacks that did not succeed,
// the worst case).
func (r *runJournal) addExpiry(rec *drill.RollbackRecord, rb runtime.Rollback) {
	if t := rb.ExpiresAt(); !t.IsZero() {
		rec.ExpiresAt = drill.TimePtr(t)
	}
	rec.Subject = rb.Subject()
	if l := rb.LeverRecord(); l != nil {
		rec.Lever = l
	}
}

// explicitRollback runs a step from a rollback list.
type explicitRollback struct{ step *drill.Step }

func (e *explicitRollback) Subject() string { return e.step.Kind.Name() }

// ExpiresAt is zero: a rollback step's effect does not lapse on its own.
func (e *explicitRollback) ExpiresAt() time.Time { return time.Time{} }

func (e *explicitRollback) Describe() string {
	if e.step.Name != "" && e.step.Name != e.step.ID {
		return e.step.Name
	}
	return "run the " + e.step.Kind.Name() + " rollback"
}

func (e *explicitRollback) Undo(ctx context.Context, rc *runtime.RunContext) (string, error) {
	if e.step.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.step.Timeout)
		defer cancel()
	}
	out, err := runtime.ActionOf(e.step).Run(ctx, rc)
	detail := runtime.ActionOf(e.step).Describe(rc)
	if out != nil && out.Detail != "" {
		detail += ": " + out.Detail
	}
	return detail, err
}

func (e *explicitRollback) LeverRecord() *drill.LeverRecord {
	return &drill.LeverRecord{Kind: drill.LeverExplicit, Inverse: "run-step"}
}

// okRollbacks counts the rollbacks of j that restored their lever: the
// rollbacks are ok when all did. A lever change and its audit record are
// one write, so a rollback is ok, or it failed, or was abandoned: there is
// no lever restored without its record.
func okRollbacks(j *drill.Journal) int {
	n := 0
	for _, rb := range j.Rollbacks {
		if rb.Status == drill.StatusOK {
			n++
		}
	}
	return n
}
