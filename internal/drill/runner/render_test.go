package runner

import (
	"bytes"
	"encoding/xml"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
	"github.com/kosha-platform/koshactl/internal/testutil/termtest"
)

// A run whose step outputs, errors and rollbacks carry what a hostile HTTP
// answer or store value holds.
func hostileJournal() *drill.Journal {
	j := sampleJournal()
	j.Reason = "step check failed: body \x1b]0;pwned\x07"
	j.Steps[1].Error = "want 429, got \x1b[2J200\r\nFORGED ok"
	j.Steps[1].Detail = "said \u202etxt.exe"
	j.Steps[1].Log = []string{"copy \x1b]52;c;cm0gLXJmIH4=\x07"}
	j.Steps[0].Description = "force \u2066isolated\u2069"
	j.Rollbacks[0].Error = "held by eve\x1b]0;title\x07"
	j.Rollbacks[2].Detail = "restored \x7f\u009b2J"
	j.Hypothesis.Before[0].Detail = "200 \xff\xfe"
	return j
}

var sgr = regexp.MustCompile("\x1b\\[[0-9;]*m")

func TestLiveLogShowsHostileValuesEscaped(t *testing.T) {
	j := hostileJournal()
	start := j.StartedAt
	events := []Event{
		{Kind: EventRunStarted, Time: start},
		{Kind: EventCheckDone, Time: start, Check: &j.Hypothesis.Before[0]},
		{Kind: EventStepStarted, Time: start, StepIndex: 1, Step: &j.Steps[0]},
		{Kind: EventStepDone, Time: start, StepIndex: 2, Step: &j.Steps[1]},
		{Kind: EventNotice, Time: start, StepIndex: 2, Message: "saw \x1b[2J"},
		{Kind: EventRollbackDone, Time: start, Rollback: &j.Rollbacks[0]},
		{Kind: EventRollbackDone, Time: start, Rollback: &j.Rollbacks[2]},
		{Kind: EventRunFinished, Time: start},
	}
	var plain, tty bytes.Buffer
	pl, tl := &LiveLog{W: &plain}, &LiveLog{W: &tty, TTY: true, Color: true}
	for _, ev := range events {
		ev.Journal = j
		pl.Report(ev)
		tl.Report(ev)
	}
	// On a terminal the log writes its own colors (and nothing else).
	for name, out := range map[string]string{"plain": plain.String(), "terminal": sgr.ReplaceAllString(tty.String(), "")} {
		termtest.AssertSafe(t, name, out)
		for _, want := range []string{`\x1b[2J200\r FORGED ok`, `held by eve\x1b]0;title\x07`, `restored \x7f\u009b2J`,
			`200 \xff\xfe`, `saw \x1b[2J`, `body \x1b]0;pwned\x07`, `force \u2066isolated\u2069`} {
			if !strings.Contains(out, want) {
				t.Errorf("%s log lacks %q:\n%s", name, want, out)
			}
		}
	}
	if summary := Summary(j, false); !strings.Contains(summary, `\x1b]0;pwned\x07`) {
		t.Errorf("summary: %q", summary)
	}
}

func TestJUnitIsValidXMLWithHostileValuesShown(t *testing.T) {
	b, err := JUnit(hostileJournal())
	if err != nil {
		t.Fatal(err)
	}
	termtest.AssertSafe(t, "junit", string(b))
	// Control characters are not allowed in XML 1.0 even as references.
	if bytes.Contains(b, []byte("&#x1B;")) || bytes.Contains(b, []byte("\uFFFD")) {
		t.Errorf("controls were referenced or replaced, not shown:\n%s", b)
	}
	var doc struct {
		Suite struct {
			Cases []struct {
				SystemOut string `xml:"system-out"`
				Failure   *struct {
					Message string `xml:"message,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
			} `xml:"testcase"`
			SystemOut string `xml:"system-out"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("not XML: %v\n%s", err, b)
	}
	all := string(b)
	for _, want := range []string{`\x1b[2J200\r`, `copy \x1b]52;c;cm0gLXJmIH4=\x07`, `said \u202etxt.exe`, `held by eve\x1b]0;title\x07`, `200 \xff\xfe`} {
		if !strings.Contains(all, want) {
			t.Errorf("report lacks %q:\n%s", want, b)
		}
	}
	// Element text keeps its lines.
	if !strings.Contains(all, `200\r&#xA;FORGED ok`) {
		t.Errorf("the failure text lost its newline:\n%s", b)
	}
}

// Drill reasons are cut by characters, never inside one, and always pass
// the one reason rule, even when a step output carries controls.
func TestDrillReasonIsRuneSafeAndValid(t *testing.T) {
	rc := runtime.NewRunContext(&drill.Drill{Name: "demo"}, "abc123", &runtime.Deps{Clock: clocktest.NewFake(time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC))}, nil)
	for _, detail := range []string{strings.Repeat("é", 600), strings.Repeat("x", 497) + "日本語", "body \x1b]0;t\x07 \u202e\r"} {
		r := rc.Reason(detail)
		if !utf8.ValidString(r) || utf8.RuneCountInString(r) > audit.MaxReasonLen {
			t.Errorf("Reason(%.20q…) = %d characters, valid UTF-8 %v", detail, utf8.RuneCountInString(r), utf8.ValidString(r))
		}
		if err := audit.ValidateReason(r); err != nil {
			t.Errorf("Reason(%.20q…) does not pass the reason rule: %v", detail, err)
		}
		if !strings.HasPrefix(r, "drill demo run abc123: ") {
			t.Errorf("Reason lost its run tag: %q", r)
		}
	}
}
