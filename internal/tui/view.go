package tui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/policy"
	"github.com/kosha-platform/koshactl/internal/textsafe"
	"github.com/kosha-platform/koshactl/internal/tui/styles"
)

// Smallest usable screen.
const minWidth, minHeight = 40, 10

// View renders the screen. It only formats state: no I/O, no clock reads.
func (m Model) View() tea.View {
	v := tea.NewView(m.Render())
	v.AltScreen = true
	v.WindowTitle = "koshactl dashboard · " + safe(m.opts.ContextName)
	return v
}

// Render returns the screen's text.
func (m Model) Render() string {
	if m.width < minWidth || m.height < minHeight {
		msg := fmt.Sprintf("koshactl dashboard needs at least %dx%d (now %dx%d)", minWidth, minHeight, m.width, m.height)
		return ansi.Wordwrap(msg, max(m.width, 1), "")
	}
	header := m.headerLines()
	var body []string
	bodyHeight := max(m.height-len(header)-2, 1)
	switch {
	case m.prompt != nil:
		body = strings.Split(m.prompt.view(m.width), "\n")
	case m.mode == modeHelp:
		body = m.helpLines()
	case m.mode == modeDetail:
		body = m.detail.view(m.styles)
	case m.mode == modeRequests:
		body = m.requestLines(bodyHeight)
	default:
		body = m.tableLines(bodyHeight)
	}
	if len(body) > bodyHeight {
		body = body[:bodyHeight]
	}
	lines := append(append(header, body...), make([]string, bodyHeight-len(body))...)
	return strings.Join(append(lines, m.statusLine(), m.footer()), "\n")
}

// maxWindowLines is how many planned windows the header shows.
const maxWindowLines = 3

// headerLines are the title, the protected banner, the sources' freshness
// and any error banners.
func (m Model) headerLines() []string {
	st := m.styles
	clock := m.now.UTC().Format("15:04:05Z")
	title := "koshactl dashboard · context " + m.opts.ContextName
	title = ansi.Truncate(title, m.width-len(clock)-1, "…")
	lines := []string{st.Title.Render(title) + strings.Repeat(" ", max(m.width-ansi.StringWidth(title)-len(clock), 1)) + clock}
	if m.opts.Protected {
		text := fmt.Sprintf(" PROTECTED CONTEXT %s · f, c, a and d ask you to type its name ", m.opts.ContextName)
		lines = append(lines, st.Protected.Render(pad(ansi.Truncate(text, m.width, "…"), m.width)))
	}
	if f := m.frozen; f != nil && f.FrozenAt(m.now) {
		// Who, why, the reference and until when: Describe renders each
		// value from the table safe.
		for _, l := range m.wrapBanner(" FROZEN · " + f.Describe(m.now) + " · no chaos, drill or planned window; koshactl freeze lift ") {
			lines = append(lines, st.Protected.Render(pad(l, m.width)))
		}
	}
	fresh := fmt.Sprintf("store %s %s · gauges %s %s · every %s", safe(m.opts.StoreName), m.freshness(m.store),
		safe(m.gaugesName()), m.freshness(m.gauges), human.Age(m.opts.Interval))
	if ansi.StringWidth(fresh) > m.width {
		fresh = fmt.Sprintf("store %s · gauges %s · every %s", m.freshness(m.store), m.freshness(m.gauges), human.Age(m.opts.Interval))
	}
	lines = append(lines, st.Dim.Render(ansi.Truncate(fresh, m.width, "…")))
	if m.opts.Windows != nil {
		ws := m.opts.Windows(m.now)
		for i, w := range ws[:min(len(ws), maxWindowLines)] {
			if i == maxWindowLines-1 && len(ws) > maxWindowLines {
				w = fmt.Sprintf("(+%d more windows: koshactl diff)", len(ws)-i)
			}
			lines = append(lines, st.Dim.Render(ansi.Truncate(safe("window "+w), m.width, "…")))
		}
	}
	for _, s := range []struct {
		name, desc, hint string
		src              source
	}{{"store", m.opts.StoreName, "", m.store}, {"gauges", m.gaugesName(), m.opts.GaugesHint, m.gauges}} {
		if s.src.err == nil {
			continue
		}
		stale := "no data yet"
		if s.src.loaded {
			stale = "showing data from " + human.Age(m.now.Sub(s.src.at)) + " ago"
		}
		if s.hint != "" {
			stale += " (" + s.hint + ")"
		}
		text := fmt.Sprintf(" ✗ %s failed, %s: %s (%s) ", s.name, safe(stale), textsafe.OneLine(s.src.err.Error()), safe(s.desc))
		for _, l := range m.wrapBanner(text) {
			lines = append(lines, st.ErrorBanner.Render(pad(l, m.width)))
		}
	}
	if m.snap != nil && len(m.snap.Warnings) > 0 && m.gauges.err == nil {
		text := "! " + safe(m.snap.Warnings[0])
		if n := len(m.snap.Warnings) - 1; n > 0 {
			text += fmt.Sprintf(" (+%d more)", n)
		}
		for _, l := range m.wrapBanner(textsafe.OneLine(text)) {
			lines = append(lines, st.Warning.Render(l))
		}
	}
	return lines
}

// wrapBanner wraps an error or warning to the screen's width, so its end
// (where an error says its fix) is shown, on at most a third of the screen
// (two lines at least); only a longer one is cut, with "…".
func (m Model) wrapBanner(text string) []string {
	lines := strings.Split(ansi.Wrap(text, m.width, ""), "\n")
	if limit := max(m.height/3, 2); len(lines) > limit {
		lines = lines[:limit]
		lines[limit-1] = ansi.Truncate(lines[limit-1], m.width-1, "") + "…"
	}
	return lines
}

func (m Model) gaugesName() string {
	if m.deps.Gauges == nil {
		return "none"
	}
	return m.deps.Gauges.Describe()
}

// freshness says how old a source's data is.
func (m Model) freshness(s source) string {
	switch {
	case !s.loaded && s.err == nil:
		return "loading…"
	case !s.loaded:
		return "FAILED"
	case s.err != nil:
		return "STALE " + human.Age(m.now.Sub(s.at))
	}
	return human.Age(max(m.now.Sub(s.at), 0)) + " ago"
}

// bodyHeight is how many lines the view below the header may use (the
// status line and the key help take the last two).
func (m Model) bodyHeight() int { return max(m.height-len(m.headerLines())-2, 1) }

// tableHeight is how many dependency rows fit.
func (m Model) tableHeight() int { return max(m.bodyHeight()-1, 1) }

// columns are the table's widths for a screen width.
type columns struct {
	dep, inst, override, strip int
	gauges                     bool
}

const (
	stateW = 9 // "half-open"
	gaugeW = 6 // "forced"
	// instW is the INST column's least width; a fleet of hundreds widens it
	// ("300/300", "199/499+").
	instW = 5
)

func (m Model) columns() columns {
	c := columns{dep: 10, inst: instW, gauges: true}
	for _, r := range m.rows {
		c.dep = max(c.dep, ansi.StringWidth(safe(r.Dependency)))
		c.inst = max(c.inst, len(instCell(r.Gauges)))
	}
	c.dep = min(c.dep, 24)
	c.inst = min(c.inst, 12)
	fixed := 2 + c.dep + 1 + stateW + 1 + 2*(gaugeW+1) + c.inst + 1
	rest := m.width - fixed
	if rest < 24 {
		c.gauges = false
		rest += 2 * (gaugeW + 1)
	}
	if rest < 20 {
		c.override = max(rest, 0)
		return c
	}
	c.strip = min(max(rest/2, 8), 60)
	c.override = min(rest-c.strip-1, 48)
	c.strip = min(rest-c.override-1, 60)
	return c
}

func (m Model) tableLines(height int) []string {
	st := m.styles
	c := m.columns()
	var head strings.Builder
	head.WriteString("  " + pad("DEPENDENCY", c.dep) + " " + pad("STATE", stateW) + " ")
	if c.gauges {
		head.WriteString(pad("WORST", gaugeW) + " " + pad("BEST", gaugeW) + " ")
	}
	head.WriteString(pad("INST", c.inst) + " " + pad("OVERRIDE", c.override))
	if c.strip > 0 {
		label := "LAST " + human.Duration(m.opts.window)
		head.WriteString(" " + padLeft(label, c.strip))
	}
	lines := []string{st.ColumnHeader.Render(head.String())}
	rowsHeight := height - 1
	if len(m.table.visible) == 0 {
		msg := "no dependencies yet"
		if m.table.filter.Value() != "" {
			msg = fmt.Sprintf("no dependency matches %q (esc clears the filter)", m.table.filter.Value())
		}
		return append(lines, st.Dim.Render("  "+msg))
	}
	// The cursor may have been placed for another height; keep it visible.
	t := m.table
	t.clamp(rowsHeight)
	off := t.offset
	for i := off; i < len(m.table.visible) && i < off+rowsHeight; i++ {
		lines = append(lines, m.tableRow(&m.rows[m.table.visible[i]], c, i == m.table.cursor))
	}
	return lines
}

// instCell is the INST column: reporting/seen instances, with "+" when the
// breakdown is partial (the counts are of the instances returned), or "~N"
// samples when there is no breakdown.
func instCell(g metrics.Gauges) string {
	switch {
	case g.Known > 0 && g.Breakdown == metrics.BreakdownPartial:
		return fmt.Sprintf("%d/%d+", g.Reporting, g.Known)
	case g.Known > 0:
		return fmt.Sprintf("%d/%d", g.Reporting, g.Known)
	case g.HasData:
		return fmt.Sprintf("~%d", g.Samples)
	}
	return "-"
}

func (m Model) tableRow(r *row, c columns, selected bool) string {
	st := m.styles
	var b strings.Builder
	b.Grow(256)
	prefix, name := "  ", pad(ansi.Truncate(safe(r.Dependency), c.dep, "…"), c.dep)
	if selected {
		prefix, name = "› ", st.SelectedPaint.Apply(name)
	}
	b.WriteString(prefix)
	b.WriteString(name)
	b.WriteByte(' ')
	b.WriteString(st.StatePaint(r.State).Apply(pad(r.State.Label(), stateW)))
	b.WriteByte(' ')
	g := r.Gauges
	if c.gauges {
		worst, best := "-", "-"
		if g.HasData {
			worst, best = metrics.GaugeLabel(g.Max), metrics.GaugeLabel(g.Min)
		}
		b.WriteString(m.gaugeCell(worst, g.Max, g.HasData))
		b.WriteByte(' ')
		b.WriteString(m.gaugeCell(best, g.Min, g.HasData))
		b.WriteByte(' ')
	}
	b.WriteString(pad(ansi.Truncate(instCell(g), c.inst, "…"), c.inst))
	b.WriteByte(' ')
	ov := m.overrideCell(r)
	text := pad(ansi.Truncate(ov, c.override, "…"), c.override)
	if r.OverrideActive {
		text = st.StatePaint(metrics.Forced).Apply(text)
	} else if r.Override != nil {
		text = st.DimPaint.Apply(text)
	}
	b.WriteString(text)
	if c.strip > 0 {
		b.WriteByte(' ')
		b.WriteString(strip(r.periods, c.strip, st))
	}
	return b.String()
}

func (m Model) gaugeCell(label string, v float64, ok bool) string {
	text := pad(label, gaugeW)
	if !ok {
		return text
	}
	b, valid := metrics.GaugeState(v)
	if !valid {
		return text
	}
	return m.styles.StatePaint(metrics.FromBreaker(b)).Apply(text)
}

// overrideCell: countdown first (what an operator scans for), then who and why.
// A malformed item is marked first: it may hold the breaker until cleared.
func (m Model) overrideCell(r *row) string {
	o := r.Override
	if o == nil {
		return ""
	}
	mark := ""
	if o.Malformed() {
		mark = "malformed! "
	}
	if m.unapproved(o) {
		// Written without asking the table's policy (docs/contracts/policy.md).
		mark += "UNAPPROVED! "
	}
	if r.Fleet != nil && r.Fleet.Verdict == metrics.NotObeyed {
		// The incident inside the incident: some instance ignores it.
		mark += "NOT OBEYED! "
	}
	switch {
	case r.OverrideActive && o.Expires():
		return mark + human.Age(o.ExpiresAt.Sub(m.now)) + " " + shortActor(o.Actor) + " " + safe(o.Reason)
	case r.OverrideActive:
		return mark + "∞ " + shortActor(o.Actor) + " " + safe(o.Reason)
	case o.State != breaker.OverrideStateForcedOpen:
		return mark + "inactive " + shortActor(o.Actor)
	}
	return mark + "expired " + shortActor(o.Actor)
}

// unapproved reports whether o was written since the table had a policy
// without its approval (policy.UnapprovedAt, the rule of audit list).
func (m Model) unapproved(o *breaker.Override) bool {
	return o != nil && policy.UnapprovedAt(o.CreatedAt, o.Approval, m.policySince)
}

// shortActor shortens an actor for a table cell: the session name of an
// assumed-role ARN, the user of user@host; rendered by [safe].
func shortActor(a string) string {
	a = safe(a)
	if strings.HasPrefix(a, "arn:") {
		if i := strings.LastIndexByte(a, '/'); i >= 0 {
			return a[i+1:]
		}
		return a
	}
	if i := strings.IndexByte(a, '@'); i > 0 {
		return a[:i]
	}
	return a
}

func (m Model) statusLine() string {
	if m.table.filtering {
		return inputView(m.table.filter)
	}
	text := m.status
	if q := m.table.filter.Value(); q != "" && text == "" {
		text = fmt.Sprintf("filter: %s (%d of %d) · esc clears", q, len(m.table.visible), len(m.rows))
	}
	text = ansi.Truncate(safe(text), m.width, "…")
	if m.statusIsErr {
		return m.styles.StatusError.Render(text)
	}
	return m.styles.StatusOK.Render(text)
}

func (m Model) footer() string {
	switch {
	case m.prompt != nil:
		return m.help.ShortHelpView(m.keys.PromptHelp())
	case m.table.filtering:
		return m.help.ShortHelpView([]key.Binding{m.keys.Submit, m.keys.Cancel})
	case m.mode == modeDetail:
		return m.help.ShortHelpView(m.keys.DetailHelp())
	case m.mode == modeRequests:
		return m.help.ShortHelpView(m.keys.RequestsHelp())
	case m.mode == modeHelp:
		return m.help.ShortHelpView([]key.Binding{m.keys.Back, m.keys.Quit})
	}
	return m.help.ShortHelpView(m.keys.ShortHelp())
}

func (m Model) helpLines() []string {
	st := m.styles
	lines := []string{st.Title.Render("Keys"), "", m.help.FullHelpView(m.keys.FullHelp()), "",
		st.Title.Render("States"),
	}
	for _, s := range []metrics.State{metrics.Closed, metrics.HalfOpen, metrics.Open, metrics.Forced, metrics.Mixed, metrics.NoData} {
		lines = append(lines, fmt.Sprintf("  %s %s %s", glyphFor(s), st.State(s).Render(pad(s.Label(), stateW)), stateHelp[s]))
	}
	lines = append(lines, "",
		"WORST/BEST: the fleet's highest and lowest gauge, never an average.",
		"INST: instances reporting/seen; ~N: samples (no instance dimension).",
		"/ filters by name, or by a state typed in full (open, mixed, …).")
	out := strings.Split(strings.Join(lines, "\n"), "\n")
	for i, l := range out {
		out[i] = ansi.Truncate(l, m.width, "…")
	}
	return out
}

var stateHelp = map[metrics.State]string{
	metrics.Closed:   "every reporting instance admits calls",
	metrics.HalfOpen: "instances are probing the dependency",
	metrics.Open:     "instances fail calls fast after failures",
	metrics.Forced:   "an override is active (or the gauges report forced)",
	metrics.Mixed:    "instances disagree: see the details (enter)",
	metrics.NoData:   "no instance reports this dependency",
}

func glyphFor(s metrics.State) string {
	if int(s) < len(styles.Glyphs) {
		return styles.Glyphs[s]
	}
	return " "
}

// pad pads plain text with spaces to width cells.
func pad(s string, width int) string {
	if w := ansi.StringWidth(s); w < width {
		return s + strings.Repeat(" ", width-w)
	}
	return s
}

func padLeft(s string, width int) string {
	if w := ansi.StringWidth(s); w < width {
		return strings.Repeat(" ", width-w) + s
	}
	return ansi.Truncate(s, width, "")
}

// inputView renders a text input with what was typed (or pasted: a
// clipboard is not trusted either) shown by the textsafe rule. The value
// itself is kept as typed: the prompt refuses it on enter and says why.
func inputView(in textinput.Model) string {
	v := in.Value()
	if textsafe.IsSafe(v) {
		return in.View()
	}
	typed := []rune(v)
	before := string(typed[:min(in.Position(), len(typed))])
	in.CharLimit = 0
	in.SetValue(safe(v))
	in.SetCursor(textsafe.Len(safe(before)))
	return in.View()
}

// safe renders a value the dashboard did not write itself (anything from
// the store, CloudWatch, a scrape or an error) for the screen: control
// characters and bidi controls become visible escapes ([textsafe.Line]).
// Every such value passes through it before it meets a style or a width.
func safe(s string) string { return textsafe.Line(s) }

// ago renders how long ago t was.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return human.Age(max(now.Sub(t), 0)) + " ago"
}
