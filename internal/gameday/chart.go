package gameday

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// The charts' geometry, in SVG user units (the SVG scales to the page).
const (
	chartWidth  = 1000
	plotX       = 240.0
	plotW       = 700.0
	rowH        = 20.0
	headingH    = 24.0
	topMargin   = 34.0
	axisH       = 30.0
	labelChars  = 34
	barH        = 12.0
	markRadius  = 4.0
	firedRadius = 7.0
)

// axis maps instants to x: from the run's start to its last record,
// stretched to the deadline and the levers' expiries when they are near
// enough to fit without crushing the run.
type axis struct {
	t0, t1 time.Time
}

func newAxis(j *drill.Journal, end time.Time) axis {
	a := axis{t0: j.StartedAt, t1: end}
	if a.t1.Sub(a.t0) < time.Second {
		a.t1 = a.t0.Add(time.Second)
	}
	span := a.t1.Sub(a.t0)
	near := func(t time.Time) {
		if t.After(a.t1) && t.Sub(a.t0) <= span*8/5 {
			a.t1 = t
		}
	}
	near(j.Deadline)
	rec := recoveredBy(j)
	for _, rb := range j.Rollbacks {
		if _, _, ok := leverBack(rec, rb); !ok && rb.ExpiresAt != nil {
			near(*rb.ExpiresAt)
		}
	}
	return a
}

func (a axis) x(t time.Time) float64 {
	f := float64(t.Sub(a.t0)) / float64(a.t1.Sub(a.t0))
	return plotX + min(max(f, 0), 1)*plotW
}

func (a axis) within(t time.Time) bool { return !t.Before(a.t0) && !t.After(a.t1) }

// chart is one SVG: labeled rows of bars and marks on a time axis.
type chart struct {
	Width, Height int
	PlotX, PlotW  float64
	PlotRight     float64
	AxisY         float64
	Rows          []chartRow
	Ticks         []tick
	Lines         []vline
	// Note is written at the axis's right end (a deadline beyond it).
	Note string
}

type chartRow struct {
	// Y is the row's top; TextY its label's baseline.
	Y, TextY, BarY, MidY float64
	Label, Title         string
	Heading              bool
	Bars                 []bar
	Marks                []mark
}

type bar struct {
	X, W  float64
	Class string
	Title string
	// Text is written after the bar (or before it, near the right edge).
	Text   string
	TextX  float64
	Anchor string
	// Clipped: the bar goes on past the axis (an arrow shows it).
	Clipped bool
	// TextClass is bar-text, or bar-text-in for text drawn on the bar.
	TextClass string
}

type mark struct {
	X, R  float64
	Class string
	Title string
}

type tick struct {
	X     float64
	Label string
}

type vline struct {
	X          float64
	Class      string
	LabelClass string
	Label      string
	Anchor     string
	LabelY     float64
}

// builder lays out rows top to bottom.
type builder struct {
	c *chart
	a axis
	y float64
}

func newBuilder(a axis) *builder {
	return &builder{c: &chart{Width: chartWidth, PlotX: plotX, PlotW: plotW, PlotRight: plotX + plotW}, a: a, y: topMargin}
}

func (b *builder) heading(label string) {
	b.c.Rows = append(b.c.Rows, chartRow{Y: b.y, TextY: b.y + 16, Label: one(label), Heading: true})
	b.y += headingH
}

func (b *builder) row(label string) *chartRow {
	full := oneOf(label, maxTitle)
	b.c.Rows = append(b.c.Rows, chartRow{Y: b.y, TextY: b.y + 14, BarY: b.y + (rowH-barH)/2, MidY: b.y + rowH/2,
		Label: textsafe.Shorten(full, labelChars), Title: full})
	b.y += rowH
	return &b.c.Rows[len(b.c.Rows)-1]
}

// span adds a bar from t0 to t1 (to the axis's end, clipped, when t1 is
// beyond it).
func (b *builder) span(r *chartRow, t0, t1 time.Time, class, title, text string) {
	x0, x1 := b.a.x(t0), b.a.x(t1)
	w := max(x1-x0, 2)
	br := bar{X: x0, W: w, Class: class, Title: oneOf(title, maxTitle), Text: oneOf(text, maxTitle), Clipped: t1.After(b.a.t1)}
	br.placeText(x0+w, textRoom(br.Text))
	if class == "lapsed" && br.TextClass == "bar-text-in" {
		br.TextClass = "bar-text-lapsed" // red on its pale fill
	}
	r.Bars = append(r.Bars, br)
}

// textRoom is about how wide a bar's text is drawn.
func textRoom(s string) float64 { return float64(textsafe.Len(s))*5.6 + 12 }

// placeText puts the bar's text after end when it fits before the axis's
// end, else before the bar when it fits after the labels, else inside it.
func (br *bar) placeText(end, room float64) {
	switch {
	case end+room < plotX+plotW:
		br.TextX, br.Anchor, br.TextClass = end+4, "start", "bar-text"
	case br.X-room > plotX:
		br.TextX, br.Anchor, br.TextClass = br.X-4, "end", "bar-text"
	default:
		br.TextX, br.Anchor, br.TextClass = br.X+6, "start", "bar-text-in"
	}
}

func (b *builder) mark(r *chartRow, t time.Time, radius float64, class, title string) {
	r.Marks = append(r.Marks, mark{X: b.a.x(t), R: radius, Class: class, Title: oneOf(title, maxTitle)})
}

func (b *builder) line(t time.Time, class, label string) {
	if !b.a.within(t) {
		return
	}
	x := b.a.x(t)
	anchor := "middle"
	switch {
	case x < plotX+40:
		anchor = "start"
	case x > plotX+plotW-40:
		anchor = "end"
	}
	b.c.Lines = append(b.c.Lines, vline{X: x, Class: class, Label: one(label), Anchor: anchor, LabelClass: "lbl-" + strings.TrimPrefix(class, "l-")})
}

// finish closes the chart: axis ticks below the rows, lines spanning them.
func (b *builder) finish() *chart {
	c := b.c
	c.AxisY = b.y + 4
	c.Height = int(c.AxisY + axisH)
	step := tickStep(b.a.t1.Sub(b.a.t0))
	for d := time.Duration(0); b.a.t0.Add(d).Compare(b.a.t1) <= 0; d += step {
		label := "+" + dur(d)
		if d == 0 {
			label = b.a.t0.UTC().Format("15:04:05Z")
		}
		c.Ticks = append(c.Ticks, tick{X: b.a.x(b.a.t0.Add(d)), Label: label})
	}
	// Labels of lines that would overlap go on a second and third level.
	sort.SliceStable(c.Lines, func(i, k int) bool { return c.Lines[i].X < c.Lines[k].X })
	lastX := []float64{-1e9, -1e9, -1e9}
	for i := range c.Lines {
		level := 0
		for level < len(lastX)-1 && c.Lines[i].X-lastX[level] < 110 {
			level++
		}
		lastX[level] = c.Lines[i].X
		c.Lines[i].LabelY = 12 + float64(level)*10
	}
	return c
}

// tickStep is a round step giving at most about eight ticks over span.
func tickStep(span time.Duration) time.Duration {
	for _, s := range []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second,
		30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour,
		2 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour} {
		if span/s <= 8 {
			return s
		}
	}
	return max(span/8, time.Hour)
}

// moreRow is the last row of a section cut at maxRows: how many rows the
// journal holds past it.
func (b *builder) moreRow(n int, what string) {
	if n > 0 {
		b.row(fmt.Sprintf("… and %d more %s", n, what))
	}
}

// checkRows draws checks: the hypothesis's held or did not hold; the
// preflight's guards, each by its role and name, could or could not be
// evaluated (a stop condition's "held" would read as the event it guards
// against).
func checkRows(b *builder, title string, checks []drill.CheckRecord) {
	if len(checks) == 0 {
		return
	}
	b.heading(title)
	for i, c := range checks {
		if i == maxRows {
			b.moreRow(len(checks)-i, "checks")
			break
		}
		r := b.row(c.Label())
		held, notHeld := "held", "did not hold"
		if c.Phase == drill.PhasePreflight {
			held, notHeld = "can be evaluated", "cannot be evaluated"
		}
		class, status := "ok", held
		if !c.OK {
			class, status = "fail", notHeld
		}
		end := c.StartedAt
		if c.EndedAt != nil {
			end = *c.EndedAt
		}
		b.span(r, c.StartedAt, end, class, fmt.Sprintf("%s: %s in %s (%s): %s %s", c.Label(), status, dur(secs(c.DurationSeconds)), human.Count(int64(c.Checks), "check"),
			c.Error, c.Detail), status)
	}
}

// timelineChart draws the run: checks, steps, levers, stop conditions,
// recoveries, with the start, the end, the stop and the deadline as lines.
func timelineChart(j *drill.Journal, a axis) *chart {
	b := newBuilder(a)
	end := a.t1
	checkRows(b, "Preflight", j.Preflight)
	checkRows(b, "Hypothesis before", j.Hypothesis.Before)
	if len(j.Steps) > 0 {
		b.heading("Steps")
	}
	died := lastRecord(j, false)
	for i, s := range j.Steps {
		if i == maxRows {
			b.moreRow(len(j.Steps)-i, "steps")
			break
		}
		r := b.row(s.ID + " (" + s.Kind + ")")
		if s.StartedAt == nil {
			continue
		}
		// A step the run's process did not finish ends at its last record.
		stepEnd, text := died, s.Status+" (no end recorded)"
		if s.EndedAt != nil {
			stepEnd, text = *s.EndedAt, s.Status+" "+dur(secs(s.DurationSeconds))
		}
		b.span(r, *s.StartedAt, stepEnd, "st-"+statusClass(s.Status), fmt.Sprintf("%s: %s: %s %s", s.ID, text, cmp.Or(s.Error, s.Detail), s.Description), text)
	}
	if len(j.Rollbacks) > 0 {
		b.heading("Levers: pulled → put back")
	}
	rec := recoveredBy(j)
	for i, rb := range j.Rollbacks {
		if i == maxRows {
			b.moreRow(len(j.Rollbacks)-i, "levers")
			break
		}
		r := b.row(rb.ID + " " + rb.Subject)
		if at, by, ok := leverBack(rec, rb); ok {
			held := at
			if rb.StartedAt != nil {
				held = *rb.StartedAt
			}
			b.span(r, rb.RegisteredAt, held, "lever", fmt.Sprintf("%s %s: pulled at %s, put back at %s by %s (held %s)", rb.ID, rb.Subject,
				clock(rb.RegisteredAt), clock(at), by, dur(at.Sub(rb.RegisteredAt))), "")
			if rb.StartedAt != nil {
				b.span(r, *rb.StartedAt, at, "rollback", fmt.Sprintf("%s rollback: %s in %s: %s", rb.ID, rb.Status, dur(at.Sub(*rb.StartedAt)), rb.Detail), "")
			}
			// The text goes after the rollback, or on the lever's bar.
			text := one("held " + dur(at.Sub(rb.RegisteredAt)))
			on, last := &r.Bars[0], &r.Bars[len(r.Bars)-1]
			end := last.X + last.W
			if end+textRoom(text) < plotX+plotW {
				on = last
			}
			on.Text = text
			on.placeText(end, textRoom(text))
			continue
		}
		until, text := end, "NOT put back"
		if rb.ExpiresAt != nil {
			until, text = *rb.ExpiresAt, "NOT put back: lapses "+clock(*rb.ExpiresAt)
		}
		b.span(r, rb.RegisteredAt, until, "lapsed", fmt.Sprintf("%s %s: %s %s", rb.ID, rb.Subject, rb.Status, cmp.Or(rb.Error, text)), text)
	}
	stopRows(b, j)
	guardRows(b, j)
	if len(j.Recoveries) > 0 {
		b.heading("Recovery")
		r := b.row("drill recover")
		// One mark per kind of result per column, as stop conditions.
		for _, class := range []string{"ok", "fail"} {
			var rvs []drill.RecoveryRecord
			var ats []time.Time
			for _, rv := range j.Recoveries {
				if rv.OK == (class == "ok") {
					rvs, ats = append(rvs, rv), append(ats, rv.At)
				}
			}
			b.marks(r, ats, firedRadius, class, func(first, last, n int) string {
				rv := rvs[first]
				if n == 1 {
					return fmt.Sprintf("drill recover at %s by %s: %s", clock(rv.At), rv.Actor, rv.Detail)
				}
				return fmt.Sprintf("%d drill recover runs from %s to %s; the first by %s: %s", n, clock(rv.At), clock(rvs[last].At), rv.Actor, rv.Detail)
			})
		}
	}
	checkRows(b, "Hypothesis after", j.Hypothesis.After)
	runLines(b, j)
	c := b.finish()
	if a.within(j.Deadline) {
		c.Lines = append(c.Lines, vline{X: a.x(j.Deadline), Class: "l-deadline", LabelClass: "lbl-deadline", Label: "deadline", Anchor: "end", LabelY: 32})
	} else if j.Deadline.After(a.t1) {
		c.Note = "deadline " + clock(j.Deadline) + " (+" + dur(j.Deadline.Sub(j.StartedAt)) + ") →"
	}
	return c
}

// runLines marks the run's start, end, stop and recoveries.
func runLines(b *builder, j *drill.Journal) {
	b.line(j.StartedAt, "l-start", "start")
	if j.EndedAt != nil {
		b.line(*j.EndedAt, "l-end", "end")
	} else {
		b.line(lastRecord(j, false), "l-stop", "died (last record)")
	}
	if j.Stop != nil {
		b.line(j.Stop.At, "l-stop", "stopped: "+textsafe.Shorten(one(j.Stop.Condition), 24))
	}
	if g := j.Guard; g != nil {
		label := "refused: "
		if g.Phase != drill.GuardPreflight {
			label = "guard lost: "
		}
		b.line(g.At, "l-stop", label+textsafe.Shorten(one(g.Condition), 24))
	}
	for i, rv := range j.Recoveries {
		if i == maxRecoveryLines {
			break // the recovery row's marks show the rest
		}
		b.line(rv.At, "l-end", "recovered")
	}
}

// maxRecoveryLines is how many recoveries get a line across the chart.
const maxRecoveryLines = 10

// guardRows draws a lost guard: from the first failed evaluation in a row
// to the moment its grace ran out.
func guardRows(b *builder, j *drill.Journal) {
	g := j.Guard
	if g == nil || g.Since == nil {
		return
	}
	b.heading("Guard lost")
	r := b.row(g.Role + " " + g.Condition)
	text := "unevaluable, " + human.Count(int64(g.Polls), "poll")
	b.span(r, *g.Since, g.At, "st-warn", fmt.Sprintf("%s %s could not be evaluated from %s to %s (%s): %s; fix: %s", g.Role, g.Condition,
		clock(*g.Since), clock(g.At), human.Count(int64(g.Polls), "poll"), g.Cause, g.Fix), text)
	b.mark(r, g.At, firedRadius, "fired", fmt.Sprintf("%s lost at %s: %s", g.Condition, clock(g.At), g.Cause))
}

// stopRows draws one row per stop condition: a dot per evaluation (grey
// did not hold, amber could not be evaluated) and the one that fired.
func stopRows(b *builder, j *drill.Journal) {
	var names []string
	seen := map[string]bool{}
	add := func(name string) {
		if !seen[name] {
			seen[name], names = true, append(names, name)
		}
	}
	for _, e := range j.StopEvaluations {
		add(e.Condition)
	}
	if j.Stop != nil {
		add(j.Stop.Condition)
	}
	if len(names) == 0 {
		return
	}
	b.heading("Stop conditions")
	more := 0
	if len(names) > maxStopRows {
		more = len(names) - maxStopRows
		names = names[:maxStopRows]
		if j.Stop != nil && !slices.Contains(names, j.Stop.Condition) { // the one that fired is drawn, whatever the cap
			names[maxStopRows-1] = j.Stop.Condition
		}
	}
	defer b.moreRow(more, "stop conditions")
	for _, name := range names {
		r := b.row(name)
		// One mark per kind of result per column of the plot: a run of a
		// quarter of a million evaluations draws as a few hundred marks.
		for _, class := range []string{"eval", "eval-err", "fail"} {
			var evs []drill.StopEvaluation
			var ats []time.Time
			for _, e := range j.StopEvaluations {
				if c, _ := evaluation(e); e.Condition == name && c == class {
					evs, ats = append(evs, e), append(ats, e.At)
				}
			}
			b.marks(r, ats, markRadius, class, func(first, last, n int) string {
				e := evs[first]
				_, said := evaluation(e)
				if n == 1 {
					return fmt.Sprintf("%s at %s: %s %s", name, clock(e.At), said, e.Detail)
				}
				return fmt.Sprintf("%s: %d evaluations from %s to %s: %s; the first: %s", name, n, clock(e.At), clock(evs[last].At), said, e.Detail)
			})
		}
		if j.Stop != nil && j.Stop.Condition == name {
			parts := []string{fmt.Sprintf("%s fired at %s: %s", name, clock(j.Stop.At), j.Stop.Detail)}
			for _, al := range j.Stop.Alarms {
				parts = append(parts, fmt.Sprintf("alarm %s %s since %s: %s", al.Name, al.State, clock(al.Since), al.Reason))
			}
			b.mark(r, j.Stop.At, firedRadius, "fired", joinFolded(parts, "; "))
		}
	}
}

// evaluation is how a stop condition's evaluation is drawn (grey when it
// did not hold, amber when it could not be evaluated, red when it held)
// and said.
func evaluation(e drill.StopEvaluation) (class, said string) {
	switch {
	case e.Error != "":
		return "eval-err", "could not be evaluated: " + e.Error
	case e.Holds:
		return "fail", "held"
	}
	return "eval", "did not hold"
}

// gaugeStates are the classes of the breaker_state strips.
var gaugeStates = map[string]string{"closed": "g-closed", "half_open": "g-half", "open": "g-open", "forced_open": "g-forced"}

// gaugeChart draws each dependency's instances as strips colored by their
// breaker_state, from one read to the next. It is nil without a reading.
func gaugeChart(j *drill.Journal, samples []drill.GaugeSample, a axis) *chart {
	byDep := map[string][]drill.GaugeSample{}
	for _, s := range samples {
		byDep[s.Dependency] = append(byDep[s.Dependency], s)
	}
	b := newBuilder(a)
	drawn, omitted, omittedDeps := 0, 0, 0
	for _, dep := range slices.Sorted(maps.Keys(byDep)) {
		ss := byDep[dep]
		seen := map[string]bool{}
		for _, s := range ss {
			for _, in := range s.Instances {
				seen[in.Instance] = true
			}
		}
		instances := slices.Sorted(maps.Keys(seen))
		if len(instances) == 0 {
			continue
		}
		// At most maxGaugeRows strips in all: the rest are counted.
		if room := maxGaugeRows - drawn; len(instances) > room {
			omitted += len(instances) - room
			if room == 0 {
				omittedDeps++
				continue
			}
			instances = instances[:room]
		}
		drawn += len(instances)
		sort.SliceStable(ss, func(i, k int) bool { return ss[i].At.Before(ss[k].At) })
		b.heading(dep)
		gap := typicalGap(ss)
		var failed []time.Time
		var why []string
		for _, s := range ss {
			if s.Error != "" {
				failed, why = append(failed, s.At), append(why, s.Error)
			}
		}
		for _, inst := range instances {
			r := b.row(inst)
			strip(b, r, dep, inst, stateRuns(ss, inst, gap))
			b.marks(r, failed, markRadius, "eval-err", func(first, last, n int) string {
				if n == 1 {
					return dep + ": read failed at " + clock(failed[first]) + ": " + why[first]
				}
				return fmt.Sprintf("%s: %d reads failed from %s to %s; the first: %s", dep, n, clock(failed[first]), clock(failed[last]), why[first])
			})
		}
	}
	if len(b.c.Rows) == 0 {
		return nil
	}
	if omitted > 0 {
		what := fmt.Sprintf("%d more instances", omitted)
		if omittedDeps > 0 {
			what += " (" + human.Count(int64(omittedDeps), "dependency") + ")"
		}
		b.row("… and " + what + " not drawn: the journal has their reads")
	}
	runLines(b, j)
	return b.finish()
}

// typicalGap is the median time between reads (a second when unknown),
// how long the last read is drawn.
func typicalGap(ss []drill.GaugeSample) time.Duration {
	var gaps []time.Duration
	for i := 1; i < len(ss); i++ {
		if g := ss[i].At.Sub(ss[i-1].At); g > 0 {
			gaps = append(gaps, g)
		}
	}
	if len(gaps) == 0 {
		return time.Second
	}
	slices.Sort(gaps)
	return gaps[len(gaps)/2]
}

// columns is how many columns the plot has: a strip or a row of marks is
// drawn at this resolution, whatever the number of reads, so a report's
// size does not grow with the length of the run.
const columns = int(plotW)

// column is the plot's column an instant falls in.
func (a axis) column(t time.Time) int {
	return min(int((a.x(t)-plotX)/plotW*float64(columns)), columns-1)
}

// columnStart is the instant a column starts at.
func (a axis) columnStart(c int) time.Time {
	return a.t0.Add(time.Duration(float64(a.t1.Sub(a.t0)) * float64(c) / float64(columns)))
}

// marks draws instants as marks, one per column of the plot: title says
// what the instants first..last (indexes into ats, n of them) were.
func (b *builder) marks(r *chartRow, ats []time.Time, radius float64, class string, title func(first, last, n int) string) {
	type group struct{ first, last, n int }
	groups := map[int]*group{}
	var order []int
	for i, t := range ats {
		c := b.a.column(t)
		g, ok := groups[c]
		if !ok {
			g = &group{first: i, last: i}
			groups[c] = g
			order = append(order, c)
		}
		g.n++
		if t.Before(ats[g.first]) {
			g.first = i
		}
		if !t.Before(ats[g.last]) {
			g.last = i
		}
	}
	slices.Sort(order)
	for _, c := range order {
		g := groups[c]
		b.mark(r, ats[g.first], radius, class, title(g.first, g.last, g.n))
	}
}

// stateRun is one instance in one state, from its first read in it to
// the next read of another state.
type stateRun struct {
	state    string
	from, to time.Time
}

// stateRuns are inst's runs of one state, each from its first read to the
// next read (or one typical gap past the last).
func stateRuns(ss []drill.GaugeSample, inst string, gap time.Duration) []stateRun {
	var runs []stateRun
	for i, s := range ss {
		next := s.At.Add(gap)
		if i+1 < len(ss) {
			next = ss[i+1].At
		}
		state, seen := "", false
		for _, in := range s.Instances {
			if in.Instance == inst {
				state, seen = in.State, true
			}
		}
		if !seen {
			continue
		}
		if n := len(runs); n > 0 && runs[n-1].state == state && !runs[n-1].to.Before(s.At) {
			runs[n-1].to = next
			continue
		}
		runs = append(runs, stateRun{state: state, from: s.At, to: next})
	}
	return runs
}

// severity orders the states a column shows when two were held as long.
var severity = []string{"open", "half_open", "forced_open", "closed"}

// strip draws an instance's runs at the plot's resolution: each column
// shows the state held longest in it (ties go to the more severe), and a
// bar's title names the other states held within it and for how long.
func strip(b *builder, r *chartRow, dep, inst string, runs []stateRun) {
	type col struct {
		held     map[string]time.Duration
		from, to time.Time
	}
	cols := make([]col, columns)
	for _, rn := range runs {
		from, to := maxTime(rn.from, b.a.t0), minTime(rn.to, b.a.t1)
		if !to.After(from) {
			continue
		}
		for c := b.a.column(from); c < columns; c++ {
			cs, ce := b.a.columnStart(c), b.a.columnStart(c+1)
			if c == columns-1 {
				ce = b.a.t1
			}
			lo, hi := maxTime(from, cs), minTime(to, ce)
			if hi.After(lo) {
				k := &cols[c]
				if k.held == nil {
					k.held, k.from, k.to = map[string]time.Duration{}, lo, hi
				}
				k.held[rn.state] += hi.Sub(lo)
				k.from, k.to = minTime(k.from, lo), maxTime(k.to, hi)
			}
			if !ce.Before(to) {
				break
			}
		}
	}
	type seg struct {
		state    string
		from, to time.Time
		others   map[string]time.Duration
	}
	var segs []seg
	for c := range cols {
		k := cols[c]
		if k.held == nil {
			continue
		}
		state := dominant(k.held)
		n := len(segs)
		if n == 0 || segs[n-1].state != state || segs[n-1].to.Before(k.from) {
			segs = append(segs, seg{state: state, from: k.from, others: map[string]time.Duration{}})
			n++
		}
		s := &segs[n-1]
		s.to = k.to
		for st, d := range k.held {
			if st != state {
				s.others[st] += d
			}
		}
	}
	for _, s := range segs {
		class, ok := gaugeStates[s.state]
		if !ok {
			class = "g-unknown"
		}
		title := fmt.Sprintf("%s %s: %s from %s to %s", dep, inst, s.state, clock(s.from), clock(s.to))
		if len(s.others) > 0 {
			var also []string
			for _, st := range slices.Sorted(maps.Keys(s.others)) {
				also = append(also, st+" for "+dur(s.others[st]))
			}
			title += "; within it also " + strings.Join(also, ", ")
		}
		b.span(r, s.from, s.to, class, title, "")
	}
}

// dominant is the state held longest; ties go to the more severe.
func dominant(held map[string]time.Duration) string {
	best, bestD := "", time.Duration(-1)
	rank := func(s string) int {
		if i := slices.Index(severity, s); i >= 0 {
			return i
		}
		return len(severity)
	}
	for _, st := range slices.Sorted(maps.Keys(held)) {
		d := held[st]
		if d > bestD || (d == bestD && rank(st) < rank(best)) {
			best, bestD = st, d
		}
	}
	return best
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
