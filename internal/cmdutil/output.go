package cmdutil

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
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
func PrintStructured(w io.Writer, format string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
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
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(numbers(generic)); err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	return enc.Close()
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

// HumanDuration renders d compactly: 45s, 12m, 3h05m, 2d4h.
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
