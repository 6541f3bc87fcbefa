package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/fsutil"
)

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
			if j, rerr := drill.ReadJournal(s.Journal); rerr == nil {
				holder = j.Runner
			}
		}
		return nil, "", &StillGoingError{Holder: holder, Lock: locked.Lock}
	}
	if err != nil {
		return nil, "", fmt.Errorf("journal %s: cannot take its lock: %w; nothing was done", s.Journal, err)
	}
	s.lock = lock
	if j, err = drill.ReadJournal(s.Journal); err != nil {
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
