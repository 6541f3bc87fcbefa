package gameday

import (
	"strings"
	"testing"
	"time"
	"unicode"

	"golang.org/x/net/html"

	"github.com/kosha-platform/koshactl/internal/drill"
)

// withStrings returns the hostile journal with every string set to s and
// every time shifted by the fuzzed offsets, so the layout varies too.
func withStrings(s string, stepSecs, rbSecs uint16) *drill.Journal {
	j := hostileJournal()
	j.Drill = drill.DrillInfo{Name: s, File: s, Description: s}
	j.RunID, j.Context, j.Store, j.Gauges, j.Actor, j.Outcome, j.Reason = s, s, s, s, s, s, s
	for i := range j.Steps {
		st := &j.Steps[i]
		st.ID, st.Name, st.Kind, st.Description, st.Status, st.Detail, st.Error = s, s, s, s, s, s, s
		st.Outputs, st.Rollbacks, st.Log = map[string]string{"k": s}, []string{s}, []string{s}
		if st.EndedAt != nil {
			e := st.EndedAt.Add(time.Duration(stepSecs) * time.Second)
			st.EndedAt = &e
		}
	}
	for i := range j.Rollbacks {
		r := &j.Rollbacks[i]
		r.ID, r.Step, r.Subject, r.Description, r.Status, r.Detail, r.Error = s, s, s, s, s, s, s
		r.Lever = &drill.LeverRecord{Kind: s, Dependency: s, Inverse: s}
		if r.ExpiresAt != nil {
			e := r.ExpiresAt.Add(time.Duration(rbSecs) * time.Second)
			r.ExpiresAt = &e
		}
	}
	for _, cs := range [][]drill.CheckRecord{j.Hypothesis.Before, j.Hypothesis.After} {
		for i := range cs {
			cs[i].Phase, cs[i].Name, cs[i].Kind, cs[i].Description, cs[i].Detail, cs[i].Error = s, s, s, s, s, s
		}
	}
	j.Hypothesis.AfterSkipped = s
	j.Stop.Condition, j.Stop.Detail = s, s
	for i := range j.Stop.Alarms {
		a := &j.Stop.Alarms[i]
		a.Name, a.State, a.Reason = s, s, s
	}
	for i := range j.StopEvaluations {
		j.StopEvaluations[i].Condition, j.StopEvaluations[i].Detail = s, s
	}
	j.StopEvaluations[0].Error = s
	for i := range j.GaugeSamples {
		g := &j.GaugeSamples[i]
		g.Dependency = s
		for k := range g.Instances {
			g.Instances[k].Instance, g.Instances[k].State = s, s
		}
	}
	j.GaugeSamples[2].Error = s
	j.Notices = []string{s}
	for i := range j.Audit {
		j.Audit[i] = drill.AuditRef{ID: s, At: j.Audit[i].At, Action: s, Subject: s}
	}
	j.Recoveries = []drill.RecoveryRecord{{At: at(25), Actor: s, Rollbacks: []string{s}, Detail: s}}
	g := j.Guard
	g.Phase, g.Role, g.Condition, g.Cause, g.Fix = s, s, s, s, s
	for i := range j.Preflight {
		c := &j.Preflight[i]
		c.Phase, c.Name, c.Kind, c.Description, c.Detail, c.Error = s, s, s, s, s, s
	}
	// What the fleet confirmed of a breaker step with wait: true, and not.
	j.Steps[0].Fleet = &drill.FleetRecord{Dependency: s, Goal: s, Confirmed: true, Summary: s, ElapsedSeconds: 2, TimeoutSeconds: 45}
	j.Steps[1].Fleet = &drill.FleetRecord{Dependency: s, Goal: s, Summary: s, ElapsedSeconds: 45, TimeoutSeconds: 45}
	return j
}

// tags is the sequence of element tags (and their attribute names) a page
// parses to.
func tags(t *testing.T, page string) []string {
	t.Helper()
	z := html.NewTokenizer(strings.NewReader(page))
	var out []string
	for {
		switch z.Next() {
		case html.ErrorToken:
			return out
		case html.StartTagToken, html.EndTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			tag := tok.Data
			for _, a := range tok.Attr {
				tag += " " + a.Key
			}
			out = append(out, tag)
		default: // text, comments and the doctype carry no element
		}
	}
}

// FuzzHTML: whatever a journal's strings hold, the page has exactly the
// elements and attributes of the same journal with plain strings: no
// value adds a tag, an attribute or an unescaped <; and the page stays
// inert (one CSP, no script, no URL).
//
// A value longer than maxHTMLFuzz is passed over: every markup an escape
// could miss fits in it, each exec renders two whole reports with the
// value in every field, and the engine's minimization of a long input is
// quadratic in its length (issue 45: targets sat at 0 execs/s).
func FuzzHTML(f *testing.F) {
	for _, s := range []string{"x", hScript, hImg, hLink, hAuto, hStyle, hTerm, "", " ", "\n", "<", "&lt;", "]]>", "<!--", "-->", "<![CDATA[",
		"</title><script>", "</svg><script>", "javascript:alert(1)", "\x00", "\u2028", "passed", "ok", "stopped", "closed", "forced_open",
		"preflight", "run", "refused", "guard_lost", "fleet confirmed: <b>", "; ", ": "} {
		f.Add(s, uint16(0), uint16(0))
	}
	f.Fuzz(func(t *testing.T, s string, stepSecs, rbSecs uint16) {
		if len(s) > maxHTMLFuzz {
			return
		}
		page := renderHTML(t, Input{Journal: withStrings(s, stepSecs, rbSecs)})
		// The reference keeps what a value means (letters, digits, _ and
		// whitespace: a status word, an empty or blank value) and replaces
		// every other character, markup included, with x.
		plain := strings.Map(func(r rune) rune {
			if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || unicode.IsSpace(r) {
				return r
			}
			return 'x'
		}, s)
		ref := renderHTML(t, Input{Journal: withStrings(plain, stepSecs, rbSecs)})
		if got, want := strings.Count(page, "<"), strings.Count(ref, "<"); got != want {
			t.Fatalf("%d < in the page, %d with plain strings", got, want)
		}
		got, want := tags(t, page), tags(t, ref)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("the value %q changed the page's elements:\n%v\nwant\n%v", s, got, want)
		}
		if strings.Count(page, "Content-Security-Policy") != 1 || strings.Contains(strings.ToLower(page), "<script") {
			t.Fatal("the page is not inert")
		}
	})
}

// maxHTMLFuzz is the longest value FuzzHTML checks.
const maxHTMLFuzz = 256
