package cmdutil

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Output formats accepted by -o.
const (
	FormatTable = "table"
	FormatJSON  = "json"
	FormatYAML  = "yaml"
)

// jqPrefix marks an output format that filters the JSON document through a
// jq expression (--jq EXPR); the expression follows the prefix. It is set by
// AddOutputFlag's pre-run, never typed by a user.
const jqPrefix = "jq="

// IsJSON reports whether format prints JSON: plain, or filtered by --jq.
func IsJSON(format string) bool {
	return format == FormatJSON || strings.HasPrefix(format, jqPrefix)
}

// AddOutputFlag registers -o/--output with the given extra formats allowed,
// and --jq EXPR, which filters the JSON document (it implies -o json).
func AddOutputFlag(cmd *cobra.Command, target *string, extra ...string) {
	formats := append([]string{FormatTable, FormatJSON, FormatYAML}, extra...)
	cmd.Flags().StringVarP(target, "output", "o", FormatTable, "output format: "+strings.Join(formats, "|"))
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))
	var expr string
	cmd.Flags().StringVar(&expr, "jq", "", "filter the JSON output with a jq expression (implies -o json; strings print unquoted); --jq keys names the document's fields")
	_ = cmd.RegisterFlagCompletionFunc("jq", cobra.NoFileCompletions)
	prev := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		if !slices.Contains(formats, *target) {
			return Usagef("unknown output format %q: use one of %s", *target, strings.Join(formats, ", "))
		}
		if c.Flags().Changed("jq") {
			if c.Flags().Changed("output") && *target != FormatJSON {
				return Usagef("--jq filters JSON output: drop -o %s (or use -o json)", *target)
			}
			if _, err := parseJQ(expr); err != nil {
				return err
			}
			*target = jqPrefix + expr
		}
		if prev != nil {
			return prev(c, args)
		}
		return nil
	}
}

// JQ compiles a --jq expression (internal/cmdutil/jq, on gojq): its error
// says why expr does not parse or compile; run runs it on a decoded JSON
// document (numbers as json.Number) and passes each result to yield, an
// error as a result of its own that ends the run.
type JQ func(expr string) (run func(input any, yield func(any) bool), err error)

// jqImpl is the process's JQ ([UseJQ]); unset in a program that does not
// link one.
var jqImpl atomic.Pointer[JQ]

// UseJQ sets the JQ --jq runs on, for the process: the full program's root
// does, before it runs a command. koshactl's front links none, and hands a
// run with --jq to the full program before it gets here.
func UseJQ(j JQ) { jqImpl.Store(&j) }

// parseJQ compiles a --jq expression.
func parseJQ(expr string) (func(input any, yield func(any) bool), error) {
	if strings.TrimSpace(expr) == "" {
		return nil, Usagef("--jq is empty: give a jq expression, such as keys (the document's fields) or .kind")
	}
	j := jqImpl.Load()
	if j == nil {
		return nil, Usagef("--jq: this program does not run jq expressions (koshactl-full does)")
	}
	run, err := (*j)(expr)
	if err != nil {
		return nil, Usagef("--jq %q: %v", expr, err)
	}
	return run, nil
}

// PrintStructured writes v as JSON (indented, one document), as the results
// of a --jq expression (see [printJQ]), or as YAML. The YAML and jq forms are
// derived from the JSON form so all share one schema.
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
	if expr, ok := strings.CutPrefix(format, jqPrefix); ok {
		return printJQ(w, expr, b)
	}
	b = escapeUnsafe(b)
	if format == FormatJSON {
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	y, err := jsonToYAML(b)
	if err != nil {
		return err
	}
	_, err = w.Write(y)
	return err
}

// jsonToYAML renders the JSON document b (as PrintStructured encodes it)
// in YAML: the same schema, numbers as written, strings exact and safe on a
// terminal.
func jsonToYAML(b []byte) ([]byte, error) {
	// Keep numbers as written (epoch seconds must not become 1.79e+09).
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return nil, fmt.Errorf("encode output: %w", err)
	}
	// yaml.v3 prints a multi-line string that starts with a space or a line
	// break as a block scalar with an indentation indicator, and inside
	// nested collections it gets the indicator wrong: Node.Encode (which
	// prints and re-reads) then fails on its own output. Such strings are
	// held aside as placeholders and put back, double-quoted, in the node.
	held := map[string]string{}
	var doc yaml.Node
	if err := doc.Encode(holdBlockStrings(numbers(generic), held)); err != nil {
		return nil, fmt.Errorf("encode output: %w", err)
	}
	restoreHeld(&doc, held)
	quoteUnsafe(&doc)
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("encode output: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode output: %w", err)
	}
	// Every string with an unsafe character is double-quoted now, where a
	// \u escape means that character.
	return escapeUnsafe(out.Bytes()), nil
}

// printJQ runs expr on the JSON document doc and prints each result on its
// own line, as gh does: strings unquoted but rendered with [textsafe.Line]
// (data from the table cannot drive the terminal, nor break the one result a
// line), everything else as compact JSON, exact and terminal-safe. Nothing is
// printed when the expression fails part way.
func printJQ(w io.Writer, expr string, doc []byte) error {
	run, err := parseJQ(expr)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var input any
	if err := dec.Decode(&input); err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	var buf bytes.Buffer
	run(input, func(out any) bool {
		if e, isErr := out.(error); isErr {
			err = fmt.Errorf("--jq %q: %w", expr, e)
			return false
		}
		if s, isString := out.(string); isString {
			buf.WriteString(textsafe.Line(s))
			buf.WriteByte('\n')
			return true
		}
		line, e := json.Marshal(out)
		if e != nil {
			err = fmt.Errorf("--jq %q: encode result: %w", expr, e)
			return false
		}
		buf.Write(escapeUnsafe(line))
		buf.WriteByte('\n')
		return true
	})
	if err != nil {
		return err
	}
	_, err = w.Write(buf.Bytes())
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

// needsQuotes reports whether yaml.v3 would print s as a block scalar with
// an indentation indicator (see PrintStructured).
func needsQuotes(s string) bool {
	return strings.Contains(s, "\n") && (strings.HasPrefix(s, " ") || strings.HasPrefix(s, "\n"))
}

// holdBlockStrings replaces each string (value or key) [needsQuotes] flags
// with a placeholder recorded in held.
func holdBlockStrings(v any, held map[string]string) any {
	hold := func(s string) string {
		if !needsQuotes(s) {
			return s
		}
		key := fmt.Sprintf("koshactl-held-%d-\ue000", len(held))
		held[key] = s
		return key
	}
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[hold(k)] = holdBlockStrings(e, held)
		}
		return out
	case []any:
		for i, e := range x {
			x[i] = holdBlockStrings(e, held)
		}
		return x
	case string:
		return hold(x)
	}
	return v
}

// restoreHeld puts the strings [holdBlockStrings] held back into n,
// double-quoted.
func restoreHeld(n *yaml.Node, held map[string]string) {
	if n.Kind == yaml.ScalarNode {
		if orig, ok := held[n.Value]; ok {
			n.Value, n.Tag, n.Style = orig, "!!str", yaml.DoubleQuotedStyle
		}
	}
	for _, c := range n.Content {
		restoreHeld(c, held)
	}
}

// quoteUnsafe double-quotes every scalar (keys included) holding a character
// YAML would print raw but [textsafe.UnsafeRune] reports, and every
// multi-line string that starts with a space or a line break: yaml.v3 gives
// such a block scalar an indentation indicator computed for its default
// indent, which is wrong at SetIndent(2) and makes the output unreadable
// ("\n0" printed as "|4-" came back as a YAML syntax error).
func quoteUnsafe(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode && (strings.ContainsFunc(n.Value, func(r rune) bool { return r >= 0x80 && textsafe.UnsafeRune(r) }) ||
		needsQuotes(n.Value)) {
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
		return "in " + human.Age(d)
	}
	return human.Age(-d) + " ago"
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

// AddNoNotifyFlag registers --no-notify on a mutating command.
func AddNoNotifyFlag(cmd *cobra.Command, v *bool) {
	cmd.Flags().BoolVar(v, "no-notify", false, "do not announce the change to the context's notification sinks (only on contexts with allow-no-notify)")
}
