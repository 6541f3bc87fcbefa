package listing

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/human"
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
	where := `listed under "unreadable"`
	if format == cmdutil.FormatTable {
		where = "listed on stderr"
		for _, p := range problems {
			fmt.Fprintf(ios.ErrOut, "warning: %s\n", textsafe.Line(p.Error()))
		}
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

// Spec says how a list of T prints ([NewStream]).
type Spec[T any] struct {
	// Format is the --output format.
	Format string
	// Doc is the -o json|yaml document with its list, Key ("items"),
	// empty: its fields before the list as they are final (JSON's order,
	// and YAML's, which sorts the keys).
	Doc any
	Key string
	// View is an item as the document holds it.
	View func(T) any
	// Header is the table's header, Row an item's cells; None is the line
	// printed instead of an empty table.
	Header []string
	Row    func(T) []string
	None   string
	// Noun names what is listed and Fix how to repair one that could not
	// be read ([Unreadable]).
	Noun, Fix string
}

// Stream prints a list as it is read: in -o json|yaml its document, each
// item written as it comes (cmdutil.DocStream), in table mode its rows
// (cmdutil.StreamTable: the columns sized by the first rows), or, when
// there are none, the None line; then the items it could not read, by
// [Unreadable]. What it holds at once is one item (and, in a table, the
// rows its columns are sized by), so a list of any length prints in bounded
// memory. A --jq filter reads the whole document, so under --jq the items
// are held until [Stream.End].
type Stream[T any] struct {
	ios   *iostreams.IOStreams
	spec  Spec[T]
	doc   *cmdutil.DocStream
	table *cmdutil.StreamTable
	held  []any // the items under --jq
}

// NewStream begins the list on ios: the document's fields before the list,
// or nothing yet in a table.
func NewStream[T any](ios *iostreams.IOStreams, spec Spec[T]) (*Stream[T], error) {
	s := &Stream[T]{ios: ios, spec: spec}
	switch {
	case spec.Format == cmdutil.FormatTable:
		s.table = cmdutil.NewStreamTable(ios.Out)
		if err := s.table.Header(ios, spec.Header...); err != nil {
			return nil, err
		}
	case cmdutil.Streams(spec.Format):
		d, err := cmdutil.NewDocStream(ios.Out, spec.Format, spec.Key, spec.Doc)
		if err != nil {
			return nil, err
		}
		s.doc = d
	}
	return s, nil
}

// SetFix replaces how to repair an item that could not be read (Spec.Fix),
// for a fix that depends on the items met.
func (s *Stream[T]) SetFix(fix string) { s.spec.Fix = fix }

// Add prints one item.
func (s *Stream[T]) Add(item T) error {
	switch {
	case s.table != nil:
		return s.table.Row(s.spec.Row(item)...)
	case s.doc != nil:
		return s.doc.Item(s.spec.View(item))
	}
	s.held = append(s.held, s.spec.View(item))
	return nil
}

// End prints the rest: doc, the document again with its list empty and
// the fields after it final; in a table the rows held (or the None line),
// then footer on stderr when set ("showing 50 of 70 buckets"). It returns
// the partial-listing error (exit 10) when problems is not empty.
func (s *Stream[T]) End(doc any, footer string, problems []store.Problem) error {
	switch {
	case s.table != nil && s.table.Rows() == 0:
		fmt.Fprintln(s.ios.Out, s.spec.None)
	case s.table != nil:
		if err := s.table.Flush(); err != nil {
			return err
		}
		if footer != "" {
			fmt.Fprintln(s.ios.ErrOut, footer)
		}
	case s.doc != nil:
		if err := s.doc.End(doc); err != nil {
			return err
		}
	default: // --jq: the whole document, its list filled.
		whole, err := withList(doc, s.spec.Key, s.held)
		if err != nil {
			return err
		}
		if err := cmdutil.PrintStructured(s.ios.Out, s.spec.Format, whole); err != nil {
			return err
		}
	}
	return Unreadable(s.ios, s.spec.Format, problems, s.spec.Noun, s.spec.Fix)
}

// withList is doc, as a JSON object, with its field key set to items.
func withList(doc any, key string, items []any) (map[string]any, error) {
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encode output: %w", err)
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("encode output: %w", err)
	}
	m[key] = append([]any{}, items...)
	return m, nil
}

// AuditRecordFix is what a listing of audit records that could not all be
// read in full says to do (audit list, audit impact).
const AuditRecordFix = "the records shown are complete; the others are named by pk (koshactl never rewrites an audit record; the store's TTL collects it after 90 days)"

// ParseUntil reads a list's --until: an RFC3339 time, or a duration
// before now (none: the zero time).
func ParseUntil(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := human.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, cmdutil.Usagef("--until %q is neither an RFC3339 time (2026-11-30T12:00:00Z) nor a duration ago (1h, 2d)", s)
	}
	return t, nil
}
