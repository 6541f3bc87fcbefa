package impact_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/impact"
)

var h0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func hm(m float64) time.Time { return h0.Add(time.Duration(m * float64(time.Minute))) }

func rate(v float64) *float64 { return &v }

// force is the record of forcing dep at minute at for forMin minutes (0:
// no expiry), with the tools' rates seen (nil impact: a record written
// before koshactl kept one).
func force(id, dep string, at, forMin float64, im *audit.Impact) audit.Record {
	o := breaker.Override{Dependency: dep, State: breaker.OverrideStateForcedOpen, Reason: "incident", Actor: "alice", CreatedAt: hm(at), Version: 1}
	if forMin > 0 {
		o.ExpiresAt = hm(at + forMin)
	}
	after, err := json.Marshal(breaker.AuditState(&o))
	if err != nil {
		panic(err)
	}
	return audit.Record{ID: id, Time: hm(at), Actor: "alice", Action: breaker.ActionForceOpen, Subject: breaker.OverrideKey(dep), Reason: "incident",
		Outcome: "ok", After: after, Impact: im}
}

func clearRec(id, dep string, at float64, im *audit.Impact) audit.Record {
	return audit.Record{ID: id, Time: hm(at), Actor: "bob", Action: breaker.ActionClear, Subject: breaker.OverrideKey(dep), Outcome: "ok", Impact: im}
}

func screening(perMin *float64) *audit.Impact {
	return &audit.Impact{Dependency: impact.ScreeningSim, Obeyed: true,
		Tools: []audit.ToolRate{{Tool: impact.ToolScreenEntity, Behaviour: string(impact.Deferred), CallsPerMinute: perMin}}}
}

// span says a span in a line a test compares.
func span(s impact.Span) string {
	line := fmt.Sprintf("%s %s %s %s..%s %s by %s %s>%s", s.Dependency, s.Tool, s.Behaviour, s.From.Sub(h0), s.To.Sub(h0), s.Ended, s.ForcedBy,
		s.ForceRecord, s.EndRecord)
	if s.CallsPerMinute != nil {
		line += fmt.Sprintf(" %g/min", *s.CallsPerMinute)
	}
	if s.Calls != nil {
		line += fmt.Sprintf(" %d calls", *s.Calls)
	}
	return line
}

// History answers "which tools were degraded, when, and how many calls did
// that touch" from the records of forces and their ends.
func TestHistorySpans(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		recs         []audit.Record
		since, until float64
		want         []string
	}{{
		name: "a force and its clear: the two rates averaged over the span",
		recs: []audit.Record{force("f1", impact.ScreeningSim, 10, 60, screening(rate(20))), clearRec("c1", impact.ScreeningSim, 40, screening(rate(30)))},
		// 25 a minute for 30 minutes.
		since: 0, until: 60,
		want: []string{"screening-sim screen_entity deferred 10m0s..40m0s cleared by alice f1>c1 25/min 750 calls"},
	}, {
		name:  "an override that lapsed ends at its expiry, whatever clears it later",
		recs:  []audit.Record{force("f1", impact.ScreeningSim, 10, 20, screening(rate(10))), clearRec("c1", impact.ScreeningSim, 50, screening(rate(99)))},
		since: 0, until: 60,
		want: []string{"screening-sim screen_entity deferred 10m0s..30m0s expired by alice f1> 10/min 200 calls"},
	}, {
		name:  "a later force replaces the first",
		recs:  []audit.Record{force("f1", impact.ScreeningSim, 10, 0, screening(rate(10))), force("f2", impact.ScreeningSim, 20, 0, screening(rate(40)))},
		since: 0, until: 30,
		want: []string{"screening-sim screen_entity deferred 10m0s..20m0s replaced by alice f1>f2 10/min 100 calls",
			"screening-sim screen_entity deferred 20m0s..30m0s holding by alice f2> 40/min 400 calls"},
	}, {
		name:  "the range cuts a span that started before it and one still holding",
		recs:  []audit.Record{force("f1", impact.ScreeningSim, 10, 0, screening(rate(6)))},
		since: 20, until: 30,
		want: []string{"screening-sim screen_entity deferred 20m0s..30m0s holding by alice f1> 6/min 60 calls"},
	}, {
		name:  "a span over before the range is not in it",
		recs:  []audit.Record{force("f1", impact.ScreeningSim, 0, 0, screening(rate(6))), clearRec("c1", impact.ScreeningSim, 5, nil)},
		since: 10, until: 30,
		want: nil,
	}, {
		name:  "a force recorded without an impact takes its tools from the matrix, without a count",
		recs:  []audit.Record{force("f1", impact.OpenAI, 0, 10, nil)},
		since: 0, until: 60,
		want: []string{"openai search_knowledge_base degraded 0s..10m0s expired by alice f1>"},
	}, {
		name:  "a rate read by the force alone",
		recs:  []audit.Record{force("f1", impact.ScreeningSim, 0, 0, screening(rate(12))), clearRec("c1", impact.ScreeningSim, 10, screening(nil))},
		since: 0, until: 60,
		want: []string{"screening-sim screen_entity deferred 0s..10m0s cleared by alice f1>c1 12/min 120 calls"},
	}, {
		name: "an override no instance obeys changes no tool; unaffected tools are not spans",
		recs: []audit.Record{force("f1", impact.Postgres, 0, 0, &audit.Impact{Dependency: impact.Postgres, Tools: []audit.ToolRate{}}),
			force("f2", impact.Postgres, 1, 0, nil),
			force("f3", impact.SQS, 2, 0, nil)},
		since: 0, until: 60,
		want: nil,
	}, {
		name: "records of other levers, failed changes and the data plane's are not forces",
		recs: []audit.Record{
			{ID: "x1", Time: hm(1), Action: "ratelimit.drain", Subject: "rl#client-7", Outcome: "ok"},
			func() audit.Record {
				r := force("x2", impact.ScreeningSim, 2, 0, screening(rate(5)))
				r.Outcome = "failed"
				return r
			}(),
			func() audit.Record {
				r := force("x3", impact.ScreeningSim, 3, 0, screening(rate(5)))
				r.DataPlane = true
				return r
			}(),
		},
		since: 0, until: 60,
		want: nil,
	}, {
		name:  "records in any order",
		recs:  []audit.Record{clearRec("c1", impact.ScreeningSim, 40, screening(rate(30))), force("f1", impact.ScreeningSim, 10, 0, screening(rate(20)))},
		since: 0, until: 60,
		want: []string{"screening-sim screen_entity deferred 10m0s..40m0s cleared by alice f1>c1 25/min 750 calls"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, s := range impact.History(tc.recs, hm(tc.since), hm(tc.until)) {
				got = append(got, span(s))
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("spans\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// A force's and a clear's record keep the report's part of their
// dependency: the tools its row changes with their rates, and where the
// rates came from.
func TestReportRecordIsTheDependencysPart(t *testing.T) {
	t.Parallel()
	r := impact.Static(impact.Request{Dependencies: []string{impact.ScreeningSim, impact.Postgres}, For: 30 * time.Minute})
	r.WithRates(screeningRates())
	rec := r.Record(impact.ScreeningSim)
	if rec == nil || !rec.Obeyed || len(rec.Tools) != 1 || rec.Tools[0].Tool != impact.ToolScreenEntity || rec.Tools[0].Behaviour != "deferred" ||
		rec.Tools[0].CallsPerMinute == nil || *rec.Tools[0].CallsPerMinute != 25 || rec.CallsPerMinute == nil || *rec.CallsPerMinute != 31.5 ||
		rec.RatesSource != "prometheus http://127.0.0.1:8787/metrics" || rec.WindowSeconds != 5 {
		t.Errorf("screening-sim's record %+v", rec)
	}
	if pg := r.Record(impact.Postgres); pg == nil || pg.Obeyed || len(pg.Tools) != 0 {
		t.Errorf("postgres's record %+v, want no tool: nothing obeys its override", pg)
	}
	if r.Record(impact.OpenAI) != nil {
		t.Error("a dependency the report does not name has a record")
	}
}
