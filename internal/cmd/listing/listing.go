package listing

import (
	"fmt"

	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Unreadable is the rule every list follows for stored items it cannot read
// in full (docs/contracts/cli-output.md, "Unreadable and malformed items"):
// the list shows what it could read; in table mode each problem is one line
// on stderr, `warning: <pk>: <attribute>: <problem>`; in -o json|yaml the
// document's `unreadable` list carries the same problems; and the command
// exits [exitcode.Partial] with a one-line summary saying how to repair them.
//
// Call it after printing the listing. noun names what was listed ("audit
// record"), fix says how to repair one. It returns nil when problems is
// empty.
func Unreadable(ios *iostreams.IOStreams, format string, problems []store.Problem, noun, fix string) error {
	if len(problems) == 0 {
		return nil
	}
	if format == cmdutil.FormatTable {
		for _, p := range problems {
			fmt.Fprintf(ios.ErrOut, "warning: %s\n", textsafe.Line(p.Error()))
		}
	}
	where := "listed on stderr"
	if format != cmdutil.FormatTable {
		where = `listed under "unreadable"`
	}
	return PartialListing(problems, noun, where, fix)
}

// PartialListing is the error (exit 10) of a listing that met problems,
// counted by item: where says where they were shown, fix what to do. nil
// when there are none.
func PartialListing(problems []store.Problem, noun, where, fix string) error {
	if len(problems) == 0 {
		return nil
	}
	items := map[string]bool{}
	for _, p := range problems {
		items[p.PK] = true
	}
	what := "1 " + noun + " does"
	if len(items) > 1 {
		what = fmt.Sprintf("%d %ss do", len(items), noun)
	}
	return exitcode.Errorf(exitcode.Partial, "partial listing: %s not follow the contract (%s); %s", what, where, fix)
}

// Problems returns problems, or an empty list (never nil), for JSON output.
func Problems(problems []store.Problem) []store.Problem {
	if problems == nil {
		return []store.Problem{}
	}
	return problems
}

// List is what a list command prints: in -o json|yaml its document, in
// table mode its rows (or, when there are none, one line saying so); then
// the items it could not read, by [Unreadable].
type List struct {
	// Format is the --output format.
	Format string
	// Doc is the -o json|yaml document.
	Doc any
	// Rows is how many rows the table has; Write writes them.
	Rows  int
	Write func(tw *cmdutil.Table)
	// Header is the table's header; None the line printed instead of an
	// empty table.
	Header []string
	None   string
	// Footer, when set, is written to stderr after the table ("showing 50
	// of 70 buckets").
	Footer string
	// Problems are the items it could not read in full; Noun names what
	// was listed and Fix how to repair one ([Unreadable]).
	Problems  []store.Problem
	Noun, Fix string
}

// Print prints the list on ios and returns the partial-listing error
// (exit 10) when some items could not be read.
func Print(ios *iostreams.IOStreams, l List) error {
	partial := func() error { return Unreadable(ios, l.Format, l.Problems, l.Noun, l.Fix) }
	if l.Format != cmdutil.FormatTable {
		if err := cmdutil.PrintStructured(ios.Out, l.Format, l.Doc); err != nil {
			return err
		}
		return partial()
	}
	if l.Rows == 0 {
		fmt.Fprintln(ios.Out, l.None)
		return partial()
	}
	tw := cmdutil.NewTable(ios.Out)
	tw.Header(ios, l.Header...)
	l.Write(tw)
	if err := tw.Flush(); err != nil {
		return err
	}
	if l.Footer != "" {
		fmt.Fprintln(ios.ErrOut, l.Footer)
	}
	return partial()
}
