package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/impact"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// labelW is the width of the detail's left column of labels.
const labelW = 11

// detailContent is every line of the selected dependency's detail, each
// cut to the screen's width: the title, then one section per aspect.
func (m Model) detailContent() []string {
	r := m.selected()
	if r == nil {
		return []string{m.styles.Dim.Render(fmt.Sprintf("%s is no longer listed (esc goes back)", safe(m.detail.dependency)))}
	}
	sections := [][]string{
		m.detailTitle(r),
		m.detailOverride(r),
		m.detailFleet(r),
		m.detailImpact(r),
		m.detailGauges(r),
		m.detailNotes(r),
		m.detailTimeline(r),
		m.detailInstances(r),
		m.detail.auditLines(m.styles, m.policySince),
	}
	var lines []string
	for _, s := range sections {
		for _, l := range s {
			lines = append(lines, ansi.Truncate(l, m.width, "…"))
		}
	}
	return lines
}

// label is a cell of the left column.
func (m Model) label(s string) string { return m.styles.Label.Render(pad(s, labelW)) }

// detailTitle is the dependency, its state, and the gauges' state when they
// disagree, then a blank line.
func (m Model) detailTitle(r *row) []string {
	st := m.styles
	title := st.Title.Render(safe(r.Dependency)) + " · " + st.State(r.State).Render(r.State.Label())
	if r.OverrideActive {
		title += " (override)"
	}
	if r.GaugeState != r.State {
		title += " · gauges: " + st.State(r.GaugeState).Render(r.GaugeState.Label())
	}
	return []string{title, ""}
}

// detailOverride is who forced the breaker, why and until when, with what
// is malformed in the item.
func (m Model) detailOverride(r *row) []string {
	o := r.Override
	if o == nil {
		return []string{m.label("Override") + "none: every instance follows its own breaker"}
	}
	state := "forced by "
	if !r.OverrideActive {
		state = "was forced by "
	}
	when := expiryText(*o, m.now)
	if o.Expires() {
		when += " (" + o.ExpiresAt.UTC().Format("15:04:05Z") + ")"
	}
	lines := []string{
		m.label("Override") + state + safe(o.Actor) + " " + setAgo(*o, m.now) + " · " + when,
		m.label("") + "reason: " + safe(o.Reason),
	}
	switch a := o.Approval; {
	case m.unapproved(o):
		lines = append(lines, m.label("")+m.styles.Warning.Render("UNAPPROVED: written without asking the table's policy (an older koshactl, another tool, or a role that may write lever items)"))
	case a != nil && a.Request != "":
		lines = append(lines, m.label("")+"approval: "+safe(a.Decision)+" request "+safe(a.Request)+" of "+shortActor(a.Requester)+" by "+safe(strings.Join(a.Approvers, ", ")))
	case a != nil && a.Review != "":
		lines = append(lines, m.label("")+m.styles.Warning.Render("approval: BREAK-GLASS, review "+safe(a.Review)))
	case a != nil:
		lines = append(lines, m.label("")+"approval: "+safe(a.Decision)+" by the table's policy")
	}
	for _, p := range o.Problems {
		lines = append(lines, m.label("")+m.styles.Warning.Render("malformed "+p.Attribute+": "+safe(p.Problem)))
	}
	return lines
}

// detailImpact is what forcing the dependency does to the tools (the
// degradation matrix: internal/impact decides it, the pane only lays it
// out): while an override holds, over the time it has left; otherwise if
// it were forced, per hour. With a rate source, each tool's calls a
// minute and the calls touched.
func (m Model) detailImpact(r *row) []string {
	st := m.styles
	req := impact.Request{Dependencies: []string{r.Dependency}}
	head := "if forced (estimates per hour), per the degradation matrix:"
	if r.OverrideActive && r.Override != nil {
		head = "while forced (until cleared), per the degradation matrix:"
		if r.Override.Expires() {
			req.For = r.Override.ExpiresAt.Sub(m.now)
			head = "while forced (" + human.Age(req.For) + " left), per the degradation matrix:"
		}
	}
	rep := impact.Static(req)
	if m.rates.rates != nil {
		rep.WithRates(*m.rates.rates)
	}
	lines := []string{m.label("Impact") + head}
	// more adds s in the column right of the labels, wrapped at the
	// screen's width: these sentences are the point, not to be cut.
	more := func(s string) {
		for _, l := range strings.Split(ansi.Wordwrap(s, max(m.width-labelW, 20), ""), "\n") {
			lines = append(lines, m.label("")+l)
		}
	}
	for _, t := range rep.Tools {
		text := safe(t.Tool) + " " + string(t.Behaviour)
		if t.Behaviour == impact.Failed || t.Behaviour == impact.Deferred {
			text = st.Warning.Render(text)
		}
		more(text + ": " + safe(t.Detail))
		more("  signal: " + safe(t.Signal.Text))
		if t.CallsPerMinute != nil {
			rate := impact.PerMinute(*t.CallsPerMinute) + " calls/min"
			if t.Estimate != nil {
				rate += " · " + safe(t.Estimate.Text)
			}
			more("  " + rate)
		}
	}
	for _, d := range rep.Dependencies {
		switch {
		case !d.InMatrix || !d.Obeyed:
			more(st.Warning.Render(safe(d.Note)))
		case len(rep.Tools) == 0:
			more("no tool changes behaviour")
		}
		if d.Platform != "" {
			more(safe(d.Platform) + " (" + safe(d.PlatformSignal) + ")")
		}
		if len(d.WhenDown) > 0 {
			var down []string
			for _, e := range d.WhenDown {
				down = append(down, e.Tool+" "+string(e.Behaviour))
			}
			more(st.Dim.Render("when " + safe(d.Dependency) + " itself is down: " + strings.Join(down, ", ")))
		}
	}
	if src := m.deps.Rates; src != nil {
		switch rs := m.rates; {
		case rs.rates == nil && rs.err != nil:
			more(st.Warning.Render("call rates: could not read " + safe(src.Describe()) + ": " + textsafe.OneLine(rs.err.Error())))
		case rs.rates == nil:
			more(st.Dim.Render("call rates: measuring (" + safe(src.Describe()) + ")…"))
		default:
			more(st.Dim.Render("call rates: " + safe(rs.rates.Source) + ", " + safe(rs.rates.Method) + ", read " + ago(m.now, rs.rates.ReadAt)))
			for _, w := range rs.rates.Warnings {
				more(st.Warning.Render("call rates: " + safe(w)))
			}
			if rs.err != nil {
				more(st.Warning.Render("the last read of the call rates failed: " + textsafe.OneLine(rs.err.Error())))
			}
		}
	}
	return lines
}

// detailFleet is whether the fleet follows the last change; a warning once
// it is past the bound.
func (m Model) detailFleet(r *row) []string {
	f := r.Fleet
	if f == nil {
		return nil
	}
	text := f.Verdict.Label() + ": " + safe(f.Summary())
	switch f.Verdict {
	case metrics.Converging:
		text += fmt.Sprintf(" · %s of %s", human.Duration(f.Elapsed.Truncate(time.Second)), human.Duration(f.Bound))
	case metrics.Confirmed:
	default:
		text = m.styles.Warning.Render(text + " · past the " + human.Duration(f.Bound) + " bound")
	}
	return []string{m.label("Fleet") + text}
}

// detailGauges is the fleet's worst and best gauge, how many instances
// report, and how many are in each state.
func (m Model) detailGauges(r *row) []string {
	g := r.Gauges
	if !g.HasData {
		return []string{m.label("Gauges") + "no recent data"}
	}
	st := m.styles
	parts := []string{
		"worst " + st.State(stateOf(g.Max)).Render(metrics.GaugeLabel(g.Max)),
		"best " + st.State(stateOf(g.Min)).Render(metrics.GaugeLabel(g.Min)),
	}
	if rep := reportingText(g); rep != "" {
		parts = append(parts, rep)
	}
	parts = append(parts, human.Count(int64(g.Samples), "sample"))
	var counts []string
	for v, n := range g.ByState {
		if n > 0 {
			s := stateOf(float64(v))
			counts = append(counts, st.State(s).Render(fmt.Sprintf("%d %s", n, s.Label())))
		}
	}
	counts = append(counts, "newest "+ago(m.now, g.LatestAt))
	return []string{m.label("Gauges") + strings.Join(parts, " · "), m.label("") + strings.Join(counts, ", ")}
}

// reportingText says how many instances report, "" when the source has no
// instance breakdown.
func reportingText(g metrics.Gauges) string {
	switch {
	case g.Known > 0 && g.Breakdown == metrics.BreakdownPartial:
		return fmt.Sprintf("%d/%d instances reporting (partial)", g.Reporting, g.Known)
	case g.Known > 0:
		return fmt.Sprintf("%d/%d instances reporting", g.Reporting, g.Known)
	case g.Breakdown == metrics.BreakdownNotFetched:
		return "instance breakdown not read yet"
	}
	return ""
}

// detailNotes are the merge's notes, wrapped beside one "Note" label.
func (m Model) detailNotes(r *row) []string {
	var lines []string
	for i, n := range r.Notes {
		for j, part := range strings.Split(ansi.Wordwrap(safe(n), max(m.width-labelW, 20), ""), "\n") {
			l := ""
			if i == 0 && j == 0 {
				l = "Note"
			}
			lines = append(lines, m.label(l)+m.styles.Warning.Render(part))
		}
	}
	return lines
}

// detailTimeline is the fleet's worst state over the window, with its axis.
func (m Model) detailTimeline(r *row) []string {
	w := min(len(r.periods), max(m.width-labelW-2, 10))
	return []string{"",
		m.label("Timeline") + strip(r.periods, w, m.styles),
		m.label("") + m.styles.Dim.Render(pad("-"+human.Duration(m.opts.window), w-3)+"now")}
}

// detailInstances is one line per instance: its breaker, its timeline and
// when it was last seen; nothing when the source has no breakdown.
func (m Model) detailInstances(r *row) []string {
	if len(r.Instances) == 0 {
		return nil
	}
	title := fmt.Sprintf("Instances (%d)", len(r.Instances))
	if r.Gauges.Breakdown == metrics.BreakdownPartial {
		title = fmt.Sprintf("Instances (%d returned, partial: the fleet has ~%d samples a minute)", len(r.Instances), r.Gauges.Samples)
	}
	lines := []string{"", m.styles.Title.Render(title)}
	nameW := 8
	for _, in := range r.Instances {
		nameW = max(nameW, min(ansi.StringWidth(safe(in.Instance)), 24))
	}
	_, _, n := m.windowGrid()
	stripW := max(min(n, m.width-nameW-stateW-20), 0)
	for _, in := range r.Instances {
		lines = append(lines, m.instanceLine(in, nameW, stripW))
	}
	return lines
}

// instanceLine is one instance: name, breaker, timeline (when stripW > 0)
// and when it was seen, or that it went silent.
func (m Model) instanceLine(in metrics.InstanceStatus, nameW, stripW int) string {
	st := m.styles
	s := metrics.FromBreaker(in.State)
	seen := "seen " + ago(m.now, in.LastSeen)
	if !in.Reporting {
		s = metrics.NoData
		seen = "SILENT, last " + ago(m.now, in.LastSeen)
	}
	line := "  " + pad(ansi.Truncate(safe(in.Instance), nameW, "…"), nameW) + " " + st.State(s).Render(pad(metrics.FromBreaker(in.State).Label(), stateW))
	if stripW > 0 {
		start, period, n := m.windowGrid()
		line += " " + strings.TrimLeft(strip(periodStates(in.Timeline, start, period, n), stripW, st), " ")
	}
	return line + " " + st.Dim.Render(seen)
}

// stateOf converts a gauge value to a display state.
func stateOf(v float64) metrics.State {
	b, ok := metrics.GaugeState(v)
	if !ok {
		return metrics.NoData
	}
	return metrics.FromBreaker(b)
}
