// Package levertail is the end `breaker force-open` and `breaker clear`
// share once their change is made (or refused): the result printed (a
// document, or a table's lines and the confirmed note), the sending of the
// notification the lever service queued for what it wrote, the --wait on
// the fleet's gauges, and the exit.
// Each command words only its own lines.
package levertail

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/kosha-platform/koshactl/internal/cmd/breaker/converge"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/store"
)

// Tail is what a lever command hands its end.
type Tail struct {
	// Env's lever service queued the notification of what was written
	// (none on a dry run or with --no-notify): it is sent once the result
	// is printed.
	Env *cmdenv.Env
	// Table is true for the human output (-o table).
	Table bool
	// Waiter is --wait's, nil without it. Changes are what it waits for,
	// one per result shown; with none, nothing is waited for.
	Waiter  *metrics.Waiter
	Changes []metrics.Change
	// Print writes the result: a table's lines before any wait (view nil),
	// a document once, after the wait, with its view.
	Print func(view *converge.ConvergenceView) error
	// Failure is why some targets were not written (nil when none).
	Failure error
}

// Finish prints the result, announces what was written (bounded), then,
// with --wait, waits for the fleet to confirm the results shown. It
// returns the failure of the change first, then the wait's.
func Finish(ctx context.Context, f *cmdenv.Factory, t Tail) error {
	announce := func() { t.Env.Announce(ctx) }
	// Written is written: a print that fails (a closed stdout) does not
	// keep the change from being announced (Announce sends each once).
	defer announce()
	if t.Waiter == nil || len(t.Changes) == 0 {
		if err := t.Print(nil); err != nil {
			return err
		}
		announce()
		return t.Failure
	}
	// The changes and their audit records are written; now the fleet.
	waitErr, err := converge.Report(ctx, f, t.Waiter, t.Changes, t.Table, announce, t.Print)
	if err != nil {
		return err
	}
	if t.Failure != nil {
		return t.Failure
	}
	return waitErr
}

// Print writes a lever command's result: doc in the structured format
// output names, or the table's lines (table); then the line naming the
// context acted on, on stderr.
func Print(f *cmdenv.Factory, env *cmdenv.Env, output string, dryRun bool, doc any, table func(w io.Writer)) error {
	ios := f.IOStreams
	defer cmdenv.PrintActedOn(ios.ErrOut, env, dryRun)
	if output != cmdutil.FormatTable {
		return cmdutil.PrintStructured(ios.Out, output, doc)
	}
	table(ios.Out)
	return nil
}

// Confirmed writes, under a result's line, that its change's answer was
// lost and the change confirmed.
func Confirmed(w io.Writer, confirmed bool) {
	if confirmed {
		fmt.Fprintf(w, "  %s\n", store.ConfirmedNote)
	}
}

// Unwritten is a target whose change was not written: refused, failed, or
// (store.ErrOutcomeUnknown) nobody can tell.
type Unwritten struct {
	// Name is the target as the output names it.
	Name string
	// Err is why, as breaker words it (it names the verb and the target).
	Err error
}

// maxNamed bounds the targets a failure names in each of its groups (a
// clear --all may fail thousands).
const maxNamed = 20

// Failure is the one error of a lever command of targets targets, of which
// written were written and unwritten were not (nil when none). It is the
// first target's error, and when the command had several targets, what
// became of each: written (listed above), outcome unknown (with the command
// that tells), or not written. Any unknown outcome makes it an unknown
// outcome (exit 8), whatever the first error was: someone has to check.
func Failure(targets, written int, unwritten []Unwritten) error {
	if len(unwritten) == 0 {
		return nil
	}
	first := unwritten[0].Err
	if targets == 1 {
		return first
	}
	var unknown, refused []string
	for _, u := range unwritten {
		if errors.Is(u.Err, store.ErrOutcomeUnknown) {
			unknown = append(unknown, u.Name)
		} else {
			refused = append(refused, u.Name)
		}
	}
	var groups []string
	if written > 0 {
		groups = append(groups, fmt.Sprintf("%d written (listed above)", written))
	}
	if len(unknown) > 0 {
		groups = append(groups, fmt.Sprintf("%d with an unknown outcome: %s (check each with koshactl breaker get DEPENDENCY)", len(unknown), names(unknown)))
	}
	if len(refused) > 0 {
		groups = append(groups, fmt.Sprintf("%d not written: %s", len(refused), names(refused)))
	}
	summary := fmt.Sprintf("of %d overrides, %s", targets, strings.Join(groups, "; "))
	if len(unknown) > 0 && !errors.Is(first, store.ErrOutcomeUnknown) {
		return fmt.Errorf("%w; %s: %w", first, summary, store.ErrOutcomeUnknown)
	}
	return fmt.Errorf("%w; %s", first, summary)
}

// names lists up to maxNamed names, then how many more.
func names(list []string) string {
	if len(list) <= maxNamed {
		return strings.Join(list, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(list[:maxNamed], ", "), len(list)-maxNamed)
}
