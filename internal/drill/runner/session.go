package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/fsutil"
	"github.com/kosha-platform/koshactl/internal/gameday"
)

// Session is one `drill run` as the command asks for it: a configured
// [Runner] (Deps, Notifier, the live log among its Reporters), the files
// the run writes and the signals that interrupt it. [Session.Lock] takes
// the journal's lock, [Session.Run] runs the drill with every reporter,
// [Session.Finish] writes the game-day report, [Session.Close] releases
// what the run held.
type Session struct {
	Runner *Runner
	// Journal, JUnit and Report are the files written ("": none). The
	// game-day report is Markdown for a .md name, HTML otherwise.
	Journal, JUnit, Report string
	// Signals, when set, interrupt the run: the first stops the steps
	// (as canceling the run's context does), the second is acknowledged,
	// the third abandons the remaining rollbacks. Once the run has ended,
	// any signal gives up a stalled report write at once.
	Signals <-chan os.Signal

	lock        *JournalLock
	interrupt   context.CancelFunc
	abandon     context.CancelFunc
	abandonCtx  context.Context
	stopSignals func()
	jf          *JournalFile
	ju          *JUnitFile
}

// Lock takes the journal's lock for the life of the run (drill recover
// refuses while it is held): [ErrJournalLocked] when a live process holds
// it. Without a journal there is nothing to lock.
func (s *Session) Lock() error {
	if s.Journal == "" {
		return nil
	}
	s.Runner.Process = ThisProcess("drill run", LockPath(s.Journal))
	lock, err := LockJournal(s.Journal, s.Runner.Process)
	s.lock = lock
	return err
}

// Run runs d and returns its journal and its outcome as an error of its
// kind (nil: it passed, every rollback ok), the command's; call
// [Session.Finish] after it, however it ended.
func (s *Session) Run(ctx context.Context, d *drill.Drill) (*drill.Journal, error) {
	r := s.Runner
	runCtx, interrupt := context.WithCancel(ctx)
	s.interrupt = interrupt
	s.abandonCtx, s.abandon = context.WithCancel(context.Background())
	// First of the reporters: the run's end is known before any report is
	// written, so a signal from then on gives up a stalled write at once.
	var finished atomic.Bool
	r.Reporters = append([]Reporter{runEnded{&finished}}, r.Reporters...)
	if s.Journal != "" {
		s.jf = &JournalFile{Path: s.Journal}
		r.Reporters = append(r.Reporters, s.jf)
	}
	if s.JUnit != "" {
		// A pipe's stalled reader holds the write until the operator insists.
		s.ju = &JUnitFile{Path: s.JUnit, Ctx: s.abandonCtx}
		r.Reporters = append(r.Reporters, s.ju)
	}
	r.RollbackContext = s.abandonCtx
	s.stopSignals = watchSignals(s.Signals, r, &finished, interrupt, s.abandon)
	j := r.Run(runCtx, d)
	finished.Store(true)
	return j, outcome(j, r.live.Load().refusal)
}

// Close stops watching the signals and releases the lock; call it once
// the reports are written (a signal must end their writes too).
func (s *Session) Close() {
	if s.stopSignals != nil {
		s.stopSignals()
		s.abandon()
		s.interrupt()
	}
	if s.lock != nil {
		s.lock.Release()
	}
}

// Finish writes the game-day report of j (however the run ended: an
// interrupted or failed run's report matters most) and returns the report
// files' errors.
func (s *Session) Finish(j *drill.Journal) error {
	var err error
	if s.jf != nil {
		err = s.jf.Err()
	}
	if s.ju != nil {
		err = errors.Join(err, s.ju.Err())
	}
	if s.Report != "" {
		var buf bytes.Buffer
		werr := gameday.Render(&buf, gameday.FormatFor(s.Report), gameday.Input{Journal: j})
		if werr == nil {
			werr = fsutil.WriteFile(s.abandonCtx, s.Report, buf.Bytes(), 0o644)
		}
		if werr != nil {
			err = errors.Join(err, fmt.Errorf("write report %s: %w", s.Report, werr))
		}
	}
	return err
}

// runEnded is the reporter that marks the run's end (EventRunFinished:
// every rollback has run) before the reporters after it write their files.
type runEnded struct{ finished *atomic.Bool }

func (e runEnded) Report(ev Event) {
	if ev.Kind == EventRunFinished {
		e.finished.Store(true)
	}
}

// watchSignals handles repeated signals during a run. The first interrupts
// the steps (main's signal context is canceled too); the second is
// acknowledged; the third abandons the remaining rollbacks. Once the run has
// ended (finished), any signal abandons at once: what is left is writing the
// reports, and a pipe whose reader stalls must not hold the command (nor is a
// notice sent: the runner's reporters may be the ones waiting). It returns a
// function that stops watching.
func watchSignals(sigs <-chan os.Signal, r *Runner, finished *atomic.Bool, interrupt, abandon context.CancelFunc) func() {
	if sigs == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		n := 0
		for {
			select {
			case <-done:
				return
			case s := <-sigs:
				if finished.Load() {
					interrupt()
					abandon()
					continue
				}
				n++
				switch n {
				case 1:
					r.Notice(fmt.Sprintf("received %s: stopping the steps and rolling back (send it twice more to abandon the rollback)", sigName(s)))
					interrupt()
				case 2:
					r.Notice(fmt.Sprintf("received %s again: the rollback goes on; send it once more to abandon the remaining rollbacks (their levers then lapse at their expiry)", sigName(s)))
				default:
					r.Notice(fmt.Sprintf("received %s a third time: abandoning the remaining rollbacks", sigName(s)))
					abandon()
				}
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

func sigName(s os.Signal) string {
	switch s {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}
