package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/exitcode"
)

func sampleJournal() *drill.Journal {
	t0 := time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)
	at := func(s float64) *time.Time { v := t0.Add(time.Duration(s * float64(time.Second))); return &v }
	return &drill.Journal{Kind: "DrillRun", Drill: drill.DrillInfo{Name: "demo", File: "demo.yaml"}, RunID: "abc123", Context: "local",
		StartedAt: t0, Deadline: t0.Add(time.Minute), EndedAt: at(12), DurationSeconds: 12, TimeoutSeconds: 60,
		Outcome: drill.OutcomeFailed, Reason: "step check failed: want 429", ExitCode: exitcode.Rollback,
		Hypothesis: drill.Hypothesis{Before: []drill.CheckRecord{{Phase: drill.PhaseBefore, Name: "steady", Kind: "http", OK: true, Detail: "200 in 3ms", DurationSeconds: 0.003}},
			AfterSkipped: "interrupted"},
		Steps: []drill.StepRecord{
			{ID: "force", Kind: "breaker.force-open", Status: drill.StatusPassed, DurationSeconds: 0.01, Detail: "ok"},
			{ID: "check", Kind: "http", Status: drill.StatusFailed, Error: "want 429 & <got> 200", DurationSeconds: 0.02, Log: []string{"a notice"}},
			{ID: "wait", Kind: "sleep", Status: drill.StatusInterrupted, Error: "interrupted"},
			{ID: "later", Kind: "shell", Status: drill.StatusSkipped},
		},
		Rollbacks: []drill.RollbackRecord{
			{ID: "rb-1", Step: "force", Subject: "breaker#openai", Status: drill.StatusFailed, Error: "store unavailable", Attempts: 3, ExpiresAt: at(60)},
			{ID: "rb-2", Step: "drill", Subject: "shell", Status: drill.StatusAbandoned, Error: "abandoned"},
			{ID: "rb-3", Step: "x", Subject: "rl#c", Status: drill.StatusOK, Detail: "restored"},
		},
	}
}

func TestJUnitMapsOutcomes(t *testing.T) {
	b, err := JUnit(sampleJournal())
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
		Skipped  int `xml:"skipped,attr"`
		Suite    struct {
			Name  string `xml:"name,attr"`
			Props []struct {
				Name  string `xml:"name,attr"`
				Value string `xml:"value,attr"`
			} `xml:"properties>property"`
			Cases []struct {
				Name      string `xml:"name,attr"`
				Classname string `xml:"classname,attr"`
				Failure   *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
				Error   *struct{} `xml:"error"`
				Skipped *struct {
					Message string `xml:"message,attr"`
				} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("not XML: %v\n%s", err, b)
	}
	// 1 check + 4 steps + 3 rollbacks + 1 skipped "hypothesis after".
	if doc.Tests != 9 || doc.Failures != 2 || doc.Errors != 2 || doc.Skipped != 2 {
		t.Errorf("counts: tests %d failures %d errors %d skipped %d\n%s", doc.Tests, doc.Failures, doc.Errors, doc.Skipped, b)
	}
	c := doc.Suite.Cases
	if c[2].Name != "02 check (http)" || c[2].Failure == nil || c[2].Failure.Message != "want 429 & <got> 200" ||
		c[3].Error == nil || c[4].Skipped == nil || c[5].Classname != "drill.demo.rollback" || c[5].Failure == nil ||
		c[6].Error == nil || c[7].Failure != nil || c[8].Skipped == nil || c[8].Skipped.Message != "interrupted" {
		t.Errorf("cases = %+v", c)
	}
	props := map[string]string{}
	for _, p := range doc.Suite.Props {
		props[p.Name] = p.Value
	}
	if props["exit_code"] != "9" || props["rollbacks_ok"] != "false" || props["run_id"] != "abc123" {
		t.Errorf("properties = %v", props)
	}
}

func TestLiveLogOnAndOffATerminal(t *testing.T) {
	j := sampleJournal()
	start := j.StartedAt
	events := []Event{
		{Kind: EventRunStarted, Time: start},
		{Kind: EventStepDone, Time: start.Add(1500 * time.Millisecond), StepIndex: 2, Step: &j.Steps[1]},
		{Kind: EventNotice, Time: start.Add(2 * time.Second), StepIndex: 2, Message: "waiting:\n  multi line"},
		{Kind: EventRollbackDone, Time: start.Add(3 * time.Second), Rollback: &j.Rollbacks[0]},
		{Kind: EventRunFinished, Time: start.Add(12 * time.Second)},
	}
	var plain, tty bytes.Buffer
	pl, tl := &LiveLog{W: &plain}, &LiveLog{W: &tty, TTY: true, Color: true}
	for _, ev := range events {
		ev.Journal = j
		pl.Report(ev)
		tl.Report(ev)
	}
	p := plain.String()
	for _, want := range []string{
		"2026-11-29T19:00:00.000Z drill demo: run abc123 on context \"local\"; timeout 1m",
		"2026-11-29T19:00:01.500Z   FAIL [2/4] check failed in 20ms: want 429 & <got> 200",
		"2026-11-29T19:00:02.000Z         waiting: multi line",
		"FAIL rb-1 breaker#openai: failed: store unavailable; it lapses on its own at 2026-11-29T19:01:00Z (3 attempts)",
		"FAILED in 12s: 1/4 steps passed; 1/3 rollbacks ok — SOME LEVERS WERE NOT RESTORED",
		"(exit 9)",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("plain log lacks %q:\n%s", want, p)
		}
	}
	if strings.Contains(p, "\x1b[") {
		t.Error("plain log has ANSI codes")
	}
	tt := tty.String()
	for _, want := range []string{"\x1b[2m  +1.5s\x1b[0m", "\x1b[31m✗\x1b[0m [2/4] check failed", "\x1b[31m\x1b[1mFAILED\x1b[0m"} {
		if !strings.Contains(tt, want) {
			t.Errorf("terminal log lacks %q:\n%q", want, tt)
		}
	}
	if strings.Contains(tt, "2026-11-29T") && !strings.Contains(tt, "deadline 2026-11-29T19:01:00Z") {
		t.Errorf("terminal lines should start with the elapsed time, not a timestamp:\n%s", tt)
	}
}

// The journal file is rewritten during the run, so a killed run still
// leaves one: after each step it lists that step and every rollback
// registered so far.
func TestJournalFileIsCurrentDuringTheRun(t *testing.T) {
	e := newEnv(t)
	path := filepath.Join(t.TempDir(), "j.json")
	jf := &JournalFile{Path: path}
	var seen []string
	rec := &recorder{on: func(ev Event) {
		if ev.Kind != EventStepDone {
			return
		}
		var j drill.Journal
		b, err := os.ReadFile(path)
		if err != nil || json.Unmarshal(b, &j) != nil {
			t.Errorf("journal unreadable after step %s: %v", ev.Step.ID, err)
			return
		}
		rbs := ""
		for _, rb := range j.Rollbacks {
			rbs += "r"
			if rb.ExpiresAt != nil {
				rbs += "e" // the lever's expiry is known as soon as it moved
			}
		}
		seen = append(seen, j.Outcome+":"+j.Steps[ev.StepIndex-1].Status+":"+rbs)
	}}
	d := parse(t, `
name: j
timeout: 1m
steps:
  - breaker.force-open: {dependency: openai}
  - ratelimit.drain: {client: c}
`)
	j, _ := e.run(context.Background(), d, jf, rec)
	if jf.Err() != nil {
		t.Fatal(jf.Err())
	}
	// A plain drain (no hold) refuses for one refill interval: it too has
	// a time by which it lapses.
	if strings.Join(seen, " ") != "running:passed:re running:passed:rere" {
		t.Errorf("journal during the run: %v", seen)
	}
	var final drill.Journal
	if err := json.Unmarshal([]byte(readFile(t, path)), &final); err != nil || final.Outcome != drill.OutcomePassed || final.EndedAt == nil ||
		final.ExitCode != j.ExitCode || final.Rollbacks[1].Status != drill.StatusOK {
		t.Errorf("final journal = %+v (%v)", final, err)
	}
}
