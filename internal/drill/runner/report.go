package runner

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/fsutil"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// LiveLog writes a run's progress as it happens, one line per event. Off a
// terminal every line starts with an RFC 3339 time, for CI logs; on a
// terminal lines start with the time since the run began, and statuses are
// colored when Color is set. Every value from the drill file or the run
// (names, descriptions, step outputs, errors) is rendered with
// [textsafe.Line], so W may be the raw terminal the colors need.
type LiveLog struct {
	W     io.Writer
	TTY   bool
	Color bool

	start time.Time
}

var _ Reporter = (*LiveLog)(nil)

const (
	ansiReset  = "\x1b[0m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiDim    = "\x1b[2m"
	ansiBold   = "\x1b[1m"
)

func (l *LiveLog) paint(code, s string) string {
	s = textsafe.Line(s)
	if !l.Color {
		return s
	}
	return code + s + ansiReset
}

// mark renders a status as a short label: ok, FAIL, skip... (on a
// terminal a colored symbol).
func (l *LiveLog) mark(status string) string {
	color, symbol, label := ansiRed, "✗", "FAIL"
	switch status {
	case drill.StatusPassed, drill.StatusOK:
		color, symbol, label = ansiGreen, "✓", "ok  "
	case drill.StatusSkipped:
		color, symbol, label = ansiDim, "-", "skip"
	case drill.StatusAbandoned:
		symbol, label = "!", "ABND"
	case drill.StatusInterrupted, drill.StatusTimedOut, drill.StatusStopped, drill.StatusGuardLost:
		color, symbol, label = ansiYellow, "■", "STOP"
	}
	if l.TTY {
		return l.paint(color, symbol)
	}
	return label
}

func (l *LiveLog) line(t time.Time, format string, args ...any) {
	prefix := t.UTC().Format("2006-01-02T15:04:05.000Z")
	if l.TTY {
		prefix = l.paint(ansiDim, fmt.Sprintf("%7s", "+"+elapsedText(t.Sub(l.start))))
	}
	fmt.Fprintf(l.W, "%s %s\n", prefix, fmt.Sprintf(format, args...))
}

// elapsedText is a log line's time since the run started: tenths of a
// second under a minute, whole seconds above.
func elapsedText(d time.Duration) string {
	d = max(d, 0)
	if d < time.Minute {
		return human.Duration(d.Round(100 * time.Millisecond))
	}
	return human.Duration(d.Truncate(time.Second))
}

func fmtSeconds(s float64) string {
	return human.Duration(drill.DisplayPrecision(time.Duration(s * float64(time.Second))))
}

// Report implements Reporter.
func (l *LiveLog) Report(ev Event) {
	j := ev.Journal
	switch ev.Kind {
	case EventRunStarted:
		l.start = ev.Time
		where := fmt.Sprintf("context \"%s\"", textsafe.Line(j.Context))
		if j.Store != "" {
			where += " (" + textsafe.Line(j.Store) + ")"
		}
		l.line(ev.Time, "%s %s: run %s on %s; timeout %s, deadline %s", l.paint(ansiBold, "drill"), textsafe.Line(j.Drill.Name), textsafe.Line(j.RunID), where,
			human.Duration(time.Duration(j.TimeoutSeconds*float64(time.Second))), j.Deadline.Format(time.RFC3339))
	case EventPhase:
		l.line(ev.Time, "%s", l.paint(ansiBold, ev.Phase))
	case EventCheckDone:
		c := ev.Check
		detail := cmp.Or(c.Error, c.Detail)
		if c.Error != "" && c.Detail != "" {
			detail = c.Error + ": " + c.Detail
		}
		status := drill.StatusFailed
		if c.OK {
			status = drill.StatusPassed
		}
		l.line(ev.Time, "  %s %s: %s (%s)", l.mark(status), textsafe.Line(c.Label()), textsafe.OneLine(detail), fmtSeconds(c.DurationSeconds))
	case EventStepStarted:
		s := ev.Step
		l.line(ev.Time, "  [%d/%d] %s (%s): %s", ev.StepIndex, len(j.Steps), textsafe.Line(s.ID), textsafe.Line(s.Kind), textsafe.Line(s.Description))
	case EventRollbackRegistered:
		rb := ev.Rollback
		l.line(ev.Time, "        %s registered: %s", textsafe.Line(rb.ID), textsafe.Line(rb.Description))
	case EventNotice:
		indent := ""
		if ev.StepIndex > 0 {
			indent = "        "
		}
		l.line(ev.Time, "%s%s", indent, l.paint(ansiYellow, textsafe.OneLine(ev.Message)))
	case EventStepDone:
		s := ev.Step
		msg := fmt.Sprintf("  %s [%d/%d] %s %s in %s", l.mark(s.Status), ev.StepIndex, len(j.Steps), textsafe.Line(s.ID), textsafe.Line(s.Status), fmtSeconds(s.DurationSeconds))
		if t := cmp.Or(s.Error, s.Detail); t != "" {
			msg += ": " + textsafe.OneLine(t)
		}
		l.line(ev.Time, "%s", msg)
	case EventRollbackStarted:
	case EventRollbackDone:
		rb := ev.Rollback
		msg := fmt.Sprintf("  %s %s %s: ", l.mark(rb.Status), textsafe.Line(rb.ID), textsafe.Line(rb.Subject))
		switch rb.Status {
		case drill.StatusOK:
			msg += textsafe.OneLine(rb.Detail)
		default:
			msg += textsafe.Line(rb.Status) + ": " + textsafe.OneLine(rb.Error)
			if rb.ExpiresAt != nil {
				msg += "; it lapses on its own at " + rb.ExpiresAt.Format(time.RFC3339)
			}
		}
		if rb.Attempts > 1 {
			msg += fmt.Sprintf(" (%d attempts)", rb.Attempts)
		}
		if rb.StartedAt != nil {
			msg += fmt.Sprintf(" (%s)", fmtSeconds(rb.DurationSeconds))
		}
		l.line(ev.Time, "%s", msg)
	case EventRunFinished:
		l.line(ev.Time, "%s", Summary(j, l.Color))
	}
}

// Summary is the one-line verdict of a run: "PASSED in 31s: ...".
func Summary(j *drill.Journal, color bool) string {
	passed, total := 0, len(j.Steps)
	for _, s := range j.Steps {
		if s.Status == drill.StatusPassed {
			passed++
		}
	}
	verdict := textsafe.Line(strings.ToUpper(strings.ReplaceAll(j.Outcome, "_", " ")))
	code := ansiRed
	if j.Outcome == drill.OutcomePassed && j.RollbacksOK {
		code = ansiGreen
	}
	if color {
		verdict = code + ansiBold + verdict + ansiReset
	}
	s := fmt.Sprintf("%s in %s: %d/%d steps passed; %d/%d rollbacks ok", verdict, fmtSeconds(j.DurationSeconds), passed, total, okRollbacks(j), len(j.Rollbacks))
	if !j.RollbacksOK {
		s += " — SOME LEVERS WERE NOT RESTORED (see the rollbacks above; each lapses at its expiry)"
	}
	if j.Reason != "" && j.Outcome != drill.OutcomePassed && j.Reason != j.Outcome {
		s += "; " + textsafe.OneLine(j.Reason)
	}
	return s + fmt.Sprintf(" (exit %d)", j.ExitCode)
}

// JournalFile rewrites the JSON journal at Path after every significant
// event, atomically (write a temporary file, then rename), so even a run
// killed with SIGKILL leaves a journal naming every lever it pulled and
// when each expires.
type JournalFile struct {
	Path string

	mu  sync.Mutex
	err error
}

var _ Reporter = (*JournalFile)(nil)

// Report implements Reporter.
func (f *JournalFile) Report(ev Event) {
	if !slices.Contains([]EventKind{EventRunStarted, EventStepStarted, EventRollbackRegistered, EventStepDone, EventCheckDone, EventRollbackDone,
		EventRunFinished}, ev.Kind) {
		return
	}
	err := WriteJournal(f.Path, ev.Journal)
	f.mu.Lock()
	if f.err == nil {
		f.err = err
	}
	f.mu.Unlock()
}

// Err returns the first write error, if any.
func (f *JournalFile) Err() error { f.mu.Lock(); defer f.mu.Unlock(); return f.err }

// WriteJournal writes j as the JSON journal at path, atomically: drill
// recover reads it back, so it is only ever a regular file, replaced; nothing
// here can block.
func WriteJournal(path string, j *drill.Journal) error {
	b, err := json.MarshalIndent(j, "", "  ")
	if err == nil {
		err = fsutil.ReplaceFile(context.Background(), path, append(b, '\n'), 0o644)
	}
	if err != nil {
		return fmt.Errorf("write journal %s: %w", path, err)
	}
	return nil
}

// JUnitFile writes the JUnit XML report at Path when the run finishes,
// under fsutil's output policy: a regular file is replaced atomically, a
// named pipe or character device written in place (the write ends with
// Ctx), a link refused.
type JUnitFile struct {
	Path string
	// Ctx bounds a write to a pipe whose reader stalls (nil: never ends).
	Ctx context.Context
	err error
}

var _ Reporter = (*JUnitFile)(nil)

// Report implements Reporter.
func (f *JUnitFile) Report(ev Event) {
	if ev.Kind == EventRunFinished {
		f.err = writeJUnit(cmp.Or(f.Ctx, context.Background()), f.Path, ev.Journal)
	}
}

// writeJUnit writes j as JUnit XML at path.
func writeJUnit(ctx context.Context, path string, j *drill.Journal) error {
	b, err := JUnit(j)
	if err == nil {
		err = fsutil.WriteFile(ctx, path, b, 0o644)
	}
	if err != nil {
		return fmt.Errorf("write JUnit report %s: %w", path, err)
	}
	return nil
}

// Err returns the write error, if any.
func (f *JUnitFile) Err() error { return f.err }
