package runner

import (
	"cmp"
	"encoding/xml"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// JUnit XML, in the shape CI systems (Jenkins, GitLab, GitHub Actions
// reporters) read: one testsuite per drill; one testcase per hypothesis
// check (before and after), per step and per rollback.

type junitSuites struct {
	XMLName xml.Name `xml:"testsuites"`
	Name    string   `xml:"name,attr"`
	junitCounts
	Suites []junitSuite `xml:"testsuite"`
}

// junitCounts are the attributes a suite and the document both carry.
type junitCounts struct {
	Tests    int    `xml:"tests,attr"`
	Failures int    `xml:"failures,attr"`
	Errors   int    `xml:"errors,attr"`
	Skipped  int    `xml:"skipped,attr"`
	Time     string `xml:"time,attr"`
}

type junitSuite struct {
	Name string `xml:"name,attr"`
	junitCounts
	Timestamp  string          `xml:"timestamp,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
	SystemOut  string          `xml:"system-out,omitempty"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	Skipped   *junitProblem `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// stopProperties say which stop condition ended the run and when, and for
// an alarm condition which alarm fired, since when and why.
func stopProperties(s *drill.StopRecord) []junitProperty {
	if s == nil {
		return nil
	}
	out := []junitProperty{{"stop_condition", s.Condition}, {"stop_at", s.At.UTC().Format(time.RFC3339Nano)}, {"stop_detail", s.Detail}}
	for i, a := range s.Alarms {
		p := numbered("stop_alarm", i)
		out = append(out, junitProperty{p, a.Name}, junitProperty{p + "_state", a.State},
			junitProperty{p + "_since", a.Since.UTC().Format(time.RFC3339Nano)}, junitProperty{p + "_reason", a.Reason})
	}
	return out
}

// guardProperties say which guard refused the run or was lost, why, and
// how to fix it.
func guardProperties(g *drill.GuardRecord) []junitProperty {
	if g == nil {
		return nil
	}
	out := []junitProperty{{"guard_phase", g.Phase}, {"guard_role", g.Role}, {"guard_condition", g.Condition},
		{"guard_cause", g.Cause}, {"guard_fix", g.Fix}, {"guard_at", g.At.UTC().Format(time.RFC3339Nano)}}
	if g.Since != nil {
		out = append(out, junitProperty{"guard_since", g.Since.UTC().Format(time.RFC3339Nano)}, junitProperty{"guard_polls", fmt.Sprint(g.Polls)})
	}
	return out
}

func junitTime(s float64) string { return fmt.Sprintf("%.3f", s) }

// numbered names the i-th of a repeated property: p, p_2, p_3...
func numbered(p string, i int) string {
	if i == 0 {
		return p
	}
	return fmt.Sprintf("%s_%d", p, i+1)
}

// JUnit renders the journal as JUnit XML.
func JUnit(j *drill.Journal) ([]byte, error) {
	prefix := "drill." + j.Drill.Name
	suite := junitSuite{Name: "drill " + j.Drill.Name, junitCounts: junitCounts{Time: junitTime(j.DurationSeconds)},
		Timestamp: j.StartedAt.Format("2006-01-02T15:04:05Z"),
		Properties: []junitProperty{{"file", j.Drill.File}, {"run_id", j.RunID}, {"context", j.Context}, {"outcome", j.Outcome},
			{"exit_code", fmt.Sprint(j.ExitCode)}, {"rollbacks_ok", fmt.Sprint(j.RollbacksOK)}}}
	suite.Properties = append(suite.Properties, stopProperties(j.Stop)...)
	suite.Properties = append(suite.Properties, guardProperties(j.Guard)...)
	for i, rv := range j.Recoveries {
		p := numbered("recovered", i)
		suite.Properties = append(suite.Properties, junitProperty{p + "_at", rv.At.UTC().Format(time.RFC3339Nano)},
			junitProperty{p + "_by", rv.Actor}, junitProperty{p + "_ok", fmt.Sprint(rv.OK)})
	}
	// Every text of the report is rendered by the textsafe rule: step
	// outputs and errors carry HTTP bodies and stored values, CI pages show
	// them to people, and a control character other than tab and newline is
	// not even allowed in XML 1.0 (encoding/xml would turn it into U+FFFD,
	// hiding what it was). Attributes are one line ([textsafe.Line]);
	// element text keeps its lines ([textsafe.Text]).
	add := func(c junitCase) {
		c.Name, c.Classname, c.SystemOut = textsafe.Line(c.Name), textsafe.Line(c.Classname), textsafe.Text(c.SystemOut)
		for _, p := range []*junitProblem{c.Failure, c.Error, c.Skipped} {
			if p != nil {
				p.Message, p.Type, p.Text = textsafe.Line(p.Message), textsafe.Line(p.Type), textsafe.Text(p.Text)
			}
		}
		suite.Cases = append(suite.Cases, c)
		suite.Tests++
		switch {
		case c.Failure != nil:
			suite.Failures++
		case c.Error != nil:
			suite.Errors++
		case c.Skipped != nil:
			suite.Skipped++
		}
	}
	checks := func(phase string, recs []drill.CheckRecord) {
		for _, c := range recs {
			tc := junitCase{Name: c.Name, Classname: prefix + ".hypothesis." + phase, Time: junitTime(c.DurationSeconds),
				SystemOut: c.Description + "\n" + c.Detail}
			if !c.OK {
				tc.Failure = &junitProblem{Message: cmp.Or(c.Error, "did not hold"), Type: "hypothesis", Text: c.Detail}
			}
			add(tc)
		}
	}
	// The preflight shows only when it refused the run: one error per
	// guard that could not be evaluated, or the table's policy's refusal
	// (no guard refused it: there is no approved drill request).
	if j.Outcome == drill.OutcomeRefused {
		if j.Guard == nil {
			add(junitCase{Name: "approval", Classname: prefix + ".preflight", SystemOut: "the table's policy, asked before any lever",
				Error: &junitProblem{Message: textsafe.OneLine(j.Reason), Type: "approval", Text: j.Reason}})
		}
		for _, c := range j.Preflight {
			if !c.OK {
				add(junitCase{Name: c.Label(), Classname: prefix + ".preflight", Time: junitTime(c.DurationSeconds), SystemOut: c.Description,
					Error: &junitProblem{Message: textsafe.OneLine(c.Error), Type: "preflight", Text: c.Error}})
			}
		}
	}
	checks("before", j.Hypothesis.Before)
	for i, s := range j.Steps {
		tc := junitCase{Name: fmt.Sprintf("%02d %s (%s)", i+1, s.ID, s.Kind), Classname: prefix + ".steps", Time: junitTime(s.DurationSeconds)}
		out := slices.DeleteFunc([]string{s.Description, s.Detail}, func(line string) bool { return line == "" })
		tc.SystemOut = strings.Join(append(out, s.Log...), "\n")
		switch s.Status {
		case drill.StatusFailed:
			tc.Failure = &junitProblem{Message: textsafe.OneLine(s.Error), Type: "step", Text: s.Error}
		case drill.StatusInterrupted, drill.StatusTimedOut, drill.StatusStopped, drill.StatusGuardLost:
			tc.Error = &junitProblem{Message: textsafe.OneLine(s.Error), Type: s.Status, Text: s.Error}
		case drill.StatusSkipped, drill.StatusPending:
			tc.Skipped = &junitProblem{Message: "not run: " + cmp.Or(j.Reason, "the drill ended before it")}
		}
		add(tc)
	}
	for _, r := range j.Rollbacks {
		class := prefix + ".rollback"
		if r.RecoveredAt != nil {
			// Run by drill recover after the run's process died.
			class = prefix + ".recover"
		}
		tc := junitCase{Name: fmt.Sprintf("%s %s (step %s)", r.ID, r.Subject, r.Step), Classname: class,
			Time: junitTime(r.DurationSeconds), SystemOut: r.Description + "\n" + r.Detail}
		switch r.Status {
		case drill.StatusOK:
		case drill.StatusAbandoned:
			tc.Error = &junitProblem{Message: textsafe.OneLine(r.Error), Type: "rollback-abandoned", Text: r.Error}
		default:
			tc.Failure = &junitProblem{Message: textsafe.OneLine(cmp.Or(r.Error, r.Status)), Type: "rollback", Text: r.Error}
		}
		add(tc)
	}
	if j.Hypothesis.AfterSkipped != "" {
		add(junitCase{Name: "hypothesis after", Classname: prefix + ".hypothesis.after", Time: "0.000",
			Skipped: &junitProblem{Message: j.Hypothesis.AfterSkipped}})
	} else {
		checks("after", j.Hypothesis.After)
	}
	for i := range suite.Properties {
		p := &suite.Properties[i]
		p.Name, p.Value = textsafe.Line(p.Name), textsafe.Line(p.Value)
	}
	suite.Name, suite.SystemOut = textsafe.Line(suite.Name), textsafe.Text(Summary(j, false))
	doc := junitSuites{Name: "koshactl drill", junitCounts: suite.junitCounts, Suites: []junitSuite{suite}}
	b, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode JUnit report: %w", err)
	}
	return append([]byte(xml.Header), append(b, '\n')...), nil
}
