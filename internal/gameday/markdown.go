package gameday

import (
	"cmp"
	"fmt"
	"io"
	"strings"

	"github.com/kosha-platform/koshactl/internal/textsafe"
)

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
	b.WriteString("| | |\n|---|---|\n")
	for _, g := range r.Glance {
		fmt.Fprintf(&b, "| **%s** | %s |\n", md(g.Label), md(g.Text))
	}
	b.WriteString("\n")
	var fs []string
	for _, f := range r.Facts {
		if f.Name == "outcome" || f.Name == "exit code" {
			continue
		}
		fs = append(fs, "**"+md(f.Name)+"** "+md(f.Value))
	}
	b.WriteString(strings.Join(fs, " · ") + "\n\n")

	table := func(title string, head []string, rows [][]string) {
		if len(rows) == 0 {
			return
		}
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
	var rows [][]string
	for _, s := range r.Steps {
		did := joinNonEmpty(": ", s.Description, cmp.Or(s.Error, s.Detail))
		rows = append(rows, []string{s.ID, s.Kind, s.Status, s.Duration, s.Reason, did})
	}
	table("Steps", []string{"step", "kind", "status", "took", "why", "what it did"}, rows)
	if g := r.Guard; g != nil {
		fmt.Fprintf(&b, "### %s\n\n", g.Heading)
		rows = [][]string{{"guard", g.Role + " " + g.Condition}, {"at", g.At}}
		for _, kv := range [][2]string{{"since", g.Since}, {"polls", g.Polls}, {"grace", g.Grace}, {"cause", g.Cause}, {"fix", g.Fix}} {
			if kv[1] != "" {
				rows = append(rows, []string{kv[0], kv[1]})
			}
		}
		b.WriteString("| | |\n|---|---|\n")
		for _, row := range rows {
			fmt.Fprintf(&b, "| **%s** | %s |\n", md(row[0]), md(row[1]))
		}
		b.WriteString("\n")
	}
	rows = nil
	for _, c := range r.Preflight {
		rows = append(rows, []string{c.Name, c.Kind, c.Status, cmp.Or(c.Error, c.Detail)})
	}
	table("Preflight", []string{"check", "kind", "result", "observed"}, rows)
	rows = nil
	for _, l := range r.Levers {
		rows = append(rows, []string{l.ID, l.Subject, l.Why, l.Status, l.Pulled, joinNonEmpty(" by ", l.Back, l.By), l.Held, cmp.Or(l.Error, l.Detail)})
	}
	table("Levers", []string{"rollback", "subject", "why", "status", "pulled", "put back", "held", "detail"}, rows)
	if st := r.Stop; st != nil {
		fmt.Fprintf(&b, "### Stop condition\n\n**%s** fired at %s: %s\n\n", md(st.Condition), md(st.At), md(st.Detail))
		rows = nil
		for _, a := range st.Alarms {
			rows = append(rows, []string{a.Name, a.State, a.Since, a.Reason})
		}
		table("Alarms", []string{"alarm", "state", "since", "state reason"}, rows)
	}
	rows = nil
	for _, c := range r.Checks {
		rows = append(rows, []string{c.Phase, c.Name, c.Status, cmp.Or(c.Error, c.Detail)})
	}
	table("Hypothesis", []string{"phase", "check", "result", "observed"}, rows)
	rows = nil
	for _, rv := range r.Recoveries {
		rows = append(rows, []string{rv.At, rv.Actor, rv.Status, rv.Rollbacks, rv.Detail})
	}
	table("Recoveries", []string{"at", "by", "result", "rollbacks", "detail"}, rows)
	rows = nil
	for _, a := range r.Audit {
		rows = append(rows, []string{a.ID, a.At, a.Action, a.Subject})
	}
	table("Audit records", []string{"id", "at", "action", "subject"}, rows)
	if len(r.Notices) > 0 {
		b.WriteString("### Notices\n\n")
		for _, n := range r.Notices {
			fmt.Fprintf(&b, "- %s\n", md(n))
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func joinNonEmpty(sep string, s ...string) string {
	var out []string
	for _, v := range s {
		if v != "" {
			out = append(out, v)
		}
	}
	return strings.Join(out, sep)
}
