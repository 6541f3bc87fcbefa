// Package levertail is the end `breaker force-open` and `breaker clear`
// share once their change is made (or refused): the result printed (a
// document, or a table's lines and the confirmed note), the notification
// of what was written, the --wait on the fleet's gauges, and the exit.
// Each command words only its own lines.
package levertail

import (
	"context"
	"fmt"
	"io"

	"github.com/kosha-platform/koshactl/internal/cmd/breaker/converge"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/store"
)

// Tail is what a lever command hands its end.
type Tail struct {
	Env      *cmdutil.Env
	DryRun   bool
	NoNotify bool
	// Table is true for the human output (-o table).
	Table bool
	// Event is the notification of what was written (its Actor is filled
	// in here); nothing is sent on a dry run or when Levers is empty.
	Event notify.Event
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
func Finish(ctx context.Context, f *cmdutil.Factory, t Tail) error {
	announce := func() {
		if t.DryRun || len(t.Event.Levers) == 0 {
			return
		}
		t.Event.Actor, _ = t.Env.Actor(ctx)
		cmdutil.Notify(ctx, t.Env, t.NoNotify, t.Event)
	}
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
func Print(f *cmdutil.Factory, env *cmdutil.Env, output string, dryRun bool, doc any, table func(w io.Writer)) error {
	ios := f.IOStreams
	defer cmdutil.PrintActedOn(ios.ErrOut, env, dryRun)
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
