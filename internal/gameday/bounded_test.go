package gameday

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/drill"
)

// maxReportBytes is the report's bound whatever the journal holds: a few
// MiB, where a 64 MB journal of long texts or many steps rendered as 129 MB.
const maxReportBytes = 4 << 20

// writeJournal writes j where ReadJournal reads it.
func writeJournal(t testing.TB, j *drill.Journal) string {
	t.Helper()
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "run.journal.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// hostileJournals are journals whose report grew with them: texts of
// megabytes, tens of thousands of rows in every table, thousands of
// instances and stop conditions.
func hostileJournals() map[string]*drill.Journal {
	out := map[string]*drill.Journal{}

	long := stoppedJournal()
	mb := func(c string, n int) string { return strings.Repeat(c+" ", n<<20/2) }
	long.Reason, long.Drill.Description = mb("r", 2), mb("d", 2)
	long.Steps[0].Detail, long.Steps[0].Error, long.Steps[1].Description = mb("x", 4), mb("e", 4), mb("s", 2)
	long.Steps[0].Outputs = map[string]string{"dependency": "openai", "body": mb("o", 2)}
	long.Rollbacks[0].Detail, long.Rollbacks[1].Error = mb("z", 2), mb("q", 2)
	long.Stop.Detail, long.Stop.Alarms[0].Reason = mb("a", 2), mb("w", 2)
	long.Notices = []string{mb("n", 2)}
	long.Audit[0].Subject = mb("u", 1)
	out["texts of megabytes"] = long

	many := stoppedJournal()
	step, rb, audit := many.Steps[0], many.Rollbacks[0], many.Audit[0]
	many.Steps, many.Rollbacks, many.Audit = nil, nil, nil
	for i := range 20_000 {
		s := step
		s.ID, s.Rollbacks, s.Detail = fmt.Sprintf("step-%d", i), []string{fmt.Sprintf("rb-%d", i)}, strings.Repeat("detail ", 40)
		many.Steps = append(many.Steps, s)
		r := rb
		r.ID, r.Step = fmt.Sprintf("rb-%d", i), s.ID
		many.Rollbacks = append(many.Rollbacks, r)
		c := many.Hypothesis.Before[0]
		c.Name = fmt.Sprintf("check-%d", i)
		many.Hypothesis.Before = append(many.Hypothesis.Before, c)
		many.Preflight = append(many.Preflight, c)
		a := audit
		a.ID = fmt.Sprintf("01JQ%022d", i)
		many.Audit = append(many.Audit, a)
		many.Notices = append(many.Notices, fmt.Sprintf("stop condition api-5xx could not be evaluated (%d)", i))
		many.Stop.Alarms = append(many.Stop.Alarms, drill.Alarm{Name: fmt.Sprintf("alarm-%d", i), State: "ALARM", Since: at(1)})
		many.Recoveries = append(many.Recoveries, drill.RecoveryRecord{At: at(30 + float64(i)/1000), Actor: "ops", Rollbacks: []string{r.ID}, OK: true})
	}
	many.Steps[0].Outputs = map[string]string{}
	for i := range 5_000 {
		many.Steps[0].Outputs[fmt.Sprintf("out-%d", i)] = "value"
	}
	out["tens of thousands of rows"] = many

	wide := stoppedJournal()
	wide.GaugeSamples, wide.StopEvaluations = nil, nil
	for i := range 2_000 {
		s := drill.GaugeSample{At: at(float64(i) / 100), Dependency: fmt.Sprintf("dep-%d", i%100), Error: ""}
		for k := range 20 {
			s.Instances = append(s.Instances, drill.InstanceSample{Instance: fmt.Sprintf("gw-%d-%d", i, k), State: "closed"})
		}
		wide.GaugeSamples = append(wide.GaugeSamples, s)
		wide.StopEvaluations = append(wide.StopEvaluations, drill.StopEvaluation{At: at(float64(i) / 100), Condition: fmt.Sprintf("cond-%d", i),
			Detail: strings.Repeat("alarm is OK ", 100)})
	}
	out["thousands of instances and stop conditions"] = wide
	return out
}

// Issue 45: a 64 MB journal (just under its cap) took 689 MB to read and
// rendered 129 MB of HTML. The report reads the journal as a stream,
// folds long texts and shows the first rows of each table: its size does
// not grow with the journal, and it says what it left to the journal.
func TestReportSizeIsBoundedWhateverTheJournalHolds(t *testing.T) {
	for name, j := range hostileJournals() {
		t.Run(name, func(t *testing.T) {
			read, err := ReadJournal(writeJournal(t, j))
			if err != nil {
				t.Fatal(err)
			}
			page := renderHTML(t, Input{Journal: read})
			if len(page) > maxReportBytes {
				t.Errorf("the report is %d bytes, want at most %d", len(page), maxReportBytes)
			}
			summary := renderMarkdown(t, Input{Journal: read})
			if len(summary) > maxReportBytes/4 {
				t.Errorf("the Markdown summary is %d bytes, want at most %d", len(summary), maxReportBytes/4)
			}
			// The same journal given whole (drill run --report renders
			// the run's own) is bounded alike.
			if whole := renderHTML(t, Input{Journal: j}); len(whole) > maxReportBytes {
				t.Errorf("the report of the journal in memory is %d bytes, want at most %d", len(whole), maxReportBytes)
			}
			body := text(parse(t, page))
			switch name {
			case "texts of megabytes":
				for _, want := range []string{"more bytes in the journal]"} {
					if !strings.Contains(body, want) {
						t.Errorf("the report does not say %q", want)
					}
				}
			case "tens of thousands of rows":
				for _, want := range []string{"… and 19900 more steps: the journal has them all", "… and 19900 more levers",
					"… and 19900 more audit records", "… and 19900 more notices", "… and 19900 more recoveries", "… and 19901 more alarms",
					"… and 19901 more checks", "… and 19900 more preflight checks", "4980 more outputs in the journal"} {
					if !strings.Contains(body, want) {
						t.Errorf("the report does not say %q", want)
					}
				}
				if !strings.Contains(renderMarkdown(t, Input{Journal: read}), "… and 19900 more steps: the journal has them all") {
					t.Error("the Markdown summary does not say how many steps it left out")
				}
			case "thousands of instances and stop conditions":
				for _, want := range []string{"39952 more instances (99 dependencies) not drawn", "… and 1991 more stop conditions"} {
					if !strings.Contains(page, want) {
						t.Errorf("the report does not say %q", want)
					}
				}
			}
		})
	}
}

// What ReadJournal keeps of a long text is what the report shows of it:
// the journal in memory is about the report's size, not the file's.
func TestReadJournalFoldsWhatTheReportCannotShow(t *testing.T) {
	j := hostileJournals()["texts of megabytes"]
	j.Steps[0].Log = []string{strings.Repeat("progress ", 1<<17)}
	read, err := ReadJournal(writeJournal(t, j))
	if err != nil {
		t.Fatal(err)
	}
	for what, s := range map[string]string{"reason": read.Reason, "description": read.Drill.Description, "step detail": read.Steps[0].Detail,
		"step error": read.Steps[0].Error, "output": read.Steps[0].Outputs["body"], "stop detail": read.Stop.Detail,
		"alarm reason": read.Stop.Alarms[0].Reason, "notice": read.Notices[0], "audit subject": read.Audit[0].Subject} {
		if len(s) > maxText+foldSlack || !strings.HasSuffix(s, "more bytes in the journal]") {
			t.Errorf("%s: %d bytes kept, ending %q", what, len(s), s[max(0, len(s)-40):])
		}
	}
	if read.Steps[0].Log != nil {
		t.Errorf("a step's progress log (%d lines) was kept; no report shows it", len(read.Steps[0].Log))
	}
	// What is short is read as it is.
	if read.Steps[1].Detail != j.Steps[1].Detail || read.Outcome != j.Outcome || read.Steps[0].Outputs["dependency"] != "openai" {
		t.Errorf("short values changed: %q, %q", read.Steps[1].Detail, read.Outcome)
	}
}

func BenchmarkReadJournalOfLongTexts(b *testing.B) {
	path := writeJournal(b, hostileJournals()["texts of megabytes"])
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadJournal(path); err != nil {
			b.Fatal(err)
		}
	}
}
