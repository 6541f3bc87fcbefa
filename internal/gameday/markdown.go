package gameday

import (
	"fmt"
	"io"
	"strings"
)

// md escapes one value for Markdown (GitHub's flavor included) as little
// as keeps it text, so the raw summary still reads well in a terminal or a
// chat message: one safe line (see [one]); &, < and > as HTML entities, so
// no value is a tag or an entity; a backslash before what opens inline
// syntax (\ ` * _ [ ] | ~ $: code, emphasis, links and images, table cells,
// strikethrough, math) and before @ (a mention, an e-mail autolink); the :
// of :// and the . of www. (no extended autolink); and a first character
// that would start a block (a heading, quote, list or rule) where a value
// begins a line. Apostrophes, parentheses, colons and dots stay as they are.
func md(s string) string {
	s = one(s)
	var b strings.Builder
	b.Grow(len(s) + len(s)/8)
	if n := blockMarker(s); n > 0 {
		b.WriteString(s[:n-1])
		b.WriteByte('\\')
		b.WriteByte(s[n-1])
		s = s[n:]
	}
	for i, r := range s {
		switch {
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case strings.ContainsRune("\\`*_[]|~$@", r),
			r == ':' && strings.HasPrefix(s[i:], "://"),
			r == '.' && i >= 3 && strings.EqualFold(s[i-3:i], "www"):
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// blockMarker is the length of s's prefix ending in a character that
// would start a block at the beginning of a line (# > - + = or the . or )
// after a number), 0 when there is none.
func blockMarker(s string) int {
	if s == "" {
		return 0
	}
	if strings.IndexByte("#>-+=", s[0]) >= 0 {
		return 1
	}
	n := 0
	for n < len(s) && n < 10 && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	if n > 0 && n < len(s) && (s[n] == '.' || s[n] == ')') {
		return n + 1
	}
	return 0
}

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
		did := joinNonEmpty(": ", s.Description, firstOf(s.Error, s.Detail))
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
		rows = append(rows, []string{c.Name, c.Kind, c.Status, firstOf(c.Error, c.Detail)})
	}
	table("Preflight", []string{"check", "kind", "result", "observed"}, rows)
	rows = nil
	for _, l := range r.Levers {
		rows = append(rows, []string{l.ID, l.Subject, l.Why, l.Status, l.Pulled, joinNonEmpty(" by ", l.Back, l.By), l.Held, firstOf(l.Error, l.Detail)})
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
		rows = append(rows, []string{c.Phase, c.Name, c.Status, firstOf(c.Error, c.Detail)})
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
