package cmdutil

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// DocStream writes a document of -o json or -o yaml whose list is written
// element by element, as the caller reads them, so a list of any length is
// printed holding one element at a time. The bytes are [PrintStructured]'s
// for the whole document. A --jq format filters the whole document, which
// cannot be streamed: [Streams] says so, and the caller prints the document
// with PrintStructured.
type DocStream struct {
	w      io.Writer
	format string
	key    string
	// head is the document up to and including its list's opening (JSON
	// `"items": [`; YAML the lines before `items:`).
	head []byte
	n    int
}

// Streams reports whether format can be streamed: json and yaml can, a
// --jq filter cannot.
func Streams(format string) bool { return format == FormatJSON || format == FormatYAML }

// NewDocStream begins doc in format (json or yaml) on w: doc is the whole
// document with its list, the field named key in JSON, empty. The fields
// before the list are written now; [DocStream.Item] writes each element,
// [DocStream.End] the fields after it.
func NewDocStream(w io.Writer, format, key string, doc any) (*DocStream, error) {
	if !Streams(format) {
		return nil, fmt.Errorf("encode output: -o %s is not streamed", format)
	}
	d := &DocStream{w: textsafe.Raw(w), format: format, key: key}
	head, _, err := d.split(doc)
	if err != nil {
		return nil, err
	}
	d.head = head
	_, err = d.w.Write(head)
	return d, err
}

// split renders doc (its list empty) and cuts it around the list: JSON at
// `"key": [` | `]`, YAML at the line `key: []`.
func (d *DocStream) split(doc any) (head, tail []byte, err error) {
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, nil, fmt.Errorf("encode output: %w", err)
	}
	b = escapeUnsafe(b)
	if d.format == FormatJSON {
		key, _ := json.Marshal(d.key) // the key as JSON writes it
		mark := []byte("\n  " + string(key) + ": []")
		i := bytes.Index(b, mark)
		if i < 0 || bytes.Count(b, mark) != 1 {
			return nil, nil, fmt.Errorf("encode output: the document has no empty list %q", d.key)
		}
		cut := i + len(mark) - 1
		return b[:cut], append(b[cut:len(b):len(b)], '\n'), nil
	}
	y, err := jsonToYAML(b)
	if err != nil {
		return nil, nil, err
	}
	// A top-level key starts a line; the list's is the line `key: []`
	// (found after a line break put before the document's first line).
	mark := []byte(d.key + ": []\n")
	i := bytes.Index(append([]byte{'\n'}, y...), append([]byte{'\n'}, mark...))
	if i < 0 {
		return nil, nil, fmt.Errorf("encode output: the document has no empty list %q", d.key)
	}
	return y[:i], y[i+len(mark):], nil
}

// Item writes one element of the list.
func (d *DocStream) Item(v any) error {
	var out []byte
	if d.format == FormatJSON {
		b, err := json.MarshalIndent(v, "    ", "  ")
		if err != nil {
			return fmt.Errorf("encode output: %w", err)
		}
		if d.n > 0 {
			out = append(out, ',')
		}
		out = append(out, "\n    "...)
		out = append(out, escapeUnsafe(b)...)
	} else {
		b, err := json.Marshal(map[string][]any{d.key: {v}})
		if err != nil {
			return fmt.Errorf("encode output: %w", err)
		}
		y, err := jsonToYAML(escapeUnsafe(b))
		if err != nil {
			return err
		}
		open := d.key + ":\n"
		if !strings.HasPrefix(string(y), open) {
			return fmt.Errorf("encode output: an element of %q renders as %q", d.key, y)
		}
		if d.n == 0 {
			out = append(out, open...)
		}
		out = append(out, y[len(open):]...)
	}
	d.n++
	_, err := d.w.Write(out)
	return err
}

// End writes the rest of doc, the whole document again with its list empty
// (the fields after the list may have changed while it was written; those
// before it may not).
func (d *DocStream) End(doc any) error {
	head, tail, err := d.split(doc)
	if err != nil {
		return err
	}
	if !bytes.Equal(head, d.head) {
		return fmt.Errorf("encode output: the fields before %q changed while it was written", d.key)
	}
	var out []byte
	switch {
	case d.format == FormatJSON && d.n > 0:
		out = append(out, "\n  "...)
	case d.format == FormatYAML && d.n == 0:
		out = append(out, d.key+": []\n"...)
	}
	out = append(out, tail...)
	_, err = d.w.Write(out)
	return err
}

// StreamTableRows is how many rows a [StreamTable] sizes its columns by.
const StreamTableRows = 500

// StreamTable prints aligned columns as rows come: the columns are as wide
// as the widest value of the header and the first [StreamTableRows] rows
// (plus two spaces), which it holds until then; every later row is printed
// at once in those columns, a longer value pushing the rest of its own row
// right (and no other row). A table of at most that many rows prints
// exactly as [Table] does. Cells are rendered with [textsafe.Line].
type StreamTable struct {
	w       io.Writer
	rows    [][]string
	widths  []int
	printed bool
	n       int
}

// NewStreamTable returns a table that writes to w.
func NewStreamTable(w io.Writer) *StreamTable { return &StreamTable{w: w} }

// Header adds the header row, unless the streams print tables without one
// (--no-headers). It does not count as a row.
func (t *StreamTable) Header(ios *iostreams.IOStreams, cells ...string) error {
	if ios.NoHeaders() {
		return nil
	}
	return t.add(cells)
}

// Row adds one row, printing it (and the rows held before it) once the
// columns are sized.
func (t *StreamTable) Row(cells ...string) error {
	t.n++
	return t.add(cells)
}

// Rows is how many rows were added (the header not counted).
func (t *StreamTable) Rows() int { return t.n }

func (t *StreamTable) add(cells []string) error {
	safe := make([]string, len(cells))
	for i, c := range cells {
		safe[i] = textsafe.Line(c)
	}
	if t.printed {
		return t.print(safe)
	}
	t.rows = append(t.rows, safe)
	if t.n >= StreamTableRows {
		return t.Flush()
	}
	return nil
}

// Flush sizes the columns by the rows held, if it has not yet, and prints
// them. Call it after the last row.
func (t *StreamTable) Flush() error {
	if t.printed {
		return nil
	}
	t.printed = true
	for _, r := range t.rows {
		for i, c := range r {
			if i == len(r)-1 {
				break // the last column is not padded
			}
			if i == len(t.widths) {
				t.widths = append(t.widths, 0)
			}
			t.widths[i] = max(t.widths[i], utf8.RuneCountInString(c)+2)
		}
	}
	for _, r := range t.rows {
		if err := t.print(r); err != nil {
			return err
		}
	}
	t.rows = nil
	return nil
}

func (t *StreamTable) print(cells []string) error {
	var b strings.Builder
	for i, c := range cells {
		b.WriteString(c)
		if i == len(cells)-1 {
			break
		}
		pad := 2
		if i < len(t.widths) {
			pad = max(pad, t.widths[i]-utf8.RuneCountInString(c))
		}
		b.WriteString(strings.Repeat(" ", pad))
	}
	b.WriteByte('\n')
	_, err := io.WriteString(t.w, b.String())
	return err
}
