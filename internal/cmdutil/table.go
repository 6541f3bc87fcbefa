package cmdutil

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Table prints aligned columns for humans (two spaces between columns).
// Every cell is rendered with [textsafe.Line]: a value read from the store
// cannot send a control character to the terminal, and a tab or newline in it
// cannot add a column or forge a row.
type Table struct {
	tw *tabwriter.Writer
}

// NewTable returns a table that writes to w when flushed.
func NewTable(w io.Writer) *Table {
	return &Table{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
}

// Row adds one row (the header is a row too).
func (t *Table) Row(cells ...string) {
	for i, c := range cells {
		if i > 0 {
			_, _ = io.WriteString(t.tw, "\t")
		}
		_, _ = io.WriteString(t.tw, textsafe.Line(c))
	}
	_, _ = io.WriteString(t.tw, "\n")
}

// Header adds the header row, unless the streams print tables without one
// (--no-headers).
func (t *Table) Header(ios *iostreams.IOStreams, cells ...string) {
	if !ios.NoHeaders() {
		t.Row(cells...)
	}
}

// Flush writes the aligned table.
func (t *Table) Flush() error { return t.tw.Flush() }

// Field is one "Label: value" line of a detail view.
type Field struct {
	Label string
	Value string
}

// PrintFields prints a detail view: one "Label:" per line, the values aligned
// two spaces after the longest label, each rendered with [textsafe.Line].
func PrintFields(w io.Writer, fields ...Field) {
	width := 0
	for _, f := range fields {
		width = max(width, len(f.Label)+1)
	}
	for _, f := range fields {
		label := f.Label + ":"
		fmt.Fprintf(w, "%s%s%s\n", label, strings.Repeat(" ", width-len(label)+2), textsafe.Line(f.Value))
	}
}
