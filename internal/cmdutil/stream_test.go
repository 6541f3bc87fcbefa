package cmdutil

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/iostreams"
)

type streamDoc struct {
	Kind  string           `json:"kind"`
	Note  string           `json:"note"`
	Items []map[string]any `json:"items"`
	Count int              `json:"total"`
	Zeta  []string         `json:"zeta"`
}

// A document streamed element by element is byte for byte the document
// printed whole, in JSON and YAML, whatever its elements hold (nested
// lists named like the list, strings YAML prints specially, characters
// written as escapes) and however many there are. A field after the list
// (in JSON's order, and YAML's, which sorts the keys) may change while it
// is written.
func TestDocStreamPrintsWhatPrintStructuredPrints(t *testing.T) {
	items := []map[string]any{
		{"id": "a", "n": 1, "items": []any{}, "note": "\n leading newline and space"},
		{"id": "b\u202eb", "nested": map[string]any{"items": []string{"x"}}, "big": 1796080800000},
		{"id": "<c>&", "empty": "", "f": 0.5, "multi": "two\nlines"},
	}
	for _, format := range []string{FormatJSON, FormatYAML} {
		for n := 0; n <= len(items); n++ {
			whole := streamDoc{Kind: "K", Note: "items: []", Items: items[:n], Count: n, Zeta: []string{"z"}}
			if n == 0 {
				whole.Items = []map[string]any{}
			}
			var want, got bytes.Buffer
			if err := PrintStructured(&want, format, whole); err != nil {
				t.Fatal(err)
			}
			doc := whole
			doc.Items, doc.Count = []map[string]any{}, 0
			d, err := NewDocStream(&got, format, "items", doc)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range items[:n] {
				if err := d.Item(it); err != nil {
					t.Fatal(err)
				}
			}
			doc.Count = n
			if err := d.End(doc); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("-o %s, %d items: streamed\n%s\nwhole\n%s", format, n, got.String(), want.String())
			}
		}
	}
	if Streams("jq=.items") || !Streams(FormatJSON) || !Streams(FormatYAML) {
		t.Error("Streams: json and yaml stream, a --jq filter does not")
	}
}

// A stream table of up to StreamTableRows rows prints what Table prints;
// past them it keeps the first rows' columns, a longer value pushing only
// its own row.
func TestStreamTableAlignsByItsFirstRows(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	rows := [][]string{{"a", "bbbb", "c"}, {"dddddd", "", "fff"}, {"g\tg", "h", "i\nj"}, {"ü", "üüü", ""}}
	var want bytes.Buffer
	tw := NewTable(&want)
	tw.Header(ios, "ONE", "TWO", "THREE")
	for _, r := range rows {
		tw.Row(r...)
	}
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	st := NewStreamTable(&got)
	if err := st.Header(ios, "ONE", "TWO", "THREE"); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if err := st.Row(r...); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() || st.Rows() != len(rows) {
		t.Errorf("stream table (%d rows)\n%q\nwant Table's\n%q", st.Rows(), got.String(), want.String())
	}

	got.Reset()
	st = NewStreamTable(&got)
	for i := range StreamTableRows {
		if err := st.Row(fmt.Sprintf("r%d", i%10), "x", "y"); err != nil {
			t.Fatal(err)
		}
	}
	if lines := strings.Count(got.String(), "\n"); lines != StreamTableRows {
		t.Fatalf("after %d rows %d lines are printed, want all of them", StreamTableRows, lines)
	}
	for _, r := range [][]string{{"r1", "x", "y"}, {"a-much-longer-value", "x", "y"}, {"r2", "x", "y"}} {
		if err := st.Row(r...); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSuffix(got.String(), "\n"), "\n")
	tail := strings.Join(lines[len(lines)-3:], "\n")
	if want := "r1  x  y\na-much-longer-value  x  y\nr2  x  y"; tail != want {
		t.Errorf("rows after the first %d:\n%s\nwant\n%s", StreamTableRows, tail, want)
	}
}
