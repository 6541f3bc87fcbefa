package runner

import (
	"context"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
	"github.com/kosha-platform/koshactl/internal/gauge"
	"github.com/kosha-platform/koshactl/internal/impact"
)

// The journal (version 2) keeps what the game-day report shows: every
// breaker_state read the conditions made, every stop-condition
// evaluation up to the one that fired, and the audit id of every change.
func TestJournalRecordsGaugesStopEvaluationsAndAuditIDs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		d := parse(t, `
name: stop
timeout: 10m
poll_interval: 200ms
metrics_url: ${env.FLEET}/metrics
hypothesis:
  - name: openai closed
    breaker: {dependency: openai, state: closed}
stop_conditions:
  - name: core-api opened
    breaker: {dependency: core-api, state: [open, forced_open], instances: any}
steps:
  - breaker.force-open: {dependency: openai}
  - id: wait
    sleep: 5m
`)
		e.Fleet.Set("core-api", gauge.Closed)
		go func() {
			time.Sleep(1100 * time.Millisecond)
			e.Fleet.Set("core-api", gauge.Open)
		}()
		j, log := e.run(context.Background(), d)
		if j.Outcome != drill.OutcomeStopped || j.Version != drill.JournalVersion {
			t.Fatalf("outcome %s version %d\n%s", j.Outcome, j.Version, log)
		}
		var core []drill.GaugeSample
		openai := 0
		for _, s := range j.GaugeSamples {
			switch s.Dependency {
			case "core-api":
				core = append(core, s)
			case "openai":
				openai++
			}
		}
		if openai == 0 || len(core) < 3 || !slices.IsSortedFunc(core, func(a, b drill.GaugeSample) int { return a.At.Compare(b.At) }) {
			t.Fatalf("samples: %d of openai, core-api %+v", openai, core)
		}
		if first, last := core[0], core[len(core)-1]; len(first.Instances) == 0 || first.Instances[0].State != "closed" ||
			len(last.Instances) == 0 || last.Instances[0].State != "open" {
			t.Errorf("core-api went from %+v to %+v, want closed then open", first, last)
		}
		ev := j.StopEvaluations
		if len(ev) < 3 || slices.ContainsFunc(ev[:len(ev)-1], func(e drill.StopEvaluation) bool { return e.Holds }) ||
			!ev[len(ev)-1].Holds || !ev[len(ev)-1].At.Equal(j.Stop.At) || ev[0].Condition != "core-api opened" {
			t.Errorf("stop evaluations %+v, stop at %v", ev, j.Stop.At)
		}
		recs, err := e.Audit.List(context.Background(), audit.Query{})
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, r := range recs.Records {
			want = append(want, r.ID+" "+r.Action+" "+r.Subject)
		}
		var got []string
		for _, a := range j.Audit {
			got = append(got, a.ID+" "+a.Action+" "+a.Subject)
		}
		slices.Sort(want)
		slices.Sort(got)
		if len(got) != 2 || !slices.Equal(got, want) || !strings.Contains(strings.Join(got, ","), breaker.ActionForceOpen) {
			t.Errorf("journal audit refs %v, audit log %v", got, want)
		}
	})
}

// Past the cap, a read is recorded only when it differs from the one
// before for its dependency, so a long soak cannot grow the journal
// without bound.
func TestGaugeSamplesAreCapped(t *testing.T) {
	e := newEnv(t)
	r := &runJournal{journal: &drill.Journal{}}
	rc := runtime.NewRunContext(&drill.Drill{Timeout: time.Minute}, "run", e.Deps, nil)
	g := &journalingGauges{GaugeReader: e.Deps.Gauges, r: r, rc: rc}
	e.Fleet.Set("openai", gauge.Closed)
	for range maxGaugeSamples + 50 {
		if _, err := g.Read(context.Background(), "openai"); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(r.journal.GaugeSamples); n != maxGaugeSamples {
		t.Fatalf("%d samples, want the cap %d", n, maxGaugeSamples)
	}
	e.Fleet.Set("openai", gauge.Open)
	_, _ = g.Read(context.Background(), "openai")
	_, _ = g.Read(context.Background(), "openai")
	if n := len(r.journal.GaugeSamples); n != maxGaugeSamples+1 || r.journal.GaugeSamples[n-1].Instances[0].State != "open" {
		t.Errorf("%d samples after a change, want one more (the open read)", n)
	}
}

// Issue 46: the journal keeps, for each force the run made, the impact its
// audit record says (the tools the override changes, the rates seen),
// which the game-day report shows per lever. The rollback's restore
// decides from the item as read what it writes, and tells no impact.
func TestJournalKeepsTheImpactOfEachForce(t *testing.T) {
	e := newEnv(t)
	e.Deps.Levers = e.Deps.Levers.WithImpact(impact.Assessor{})
	d := parse(t, `
name: impact
timeout: 1m
steps:
  - breaker.force-open: {dependency: screening-sim, for: 10m}
`)
	j, log := e.run(context.Background(), d)
	if j.Outcome != drill.OutcomePassed {
		t.Fatalf("outcome %s\n%s", j.Outcome, log)
	}
	var got []string
	for _, a := range j.Audit {
		got = append(got, a.Action)
		if a.Impact != nil {
			for _, tr := range a.Impact.Tools {
				got = append(got, tr.Tool+" "+tr.Behaviour)
			}
		}
	}
	if want := []string{breaker.ActionForceOpen, "screen_entity deferred", breaker.ActionClear}; !slices.Equal(got, want) {
		t.Errorf("journal's impacts %q, want %q", got, want)
	}
}
