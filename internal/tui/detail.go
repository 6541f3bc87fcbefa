package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/metrics"
)

// detailState is the detail sub-view of one dependency.
type detailState struct {
	dependency string
	scroll     int
	loading    bool
	records    []audit.Record
	err        error
}

// detailLines renders one dependency: override, fleet summary, notes,
// timeline, per-instance breakdown and recent audit records.
func (m Model) detailLines(height int) []string {
	st := m.styles
	r := m.selected()
	if r == nil {
		return []string{st.Dim.Render(fmt.Sprintf("%s is no longer listed (esc goes back)", safe(m.detail.dependency)))}
	}
	label := func(s string) string { return st.Label.Render(pad(s, 11)) }
	title := st.Title.Render(safe(r.Dependency)) + " · " + st.State(r.State).Render(r.State.Label())
	if r.OverrideActive {
		title += " (override)"
	}
	if r.GaugeState != r.State {
		title += " · gauges: " + st.State(r.GaugeState).Render(r.GaugeState.Label())
	}
	lines := []string{title, ""}

	if o := r.Override; o != nil {
		state := "forced by "
		if !r.OverrideActive {
			state = "was forced by "
		}
		when := expiryText(*o, m.now)
		if o.Expires() {
			when += " (" + o.ExpiresAt.UTC().Format("15:04:05Z") + ")"
		}
		lines = append(lines,
			label("Override")+state+safe(o.Actor)+" "+setAgo(*o, m.now)+" · "+when,
			label("")+"reason: "+safe(o.Reason))
		for _, p := range o.Problems {
			lines = append(lines, label("")+st.Warning.Render("malformed "+p.Attribute+": "+safe(p.Problem)))
		}
	} else {
		lines = append(lines, label("Override")+"none: every instance follows its own breaker")
	}

	if f := r.Fleet; f != nil {
		text := f.Verdict.Label() + ": " + safe(f.Summary())
		switch f.Verdict {
		case metrics.Converging:
			text += fmt.Sprintf(" · %s of %s", human.Duration(f.Elapsed.Truncate(time.Second)), human.Duration(f.Bound))
			lines = append(lines, label("Fleet")+text)
		case metrics.Confirmed:
			lines = append(lines, label("Fleet")+text)
		default:
			lines = append(lines, label("Fleet")+st.Warning.Render(text+" · past the "+human.Duration(f.Bound)+" bound"))
		}
	}
	g := r.Gauges
	switch {
	case !g.HasData:
		lines = append(lines, label("Gauges")+"no recent data")
	default:
		parts := []string{
			"worst " + st.State(stateOf(g.Max)).Render(metrics.GaugeLabel(g.Max)),
			"best " + st.State(stateOf(g.Min)).Render(metrics.GaugeLabel(g.Min)),
		}
		switch {
		case g.Known > 0 && g.Breakdown == metrics.BreakdownPartial:
			parts = append(parts, fmt.Sprintf("%d/%d instances reporting (partial)", g.Reporting, g.Known))
		case g.Known > 0:
			parts = append(parts, fmt.Sprintf("%d/%d instances reporting", g.Reporting, g.Known))
		case g.Breakdown == metrics.BreakdownNotFetched:
			parts = append(parts, "instance breakdown not read yet")
		}
		parts = append(parts, fmt.Sprintf("%d samples", g.Samples))
		lines = append(lines, label("Gauges")+strings.Join(parts, " · "))
		var counts []string
		for v, n := range g.ByState {
			if n > 0 {
				s := stateOf(float64(v))
				counts = append(counts, st.State(s).Render(fmt.Sprintf("%d %s", n, s.Label())))
			}
		}
		counts = append(counts, "newest "+ago(m.now, g.LatestAt))
		lines = append(lines, label("")+strings.Join(counts, ", "))
	}
	for i, n := range r.Notes {
		l := ""
		if i == 0 {
			l = "Note"
		}
		for j, part := range strings.Split(ansi.Wordwrap(safe(n), max(m.width-11, 20), ""), "\n") {
			if j > 0 {
				l = ""
			}
			lines = append(lines, label(l)+st.Warning.Render(part))
		}
	}

	stripW := min(len(r.periods), max(m.width-13, 10))
	lines = append(lines, "",
		label("Timeline")+strip(r.periods, stripW, st),
		label("")+st.Dim.Render(pad("-"+human.Duration(m.opts.window), stripW-3)+"now"))

	if len(r.Instances) > 0 {
		title := fmt.Sprintf("Instances (%d)", len(r.Instances))
		if g.Breakdown == metrics.BreakdownPartial {
			title = fmt.Sprintf("Instances (%d returned, partial: the fleet has ~%d samples a minute)", len(r.Instances), g.Samples)
		}
		lines = append(lines, "", st.Title.Render(title))
		start, period, n := m.windowGrid()
		nameW := 8
		for _, in := range r.Instances {
			nameW = max(nameW, min(ansi.StringWidth(safe(in.Instance)), 24))
		}
		instStrip := max(min(n, m.width-nameW-stateW-20), 0)
		for _, in := range r.Instances {
			s := metrics.FromBreaker(in.State)
			seen := "seen " + ago(m.now, in.LastSeen)
			if !in.Reporting {
				s = metrics.NoData
				seen = "SILENT, last " + ago(m.now, in.LastSeen)
			}
			line := "  " + pad(ansi.Truncate(safe(in.Instance), nameW, "…"), nameW) + " " + st.State(s).Render(pad(metrics.FromBreaker(in.State).Label(), stateW))
			if instStrip > 0 {
				line += " " + strings.TrimLeft(strip(periodStates(in.Timeline, start, period, n), instStrip, st), " ")
			}
			lines = append(lines, line+" "+st.Dim.Render(seen))
		}
	}

	lines = append(lines, "", st.Title.Render("Recent audit"))
	switch {
	case m.detail.loading:
		lines = append(lines, st.Dim.Render("  loading…"))
	case m.detail.err != nil:
		lines = append(lines, st.StatusError.Render("  could not read the audit log: "+oneLine(m.detail.err)))
	case len(m.detail.records) == 0:
		lines = append(lines, st.Dim.Render("  no changes recorded in the retention period"))
	}
	actorW := 0
	for _, rec := range m.detail.records {
		actorW = max(actorW, min(ansi.StringWidth(safe(rec.Actor)), 40))
	}
	for _, rec := range m.detail.records {
		action := safe(strings.TrimPrefix(rec.Action, "breaker."))
		lines = append(lines, fmt.Sprintf("  %s  %s  %s  %s", rec.Time.UTC().Format("01-02 15:04Z"), pad(action, 10),
			pad(ansi.Truncate(safe(rec.Actor), actorW, "…"), actorW), safe(rec.Reason)))
	}

	for i, l := range lines {
		lines[i] = ansi.Truncate(l, m.width, "…")
	}
	// Scroll, never past the end; say when more is below.
	scroll := min(m.detail.scroll, max(len(lines)-height, 0))
	lines = lines[scroll:]
	if len(lines) > height && height > 0 {
		lines = append(lines[:height-1], st.Dim.Render(fmt.Sprintf("  ↓ %d more lines (j/k scroll)", len(lines)-height+1)))
	}
	return lines
}

// stateOf converts a gauge value to a display state.
func stateOf(v float64) metrics.State {
	b, ok := metrics.GaugeState(v)
	if !ok {
		return metrics.NoData
	}
	return metrics.FromBreaker(b)
}
