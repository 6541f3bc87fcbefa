package gameday

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/impact"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Input is what a report is rendered from.
type Input struct {
	// Journal is the run's journal.
	Journal *drill.Journal
	// Samples, when set, are shown instead of the journal's gauge samples:
	// the window the command fetched from the context's metrics source for
	// a journal that recorded none.
	Samples []drill.GaugeSample
	// SamplesFrom says where Samples came from ("prometheus http://...");
	// empty means the journal.
	SamplesFrom string
	// FetchError says why the window could not be fetched.
	FetchError string
}

// report is what the templates render: every value already one safe line.
type report struct {
	Title       string
	Description string
	Outcome     string
	Verdict     string
	// Good is true when the run passed and every lever was put back, each
	// with the audit record of its change.
	Good     bool
	Reason   string
	ExitCode int
	Glance   []glance
	Facts    []fact
	Timeline *chart
	Gauges   *chart
	// GaugesNote says where the gauges came from, or why there are none.
	GaugesNote string
	Steps      []stepRow
	Levers     []leverRow
	Checks     []checkRow
	Stop       *stopRow
	// Guard is the guard that refused the run at preflight, or was lost
	// during it; Preflight the preflight's evaluations.
	Guard      *guardRow
	Preflight  []checkRow
	Recoveries []recoveryRow
	Audit      []auditRow
	Notices    []string
	// More counts the rows of each table past the first maxRows, which
	// the report leaves to the journal ("steps": 1234).
	More map[string]int
}

type glance struct {
	Label string
	Text  string
	// Class is good, bad or warn.
	Class string
}

type fact struct {
	Name, Value string
	// Wide facts take a line of their own.
	Wide bool
}

type stepRow struct {
	ID, Name, Kind, Status, Class, Started, Duration, Detail, Error string
	Description                                                     string
	Outputs                                                         []fact
	Rollbacks                                                       string
	// Reason is why the step pulled its lever, as its record has it.
	Reason string
	// Fleet is what the fleet's gauges confirmed of a breaker step with
	// wait: true (or did not: FleetClass bad).
	Fleet, FleetClass string
}

type leverRow struct {
	ID, Step, Subject, Description, Status, Class string
	// Pulled is when it was registered (just before its step acted), Back
	// when it was put back, Held for how long it stayed moved.
	Pulled, Back, Held string
	// Why is the reason of the step that pulled the lever.
	Why string
	// Impact says what the lever did to the platform's tools while it
	// held, from its force's audit record: "screen_entity deferred · 25
	// calls/min · about 100 calls while held" ("": the record says nothing).
	Impact        string
	By            string
	Expires       string
	Detail, Error string
}

type checkRow struct {
	Phase, Name, Kind, Description, Status, Class, Started, Duration, Detail, Error string
	Checks                                                                          int
}

type stopRow struct {
	Condition, Detail, At string
	Alarms                []alarmRow
}

// guardRow is a guard that could not be evaluated: the one that refused
// the run at preflight, or the one lost past its grace.
type guardRow struct {
	// Heading is "Refused at preflight" or "Guard lost".
	Heading                                string
	Lost                                   bool
	Phase, Role, Condition, Cause, Fix, At string
	// Since, Polls and Grace say how long it was unevaluable (a lost guard).
	Since, Polls, Grace string
}

type alarmRow struct{ Name, State, Reason, Since string }

type recoveryRow struct {
	At, Actor, Rollbacks, Detail, Class, Status string
}

type auditRow struct{ ID, At, Action, Subject string }

// one renders a value as one safe line ([textsafe.OneLine]), folded to
// [maxText].
func one(s string) string { return oneOf(s, maxText) }

// oneOf is [one] folded to n bytes.
func oneOf(s string, n int) string {
	return textsafe.OneLine(fold(s, n))
}

// clock formats an instant as the report's time of day (UTC).
func clock(t time.Time) string { return t.UTC().Format("15:04:05.000Z") }

// dur formats a duration as a person reads it: "45ms", "12.3s", "4m5s".
func dur(d time.Duration) string {
	switch {
	case d < 0:
		d = 0
	case d < time.Second:
		d = d.Round(time.Millisecond)
	case d < time.Minute:
		d = d.Round(100 * time.Millisecond)
	default:
		d = d.Round(time.Second)
	}
	return human.Duration(d)
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func statusClass(status string) string {
	switch status {
	case drill.StatusPassed, drill.StatusOK:
		return "good"
	case drill.StatusSkipped, drill.StatusPending:
		return "muted"
	case drill.StatusStopped, drill.StatusInterrupted, drill.StatusTimedOut, drill.StatusRunning:
		return "warn"
	}
	return "bad"
}

// build turns a journal into what the templates render.
func build(in Input) *report {
	j := in.Journal
	r := &report{
		Title: one(j.Drill.Name), Description: one(j.Drill.Description), Outcome: one(j.Outcome),
		Verdict: one(strings.ToUpper(strings.ReplaceAll(j.Outcome, "_", " "))), Good: j.Outcome == drill.OutcomePassed && j.RollbacksOK,
		ExitCode: j.ExitCode,
	}
	if j.Reason != j.Outcome {
		r.Reason = one(j.Reason)
	}
	end := lastRecord(j, true)
	r.Facts = facts(j, end)
	r.Glance = atAGlance(j)
	r.More = map[string]int{}
	why := map[string]string{}
	for i, s := range j.Steps {
		why[s.ID] = s.Reason
		if i >= maxRows {
			r.More["steps"]++
			continue
		}
		row := stepRow{ID: one(s.ID), Name: one(s.Name), Kind: one(s.Kind), Status: one(s.Status), Class: statusClass(s.Status),
			Description: one(s.Description), Detail: one(s.Detail), Error: one(s.Error), Rollbacks: one(strings.Join(s.Rollbacks, ", ")),
			Reason: one(s.Reason)}
		if s.StartedAt != nil {
			row.Started = clock(*s.StartedAt)
			row.Duration = dur(secs(s.DurationSeconds))
		}
		// The detail (or error) says what the fleet confirmed in words; a
		// badge says whether it did, and after how long.
		if f := s.Fleet; f != nil {
			row.Fleet, row.FleetClass = one("fleet confirmed "+f.Goal+" after "+dur(secs(f.ElapsedSeconds))), "good"
			if !f.Confirmed {
				row.Fleet, row.FleetClass = one("fleet did NOT confirm "+f.Goal+" within "+dur(secs(f.TimeoutSeconds))), "bad"
			}
		}
		for i, k := range slices.Sorted(maps.Keys(s.Outputs)) {
			if i == maxOutputs {
				row.Outputs = append(row.Outputs, fact{Name: "…", Value: fmt.Sprintf("%d more outputs in the journal", len(s.Outputs)-maxOutputs)})
				break
			}
			row.Outputs = append(row.Outputs, fact{Name: one(k), Value: one(s.Outputs[k])})
		}
		r.Steps = append(r.Steps, row)
	}
	rec := recoveredBy(j)
	r.Levers = capped(r.More, "levers", j.Rollbacks, func(rb drill.RollbackRecord) leverRow {
		row := leverRowOf(rb, why, rec, end)
		row.Impact = one(leverImpact(j, rb, rec, end))
		return row
	})
	r.Checks = capped(r.More, "checks", slices.Concat(j.Hypothesis.Before, j.Hypothesis.After), func(c drill.CheckRecord) checkRow {
		return checkRowOf(c, "held", "did not hold")
	})
	if st := j.Stop; st != nil {
		r.Stop = &stopRow{Condition: one(st.Condition), Detail: one(st.Detail), At: clock(st.At)}
		r.Stop.Alarms = capped(r.More, "alarms", st.Alarms, func(a drill.Alarm) alarmRow {
			ar := alarmRow{Name: one(a.Name), State: one(a.State), Reason: one(a.Reason)}
			if !a.Since.IsZero() {
				ar.Since = clock(a.Since)
			}
			return ar
		})
	}
	r.Guard = guardRowOf(j)
	r.Preflight = capped(r.More, "preflight checks", j.Preflight, func(c drill.CheckRecord) checkRow {
		return checkRowOf(c, "can be evaluated", "cannot be evaluated")
	})
	r.Recoveries = capped(r.More, "recoveries", j.Recoveries, func(rv drill.RecoveryRecord) recoveryRow {
		row := recoveryRow{At: clock(rv.At), Actor: one(rv.Actor), Rollbacks: one(joinFolded(rv.Rollbacks, ", ")), Detail: one(rv.Detail),
			Status: "ok", Class: "good"}
		if !rv.OK {
			row.Status, row.Class = "failed", "bad"
		}
		return row
	})
	r.Audit = capped(r.More, "audit records", j.Audit, func(a drill.AuditRef) auditRow {
		return auditRow{ID: one(a.ID), At: clock(a.At), Action: one(a.Action), Subject: one(a.Subject)}
	})
	notices := j.Notices
	if j.Hypothesis.AfterSkipped != "" {
		notices = append([]string{"hypothesis after: " + j.Hypothesis.AfterSkipped}, notices...)
	}
	r.Notices = capped(r.More, "notices", notices, one)
	samples, from := j.GaugeSamples, "recorded by the run"
	if in.Samples != nil {
		samples, from = in.Samples, "fetched from "+in.SamplesFrom
	}
	ax := newAxis(j, end)
	r.Timeline = timelineChart(j, ax)
	r.Gauges = gaugeChart(j, samples, ax)
	switch {
	case r.Gauges != nil:
		r.GaugesNote = one(fmt.Sprintf("breaker_state %s (%s)", from, human.Count(int64(len(samples)), "read")))
	case len(samples) > 0:
		r.GaugesNote = "no instance reported a breaker_state during the run"
	case in.FetchError != "":
		r.GaugesNote = one("no breaker_state samples in the journal, and none could be fetched: " + in.FetchError)
	case in.Samples != nil:
		r.GaugesNote = one("no breaker_state samples in the journal, and " + in.SamplesFrom + " had none in the run's window")
	default:
		r.GaugesNote = "no breaker_state samples: the run polled no gauges, and none were fetched"
	}
	return r
}

// checkRowOf is a check's row, its status ok or failed as it held or not.
func checkRowOf(c drill.CheckRecord, ok, failed string) checkRow {
	status, class := ok, "good"
	if !c.OK {
		status, class = failed, "bad"
	}
	return checkRow{Phase: one(c.Phase), Name: one(c.Label()), Kind: one(c.Kind), Description: one(c.Description),
		Status: status, Class: class, Started: clock(c.StartedAt), Duration: dur(secs(c.DurationSeconds)), Detail: one(c.Detail),
		Error: one(c.Error), Checks: c.Checks}
}

// lastRecord is the latest instant the journal records: its end, or (for a
// run that was killed) the last thing it recorded, and any recovery;
// without recoveries, the last the run's own process wrote.
func lastRecord(j *drill.Journal, recoveries bool) time.Time {
	t := j.StartedAt
	later := func(u time.Time) {
		if u.After(t) {
			t = u
		}
	}
	laterPtr := func(u *time.Time) {
		if u != nil {
			later(*u)
		}
	}
	laterPtr(j.EndedAt)
	for _, c := range slices.Concat(j.Preflight, j.Hypothesis.Before, j.Hypothesis.After) {
		laterPtr(c.EndedAt)
	}
	if j.Guard != nil {
		later(j.Guard.At)
	}
	for _, s := range j.Steps {
		laterPtr(s.StartedAt)
		laterPtr(s.EndedAt)
	}
	for _, rb := range j.Rollbacks {
		later(rb.RegisteredAt)
		if recoveries || rb.RecoveredAt == nil {
			laterPtr(rb.EndedAt)
		}
	}
	for _, rv := range j.Recoveries {
		if recoveries {
			later(rv.At)
		}
	}
	if j.Stop != nil {
		later(j.Stop.At)
	}
	return t
}

func facts(j *drill.Journal, end time.Time) []fact {
	f := []fact{{Name: "outcome", Value: one(j.Outcome)}, {Name: "exit code", Value: fmt.Sprint(j.ExitCode)}, {Name: "context", Value: one(j.Context)}}
	add := func(name, v string) {
		if v != "" {
			f = append(f, fact{Name: name, Value: one(v)})
		}
	}
	add("store", j.Store)
	add("actor", j.Actor)
	add("gauges", j.Gauges)
	add("run id", j.RunID)
	add("drill file", j.Drill.File)
	add("started", j.StartedAt.UTC().Format(time.RFC3339))
	if j.EndedAt != nil {
		add("ended", j.EndedAt.UTC().Format(time.RFC3339)+" (took "+dur(secs(j.DurationSeconds))+")")
	} else {
		add("ended", "never: the run's process died; last record at "+end.UTC().Format(time.RFC3339))
	}
	add("deadline", j.Deadline.UTC().Format(time.RFC3339)+" (timeout "+dur(secs(j.TimeoutSeconds))+")")
	ids := make([]string, 0, min(len(j.Audit), maxRows))
	for _, a := range j.Audit {
		ids = append(ids, a.ID)
	}
	if len(ids) > 0 {
		f = append(f, fact{Name: "audit ids", Value: one(joinFolded(ids, ", ")), Wide: true})
	}
	return f
}

// capped is row of each of xs, the first [maxRows] of them; how many more
// there are is counted in more[what], which the report says.
func capped[T, R any](more map[string]int, what string, xs []T, row func(T) R) []R {
	var out []R
	for i, x := range xs {
		if i == maxRows {
			more[what] = len(xs) - maxRows
			break
		}
		out = append(out, row(x))
	}
	return out
}

// joinFolded joins parts with sep as far as [one] shows them: the parts a
// fold would cut are not joined, and a note says how many there are.
func joinFolded(parts []string, sep string) string {
	var b strings.Builder
	for i, p := range parts {
		if b.Len() > maxText {
			fmt.Fprintf(&b, "%s… and %d more", sep, len(parts)-i)
			break
		}
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(p)
	}
	return b.String()
}

// recoveredBy is who ran each rollback that `drill recover` ran, by the
// rollback's id (the last recovery that names it): what [leverBack] says,
// looked up once rather than by every lever.
func recoveredBy(j *drill.Journal) map[string]string {
	by := map[string]string{}
	for _, rv := range j.Recoveries {
		for _, id := range rv.Rollbacks {
			by[id] = rv.Actor
		}
	}
	return by
}

// leverBack is when a lever was put back, and by what (rec is
// [recoveredBy]); ok is false when it was not (yet).
func leverBack(rec map[string]string, rb drill.RollbackRecord) (at time.Time, by string, ok bool) {
	if rb.Status != drill.StatusOK || rb.EndedAt == nil {
		return time.Time{}, "", false
	}
	by = "the run's rollback"
	if rb.RecoveredAt != nil {
		by = "drill recover"
		if actor, ok := rec[rb.ID]; ok {
			by = "drill recover by " + actor
		}
	}
	return *rb.EndedAt, by, true
}

// leverRowOf is a lever's row: why is each step's reason by its id (the
// last step of an id), rec [recoveredBy].
func leverRowOf(rb drill.RollbackRecord, why, rec map[string]string, end time.Time) leverRow {
	row := leverRow{ID: one(rb.ID), Step: one(rb.Step), Subject: one(rb.Subject), Description: one(rb.Description),
		Status: one(rb.Status), Class: statusClass(rb.Status), Pulled: clock(rb.RegisteredAt), Detail: one(rb.Detail), Error: one(rb.Error),
		Why: one(why[rb.Step])}
	if rb.ExpiresAt != nil {
		row.Expires = clock(*rb.ExpiresAt)
	}
	if at, by, ok := leverBack(rec, rb); ok {
		row.Back, row.By, row.Held = clock(at), one(by), dur(at.Sub(rb.RegisteredAt))
		return row
	}
	row.Back = "not put back"
	if rb.ExpiresAt != nil {
		row.Held = "until " + clock(*rb.ExpiresAt) + " (" + dur(rb.ExpiresAt.Sub(rb.RegisteredAt)) + ", its expiry)"
	} else {
		row.Held = "until restored by hand (at least " + dur(end.Sub(rb.RegisteredAt)) + ")"
	}
	return row
}

// atAGlance is the few lines a reviewer reads first: what was pulled, for
// how long, what stopped it, and when everything was put back.
func atAGlance(j *drill.Journal) []glance {
	var g []glance
	var pulled, by []string
	byOnce := map[string]bool{}
	var back time.Time
	notBack, pulledLen := 0, 0
	rec := recoveredBy(j)
	for _, rb := range j.Rollbacks {
		at, who, ok := leverBack(rec, rb)
		what := rb.Subject + " (not put back)"
		switch {
		case ok:
			what, back = rb.Subject+" for "+dur(at.Sub(rb.RegisteredAt)), maxTime(back, at)
			if !byOnce[who] {
				byOnce[who], by = true, append(by, who)
			}
		case rb.ExpiresAt != nil:
			what = rb.Subject + " until its expiry at " + clock(*rb.ExpiresAt)
		}
		if !ok {
			notBack++
		}
		if !rb.Explicit { // a rollback step of the drill file pulls no lever
			// The line is folded at maxText: the levers past it are
			// in the Levers table.
			if pulledLen <= maxText+foldSlack {
				pulled, pulledLen = append(pulled, what), pulledLen+len(what)+2
			}
		}
	}
	switch {
	case len(pulled) == 0 && j.Outcome == drill.OutcomeRefused:
		g = append(g, glance{"Pulled", "no lever: the run was refused before any was pulled; nothing was done", "muted"})
	case len(pulled) == 0:
		g = append(g, glance{"Pulled", "no lever", "muted"})
	default:
		g = append(g, glance{"Pulled", one(strings.Join(pulled, "; ")), "warn"})
	}

	if f := fleetGlance(j); f != nil {
		g = append(g, *f)
	}

	switch {
	case j.Guard != nil && (j.Outcome == drill.OutcomeRefused || j.Outcome == drill.OutcomeGuardLost):
		g = append(g, guardGlance(j)...)
	case j.Stop != nil:
		parts := []string{fmt.Sprintf("stop condition %s at %s (+%s): %s", j.Stop.Condition, clock(j.Stop.At), dur(j.Stop.At.Sub(j.StartedAt)), j.Stop.Detail)}
		for _, a := range j.Stop.Alarms {
			parts = append(parts, fmt.Sprintf("alarm %s %s: %s", a.Name, a.State, a.Reason))
		}
		g = append(g, glance{"Stopped by", one(joinFolded(parts, "; ")), "bad"})
	case j.Outcome == drill.OutcomeKilled || j.Outcome == drill.OutcomeRunning:
		g = append(g, glance{"Stopped by", one("the run's process died (its last record at " + clock(lastRecord(j, false)) + ")"), "bad"})
	case j.Outcome == drill.OutcomePassed:
		g = append(g, glance{"Ended", "every step ran; the hypothesis held", "good"})
	default:
		g = append(g, glance{"Ended", one(j.Outcome + ": " + j.Reason), "bad"})
	}

	switch {
	case len(j.Rollbacks) == 0:
	case notBack == 0:
		g = append(g, glance{"Put back", one(fmt.Sprintf("all %d by %s (+%s), by %s", len(j.Rollbacks), clock(back), dur(back.Sub(j.StartedAt)),
			strings.Join(by, " and "))), "good"})
	default:
		g = append(g, glance{"NOT put back", one(fmt.Sprintf("%d of %d levers: each stays moved until its expiry (see Levers)", notBack, len(j.Rollbacks))), "bad"})
	}
	return g
}

// fleetGlance is one line for the steps that waited for the fleet: what
// its gauges confirmed, step by step; nil when no step waited.
func fleetGlance(j *drill.Journal) *glance {
	var parts []string
	class := "good"
	for _, s := range j.Steps {
		f := s.Fleet
		switch {
		case f == nil:
		case f.Confirmed:
			parts = append(parts, fmt.Sprintf("%s: fleet confirmed %s %s after %s: %s", s.ID, f.Dependency, f.Goal, dur(secs(f.ElapsedSeconds)), f.Summary))
		default:
			class, parts = "bad", append(parts, fmt.Sprintf("%s: fleet did NOT confirm %s %s within %s: %s", s.ID, f.Dependency, f.Goal, dur(secs(f.TimeoutSeconds)), f.Summary))
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return &glance{"Fleet", one(joinFolded(parts, "; ")), class}
}

// guardRowOf is the journal's guard record as the report shows it.
func guardRowOf(j *drill.Journal) *guardRow {
	gr := j.Guard
	if gr == nil {
		return nil
	}
	row := &guardRow{Heading: "Refused at preflight", Phase: one(gr.Phase), Role: one(gr.Role), Condition: one(gr.Condition),
		Cause: one(gr.Cause), Fix: one(gr.Fix), At: clock(gr.At)}
	if gr.Phase != drill.GuardPreflight {
		row.Heading, row.Lost = "Guard lost", true
	}
	if gr.Since != nil {
		row.Since = clock(*gr.Since) + " (" + dur(gr.At.Sub(*gr.Since)) + " before it was lost)"
	}
	if gr.Polls > 0 {
		row.Polls = fmt.Sprintf("%d failed evaluations in a row", gr.Polls)
	}
	if gr.GracePolls > 0 || gr.GraceSeconds > 0 {
		row.Grace = one(graceText(gr))
	}
	return row
}

func graceText(gr *drill.GuardRecord) string {
	var parts []string
	if gr.GracePolls > 0 {
		parts = append(parts, human.Count(int64(gr.GracePolls), "poll"))
	}
	if gr.GraceSeconds > 0 {
		parts = append(parts, dur(secs(gr.GraceSeconds)))
	}
	return strings.Join(parts, " and ")
}

// guardGlance is what a reviewer reads first of a refused run or a lost
// guard: which guard, why, since when, how many polls, and the fix.
func guardGlance(j *drill.Journal) []glance {
	gr := j.Guard
	label, text := "Guard lost", fmt.Sprintf("%s %q could not be evaluated", gr.Role, gr.Condition)
	if gr.Phase == drill.GuardPreflight {
		bad := 0
		for _, c := range j.Preflight {
			if !c.OK {
				bad++
			}
		}
		label, text = "Refused", fmt.Sprintf("preflight at %s: %s %q could not be evaluated: %s", clock(gr.At), gr.Role, gr.Condition, gr.Cause)
		if len(j.Preflight) > 0 {
			text += fmt.Sprintf(" (%d of %d guards could not be evaluated)", bad, len(j.Preflight))
		}
	} else {
		if gr.Since != nil {
			text += fmt.Sprintf(" since %s (+%s)", clock(*gr.Since), dur(gr.Since.Sub(j.StartedAt)))
		}
		if gr.Polls > 0 {
			text += ", " + human.Count(int64(gr.Polls), "poll") + " in a row"
		}
		if grace := graceText(gr); grace != "" {
			text += " (grace " + grace + ")"
		}
		text += fmt.Sprintf("; lost at %s (+%s), the steps stopped and the levers were rolled back: %s", clock(gr.At), dur(gr.At.Sub(j.StartedAt)), gr.Cause)
	}
	g := []glance{{label, one(text), "bad"}}
	if gr.Fix != "" {
		g = append(g, glance{"Fix", one(gr.Fix), "warn"})
	}
	return g
}

// leverImpact says what a lever did to the platform's tools while it held:
// the tools its force's record names (the first of the run's records of a
// force on the lever's subject from its registration on), each with the
// rate the record saw and the calls that rate touches over the time the
// lever was held: until it was put back, else its expiry (as the row's
// Held says), else at least until the journal's end. "" when no record of
// it says.
func leverImpact(j *drill.Journal, rb drill.RollbackRecord, rec map[string]string, end time.Time) string {
	var im *drill.LeverImpact
	// A record's time is kept to the millisecond; the registration's is not.
	from := rb.RegisteredAt.Truncate(time.Millisecond)
	for _, a := range j.Audit {
		if a.Subject == rb.Subject && a.Impact != nil && a.Action == breaker.ActionForceOpen && !a.At.Before(from) {
			im = a.Impact
			break
		}
	}
	if im == nil {
		return ""
	}
	until, while := end, "by the report's end (still held)"
	if at, _, ok := leverBack(rec, rb); ok {
		until, while = at, "while held"
	} else if rb.ExpiresAt != nil {
		until, while = *rb.ExpiresAt, "until its expiry"
	}
	held := max(until.Sub(rb.RegisteredAt), 0)
	var parts []string
	for _, t := range im.Tools {
		if t.Behaviour == string(impact.Unaffected) {
			continue
		}
		s := t.Tool + " " + t.Behaviour
		if v := t.CallsPerMinute; v != nil {
			s += fmt.Sprintf(" · %s calls/min · about %s %s", impact.PerMinute(*v), human.Count(impact.About(*v*held.Minutes()), "call"), while)
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "no tool changed behaviour"
	}
	if im.RatesError != "" {
		parts = append(parts, "no call rate: "+im.RatesError)
	}
	return strings.Join(parts, "; ")
}
