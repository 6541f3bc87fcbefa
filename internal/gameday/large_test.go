package gameday

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/drill"
)

// largeJournal is a long soak: 250,000 gauge reads of three dependencies'
// four instances, their states flapping every few reads, and 50,000 stop
// evaluations, the first of every 100 unevaluable.
func largeJournal() *drill.Journal {
	j := stoppedJournal()
	j.GaugeSamples, j.StopEvaluations = nil, nil
	states := []string{"closed", "open", "half_open", "forced_open"}
	deps := []string{"openai", "core-api", "screening-sim"}
	for i := range 250_000 {
		dep := deps[i%len(deps)]
		s := drill.GaugeSample{At: at(float64(i) * 21.0 / 250_000), Dependency: dep}
		for k := range 4 {
			s.Instances = append(s.Instances, drill.InstanceSample{Instance: fmt.Sprintf("gw-%d", k+1), State: states[(i/7+k)%len(states)]})
		}
		if i%5_000 < 30 { // a burst of failed reads within one column
			s.Instances, s.Error = nil, "scrape timed out"
		}
		j.GaugeSamples = append(j.GaugeSamples, s)
	}
	for i := range 50_000 {
		e := drill.StopEvaluation{At: at(float64(i) * 21.0 / 50_000), Condition: "api-5xx", Detail: "alarm kosha-api-5xx is OK"}
		if i%100 == 0 {
			e.Error = "GetMetricData throttled"
		}
		j.StopEvaluations = append(j.StopEvaluations, e)
	}
	return j
}

// The measurement: a 66 MB journal's report took 21 s and 1.4 GB
// and was 275 MB of HTML, one shape per read. Drawn at the plot's
// resolution, its size no longer grows with the run.
func TestLargeJournalReportIsDrawnAtThePlotsResolution(t *testing.T) {
	j := largeJournal()
	page := renderHTML(t, Input{Journal: j})
	if len(page) > 2<<20 {
		t.Errorf("the report of %d reads is %d bytes, want at most 2 MiB", len(j.GaugeSamples), len(page))
	}
	// At most one strip segment per column per instance, one mark per
	// column per kind of mark.
	shapes := strings.Count(page, "<rect") + strings.Count(page, "<circle")
	if limit := 3*4*columns + 3*4*columns + 3*columns + 200; shapes > limit {
		t.Errorf("%d shapes drawn, want at most %d", shapes, limit)
	}
	// What was there is still told: every state, the failed reads and
	// both kinds of evaluation.
	body := text(parse(t, page))
	for _, want := range []string{"openai gw-1: open from", "core-api gw-4: forced_open from", "within it also", "reads failed from",
		"evaluations from", "could not be evaluated: GetMetricData throttled", "breaker_state recorded by the run (250000 reads)"} {
		if !strings.Contains(page, want) && !strings.Contains(body, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
}

// A strip shows, in each column, the state held longest in it, and a
// change shorter than a column is named in the bar's title, not lost.
func TestStripShowsTheDominantStateAndNamesTheRest(t *testing.T) {
	j := stoppedJournal()
	a := newAxis(j, at(21.4))
	b := newBuilder(a)
	r := b.row("gw-1")
	// Open for 10 s, one 10 ms blip of closed inside it, then closed.
	strip(b, r, "openai", "gw-1", []stateRun{
		{state: "open", from: at(0), to: at(5)},
		{state: "closed", from: at(5), to: at(5.01)},
		{state: "open", from: at(5.01), to: at(10)},
		{state: "closed", from: at(10), to: at(21.4)},
	})
	if len(r.Bars) != 2 {
		t.Fatalf("%d bars, want 2 (open, closed): %+v", len(r.Bars), r.Bars)
	}
	if r.Bars[0].Class != "g-open" || !strings.Contains(r.Bars[0].Title, "within it also closed for 10ms") {
		t.Errorf("first bar %s %q, want g-open naming the 10ms closed blip", r.Bars[0].Class, r.Bars[0].Title)
	}
	if r.Bars[1].Class != "g-closed" {
		t.Errorf("second bar %s, want g-closed", r.Bars[1].Class)
	}
	if dominant(map[string]time.Duration{"closed": time.Second, "open": time.Second}) != "open" {
		t.Error("a tie between closed and open shows closed, want open (the more severe)")
	}
}

func BenchmarkReportLargeJournal(b *testing.B) {
	j := largeJournal()
	b.ReportAllocs()
	var n int
	for b.Loop() {
		var buf bytes.Buffer
		if err := HTML(&buf, Input{Journal: j}); err != nil {
			b.Fatal(err)
		}
		n = buf.Len()
	}
	b.ReportMetric(float64(n), "html-bytes")
}
