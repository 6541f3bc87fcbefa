package cmdutil

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Output formats accepted by -o.
const (
	FormatTable = "table"
	FormatJSON  = "json"
	FormatYAML  = "yaml"
)

// AddOutputFlag registers -o/--output with the given extra formats allowed.
func AddOutputFlag(cmd *cobra.Command, target *string, extra ...string) {
	formats := append([]string{FormatTable, FormatJSON, FormatYAML}, extra...)
	cmd.Flags().StringVarP(target, "output", "o", FormatTable, "output format: "+strings.Join(formats, "|"))
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))
	prev := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		ok := false
		for _, f := range formats {
			ok = ok || *target == f
		}
		if !ok {
			return Usagef("unknown output format %q: use one of %s", *target, strings.Join(formats, ", "))
		}
		if prev != nil {
			return prev(c, args)
		}
		return nil
	}
}

// PrintStructured writes v as JSON (indented, one document) or YAML. The YAML
// form is derived from the JSON form so both share one schema.
//
// Both are exact (every string decodes back to the stored value) and safe on
// a terminal: encoding/json escapes C0 controls, and the characters it would
// emit raw that package textsafe calls unsafe (DEL, C1, bidi controls) are
// written as JSON \u escapes; YAML escapes controls itself, and a string
// holding a bidi control is written double-quoted with the control as a \u
// escape. The bytes go to the stream under any [textsafe.Writer], so the
// backstop never alters a document.
func PrintStructured(w io.Writer, format string, v any) error {
	w = textsafe.Raw(w)
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	b = escapeUnsafe(b)
	if format == FormatJSON {
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	// Keep numbers as written (epoch seconds must not become 1.79e+09).
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	var doc yaml.Node
	if err := doc.Encode(numbers(generic)); err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	quoteUnsafe(&doc)
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	// Every string with an unsafe character is double-quoted now, where a
	// \u escape means that character.
	_, err = w.Write(escapeUnsafe(out.Bytes()))
	return err
}

// PrintJSONLine writes v as one line of JSON (a document per line, for
// watch modes), exact and terminal-safe like [PrintStructured].
func PrintJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	_, err = fmt.Fprintf(textsafe.Raw(w), "%s\n", escapeUnsafe(b))
	return err
}

// escapeUnsafe replaces each character [textsafe.UnsafeRune] reports in a
// JSON document (or a YAML one whose such strings are double-quoted) with its
// \u escape. Such characters can only stand inside strings there, where the
// escape decodes to the same character. A clean document is returned as is.
func escapeUnsafe(b []byte) []byte {
	var out []byte
	last := 0
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf && b[i] != 0x7f { // encoding/json escapes C0 itself
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if r == 0x7f || textsafe.UnsafeRune(r) {
			out = append(out, b[last:i]...)
			out = fmt.Appendf(out, "\\u%04x", r)
			last = i + n
		}
		i += n
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

// quoteUnsafe double-quotes every scalar (keys included) holding a character
// YAML would print raw but [textsafe.UnsafeRune] reports.
func quoteUnsafe(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode && strings.ContainsFunc(n.Value, func(r rune) bool { return r >= 0x80 && textsafe.UnsafeRune(r) }) {
		n.Style = yaml.DoubleQuotedStyle
	}
	for _, c := range n.Content {
		quoteUnsafe(c)
	}
}

// numbers turns the decoder's json.Number values into int64 or float64, which
// YAML prints as plain numbers.
func numbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		if f, err := x.Float64(); err == nil {
			return f
		}
	}
	return v
}

// FormatTime renders t for humans on a terminal ("3m ago", "in 27m") and as
// RFC3339 elsewhere, so scripts that scrape tables still get exact times.
func FormatTime(t, now time.Time, tty bool) string {
	if t.IsZero() {
		return "-"
	}
	if !tty {
		return t.UTC().Format(time.RFC3339)
	}
	d := t.Sub(now)
	if d >= 0 {
		return "in " + HumanDuration(d)
	}
	return HumanDuration(-d) + " ago"
}

// HumanDuration renders d compactly: 45s, 12m, 1h, 3h05m, 2d4h.
func HumanDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Round(time.Second)/time.Second))
	case d < time.Hour:
		m := d / time.Minute
		s := (d % time.Minute) / time.Second
		if s == 0 || m >= 10 {
			return fmt.Sprintf("%dm", m)
		}
		return fmt.Sprintf("%dm%02ds", m, s)
	case d < 48*time.Hour:
		h := d / time.Hour
		m := (d % time.Hour) / time.Minute
		if m == 0 {
			return fmt.Sprintf("%dh", h)
		}
		return fmt.Sprintf("%dh%02dm", h, m)
	}
	days := d / (24 * time.Hour)
	h := (d % (24 * time.Hour)) / time.Hour
	return fmt.Sprintf("%dd%dh", days, h)
}

// TimeOrNil returns t in RFC3339 (UTC, milliseconds) or nil, for JSON output.
func TimeOrNil(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	return &s
}

// Notice returns a function that writes one notice line to w (stderr): how
// a domain package tells the operator something worth knowing that is not
// the result, such as a missing index it worked around.
func Notice(w io.Writer) func(msg string) {
	return func(msg string) { fmt.Fprintln(w, msg) }
}
