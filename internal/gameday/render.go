package gameday

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/kosha-platform/koshactl/internal/textsafe"
)

//go:embed assets/report.html.tmpl
var assets embed.FS

// css is the report's stylesheet, embedded as a string: no copy at start-up.
//
//go:embed assets/report.css
var css string

var (
	// CSP is the report's Content-Security-Policy: nothing may load or
	// run (no script, image, font, frame or connection), and the one style
	// element is allowed by its hash.
	CSP = "default-src 'none'; style-src '" + styleHash(css) + "'; img-src 'none'; font-src 'none'; script-src 'none'; " +
		"connect-src 'none'; frame-src 'none'; object-src 'none'; base-uri 'none'; form-action 'none'"
	// page is parsed on the first report, not at start-up: every koshactl
	// process links this package, few render a report.
	page = sync.OnceValue(func() *template.Template {
		return template.Must(template.New("report.html.tmpl").Funcs(template.FuncMap{
			"f":     func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
			"add":   func(a, b float64) float64 { return a + b },
			"odd":   func(i int) bool { return i%2 == 1 },
			"arrow": arrow,
		}).ParseFS(assets, "assets/report.html.tmpl"))
	})
)

// styleHash is the CSP source of a style element's text: 'sha256-...'.
func styleHash(text string) string {
	sum := sha256.Sum256([]byte(text))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

// arrow is the points of the triangle at the axis's end of a clipped bar.
func arrow(x, midY float64) string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
	return f(x) + "," + f(midY-6) + " " + f(x+9) + "," + f(midY) + " " + f(x) + "," + f(midY+6)
}

// HTML writes the report of in.Journal as one self-contained HTML page.
// Nothing is written when rendering fails.
func HTML(w io.Writer, in Input) error {
	if in.Journal == nil {
		return fmt.Errorf("render report: no journal")
	}
	var buf bytes.Buffer
	err := page().Execute(&buf, struct {
		CSP string
		CSS template.CSS
		R   *report
	}{CSP, template.CSS(css), build(in)}) //nolint:gosec // G203: the report's own embedded stylesheet, no value of the journal
	if err != nil {
		return fmt.Errorf("render report: %w", err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// Formats of the report.
const (
	FormatHTML     = "html"
	FormatMarkdown = "markdown"
)

// Render writes the report of in as format: html or markdown.
func Render(w io.Writer, format string, in Input) error {
	switch format {
	case FormatHTML:
		return HTML(w, in)
	case FormatMarkdown:
		return Markdown(w, in)
	}
	return fmt.Errorf("render report: unknown format %q: use html or markdown", format)
}

// FormatFor is the format of a report file by its name: Markdown for
// .md and .markdown, HTML otherwise.
func FormatFor(path string) string {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".md", ".markdown":
		return FormatMarkdown
	}
	return FormatHTML
}

// md escapes one value for the Markdown summary: [textsafe.Markdown].
var md = textsafe.Markdown

// Markdown writes the report's summary as GitHub-flavored Markdown: the
// verdict, what was pulled, what stopped it and when everything was put
// back, then the steps, levers, the stop condition, recoveries and audit
// records as tables. Every value is escaped by [md]; the report's own
// values already went through the textsafe rule.
func Markdown(w io.Writer, in Input) error {
	if in.Journal == nil {
		return fmt.Errorf("render report: no journal")
	}
	r := build(in)
	var b strings.Builder
	icon := "❌"
	if r.Good {
		icon = "✅"
	}
	fmt.Fprintf(&b, "## %s drill %s: %s (exit %d)\n\n", icon, md(r.Title), md(r.Verdict), r.ExitCode)
	if r.Reason != "" {
		fmt.Fprintf(&b, "> %s\n\n", md(r.Reason))
	}
	pairs := func(rows [][2]string) {
		b.WriteString("| | |\n|---|---|\n")
		for _, row := range rows {
			fmt.Fprintf(&b, "| **%s** | %s |\n", md(row[0]), md(row[1]))
		}
		b.WriteString("\n")
	}
	pairs(mapRows(r.Glance, func(g glance) [2]string { return [2]string{g.Label, g.Text} }))
	var fs []string
	for _, f := range r.Facts {
		if f.Name == "outcome" || f.Name == "exit code" {
			continue
		}
		fs = append(fs, "**"+md(f.Name)+"** "+md(f.Value))
	}
	b.WriteString(strings.Join(fs, " · ") + "\n\n")

	// more is the line after a table cut at maxRows.
	more := func(what string) {
		if n := r.More[what]; n > 0 {
			fmt.Fprintf(&b, "… and %d more %s: the journal has them all\n\n", n, what)
		}
	}
	// table writes rows under head, then the line of those cut (what).
	table := func(title, what string, head []string, rows [][]string) {
		if len(rows) == 0 {
			return
		}
		defer more(what)
		fmt.Fprintf(&b, "### %s\n\n| %s |\n|%s\n", title, strings.Join(head, " | "), strings.Repeat("---|", len(head)))
		for _, row := range rows {
			cells := make([]string, len(row))
			for i, c := range row {
				cells[i] = md(c)
			}
			fmt.Fprintf(&b, "| %s |\n", strings.Join(cells, " | "))
		}
		b.WriteString("\n")
	}
	table("Steps", "steps", []string{"step", "kind", "status", "took", "why", "what it did"}, mapRows(r.Steps, func(s stepRow) []string {
		return []string{s.ID, s.Kind, s.Status, s.Duration, s.Reason, joinNonEmpty(": ", s.Description, cmp.Or(s.Error, s.Detail))}
	}))
	if g := r.Guard; g != nil {
		fmt.Fprintf(&b, "### %s\n\n", g.Heading)
		pairs(slices.DeleteFunc([][2]string{{"guard", g.Role + " " + g.Condition}, {"at", g.At}, {"since", g.Since}, {"polls", g.Polls},
			{"grace", g.Grace}, {"cause", g.Cause}, {"fix", g.Fix}}, func(kv [2]string) bool { return kv[1] == "" }))
	}
	table("Preflight", "preflight checks", []string{"check", "kind", "result", "observed"}, mapRows(r.Preflight, func(c checkRow) []string {
		return []string{c.Name, c.Kind, c.Status, cmp.Or(c.Error, c.Detail)}
	}))
	table("Levers", "levers", []string{"rollback", "subject", "why", "status", "pulled", "put back", "held", "detail"}, mapRows(r.Levers, func(l leverRow) []string {
		im := ""
		if l.Impact != "" {
			im = "impact: " + l.Impact
		}
		return []string{l.ID, l.Subject, joinNonEmpty("; ", l.Why, im), l.Status, l.Pulled, joinNonEmpty(" by ", l.Back, l.By), l.Held,
			cmp.Or(l.Error, l.Detail)}
	}))
	if st := r.Stop; st != nil {
		fmt.Fprintf(&b, "### Stop condition\n\n**%s** fired at %s: %s\n\n", md(st.Condition), md(st.At), md(st.Detail))
		table("Alarms", "alarms", []string{"alarm", "state", "since", "state reason"}, mapRows(st.Alarms, func(a alarmRow) []string {
			return []string{a.Name, a.State, a.Since, a.Reason}
		}))
	}
	table("Hypothesis", "checks", []string{"phase", "check", "result", "observed"}, mapRows(r.Checks, func(c checkRow) []string {
		return []string{c.Phase, c.Name, c.Status, cmp.Or(c.Error, c.Detail)}
	}))
	table("Recoveries", "recoveries", []string{"at", "by", "result", "rollbacks", "detail"}, mapRows(r.Recoveries, func(rv recoveryRow) []string {
		return []string{rv.At, rv.Actor, rv.Status, rv.Rollbacks, rv.Detail}
	}))
	table("Audit records", "audit records", []string{"id", "at", "action", "subject"}, mapRows(r.Audit, func(a auditRow) []string {
		return []string{a.ID, a.At, a.Action, a.Subject}
	}))
	if len(r.Notices) > 0 {
		b.WriteString("### Notices\n\n")
		for _, n := range r.Notices {
			fmt.Fprintf(&b, "- %s\n", md(n))
		}
		b.WriteString("\n")
		more("notices")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mapRows is row of each of xs.
func mapRows[T, R any](xs []T, row func(T) R) []R {
	var out []R
	for _, x := range xs {
		out = append(out, row(x))
	}
	return out
}

func joinNonEmpty(sep string, s ...string) string {
	return strings.Join(slices.DeleteFunc(s, func(v string) bool { return v == "" }), sep)
}
