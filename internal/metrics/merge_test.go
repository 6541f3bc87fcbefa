package metrics_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/metrics"
)

// fleetSnap builds a snapshot of one dependency whose instances last
// reported the given values at the given ages, the fleet known only through
// them (a scrape, or a publisher without the fleet dimension set).
func fleetSnap(dep string, values []float64, ages []time.Duration) *metrics.Snapshot {
	s := metrics.Series{Dependency: dep, TimelineFromInstances: true}
	for i, v := range values {
		at := now.Truncate(time.Minute).Add(-ages[i])
		s.Instances = append(s.Instances, metrics.InstanceSeries{
			Instance: "gw-" + string(rune('1'+i)), LastSeen: at,
			Points: []metrics.Point{{Time: at, Max: v, Min: v, Samples: 1}},
		})
	}
	snap := &metrics.Snapshot{FetchedAt: now, Period: time.Minute, StaleAfter: 5 * time.Minute,
		Series: map[string]metrics.Series{dep: s}}
	return snap
}

func ages(n int, d time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}

func override(createdAgo, expiresIn time.Duration) breaker.Override {
	return breaker.Override{Dependency: "openai", State: breaker.OverrideStateForcedOpen, Reason: "INC-142",
		Actor: "alice@laptop", CreatedAt: now.Add(-createdAgo), ExpiresAt: now.Add(expiresIn), Version: 1}
}

func TestMergeDerivesTheStateToBelieve(t *testing.T) {
	for _, tc := range []struct {
		name       string
		overrides  []breaker.Override
		snap       *metrics.Snapshot
		state      metrics.State
		gaugeState metrics.State
		note       string // substring of the only note; empty: no notes
	}{
		{"all closed", nil, fleetSnap("openai", []float64{0, 0, 0}, ages(3, time.Minute)), metrics.Closed, metrics.Closed, ""},
		{"all half-open", nil, fleetSnap("openai", []float64{1, 1}, ages(2, time.Minute)), metrics.HalfOpen, metrics.HalfOpen, ""},
		{"instances disagree", nil, fleetSnap("openai", []float64{0, 2, 0}, ages(3, time.Minute)), metrics.Mixed, metrics.Mixed, ""},
		{"stale instance ignored", nil, fleetSnap("openai", []float64{0, 2}, []time.Duration{time.Minute, 20 * time.Minute}),
			metrics.Closed, metrics.Closed, ""},
		{"every instance stale", nil, fleetSnap("openai", []float64{0, 2}, ages(2, 20*time.Minute)),
			metrics.NoData, metrics.NoData, "none of 2 instances"},
		{"no gauges at all", nil, nil, metrics.NoData, metrics.NoData, ""},
		{"override, gauges agree", []breaker.Override{override(10*time.Minute, time.Hour)},
			fleetSnap("openai", []float64{3, 3}, ages(2, time.Minute)), metrics.Forced, metrics.Forced, ""},
		{"override just set, gauges lag", []breaker.Override{override(40*time.Second, time.Hour)},
			fleetSnap("openai", []float64{2, 0}, ages(2, time.Minute)), metrics.Forced, metrics.Mixed, "override set 40s ago: gauges catch up"},
		{"override long set, instances ignore it", []breaker.Override{override(30*time.Minute, time.Hour)},
			fleetSnap("openai", []float64{3, 0, 3}, ages(3, time.Minute)), metrics.Forced, metrics.Mixed, "1 of 3 instances do not report forced"},
		{"override without gauges", []breaker.Override{override(time.Minute, time.Hour)}, nil, metrics.Forced, metrics.NoData, ""},
		{"gauges forced, no override", nil, fleetSnap("openai", []float64{3, 3}, ages(2, time.Minute)), metrics.Forced, metrics.Forced,
			"no override is active"},
		{"override expired long ago, item left", []breaker.Override{override(3*time.Hour, -2*time.Hour)},
			fleetSnap("openai", []float64{0}, ages(1, time.Minute)), metrics.Closed, metrics.Closed, "override expired 2h ago"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := metrics.Merge([]string{"openai"}, tc.overrides, tc.snap, now)
			if len(got) != 1 {
				t.Fatalf("statuses = %d", len(got))
			}
			st := got[0]
			if st.State != tc.state || st.GaugeState != tc.gaugeState {
				t.Errorf("state %s / gauges %s, want %s / %s", st.State, st.GaugeState, tc.state, tc.gaugeState)
			}
			if st.OverrideActive != (tc.state == metrics.Forced && len(tc.overrides) > 0) {
				t.Errorf("override active = %v", st.OverrideActive)
			}
			switch {
			case tc.note == "" && len(st.Notes) > 0:
				t.Errorf("unexpected notes %q", st.Notes)
			case tc.note != "" && (len(st.Notes) != 1 || !strings.Contains(st.Notes[0], tc.note)):
				t.Errorf("notes = %q, want one containing %q", st.Notes, tc.note)
			}
		})
	}
}

func TestMergeCountsInstancesByState(t *testing.T) {
	st := metrics.Merge(nil, nil, fleetSnap("openai", []float64{0, 2, 2, 3, 0}, []time.Duration{
		time.Minute, time.Minute, time.Minute, time.Minute, 30 * time.Minute}), now)[0]
	g := st.Gauges
	if g.Reporting != 4 || g.Known != 5 || g.ByState != [4]int{1, 0, 2, 1} || g.Max != 3 || g.Min != 0 {
		t.Errorf("gauges = %+v", g)
	}
	if st.Instances[4].Reporting {
		t.Errorf("gw-5 reported 30 minutes ago and counts as reporting")
	}
}

func TestMergeListsEveryKnownOverriddenAndReportedDependency(t *testing.T) {
	snap := fleetSnap("postgres", []float64{0}, ages(1, time.Minute))
	o := override(time.Minute, time.Hour)
	o.Dependency = "legacy-api"
	got := metrics.Merge([]string{"openai", "core-api"}, []breaker.Override{o}, snap, now)
	var names []string
	for _, st := range got {
		names = append(names, st.Dependency)
	}
	if strings.Join(names, ",") != "core-api,legacy-api,openai,postgres" {
		t.Errorf("dependencies = %v", names)
	}
}

func TestStateNames(t *testing.T) {
	for s, want := range map[metrics.State][2]string{
		metrics.NoData: {"no_data", "no data"}, metrics.Closed: {"closed", "closed"}, metrics.HalfOpen: {"half_open", "half-open"},
		metrics.Open: {"open", "open"}, metrics.Forced: {"forced_open", "forced"}, metrics.Mixed: {"mixed", "mixed"},
	} {
		if s.String() != want[0] || s.Label() != want[1] {
			t.Errorf("%d: %q %q, want %q", s, s.String(), s.Label(), want)
		}
		for _, text := range want {
			if back, err := metrics.ParseState(text); err != nil || back != s {
				t.Errorf("ParseState(%q) = %v, %v", text, back, err)
			}
		}
	}
	if _, err := metrics.ParseState("broken"); !errors.Is(err, metrics.ErrUnknownState) {
		t.Errorf("ParseState(broken) = %v", err)
	}
	for v, want := range map[float64]bool{0: true, 3: true, 2.0000001: true, -1: false, 4: false} {
		if _, ok := metrics.GaugeState(v); ok != want {
			t.Errorf("GaugeState(%v) ok = %v", v, ok)
		}
	}
}

// A CloudWatch-shaped series: the fleet statistics say one instance is open
// (Maximum 2) while the instance series returned, truncated at CloudWatch's
// metric limit, are all closed. Worst, best and the state come from the
// fleet; the counts are marked partial and a note says why.
func TestMergeTakesWorstAndBestFromTheFleetNotAPartialBreakdown(t *testing.T) {
	at := now.Truncate(time.Minute)
	fleetPoint := []metrics.Point{{Time: at, Max: 2, Min: 0, Samples: 300}}
	partial := metrics.Series{Dependency: "openai", Timeline: fleetPoint, Breakdown: metrics.BreakdownPartial,
		BreakdownNote: "per-instance breakdown is partial: test"}
	for i := range 188 {
		partial.Instances = append(partial.Instances, metrics.InstanceSeries{Instance: fmt.Sprintf("i-%03d", i), LastSeen: at,
			Points: []metrics.Point{{Time: at, Max: 0, Min: 0, Samples: 1}}})
	}
	notFetched := metrics.Series{Dependency: "postgres", Timeline: []metrics.Point{{Time: at, Max: 3, Min: 3, Samples: 300}},
		Breakdown: metrics.BreakdownNotFetched}
	snap := &metrics.Snapshot{FetchedAt: now, Period: time.Minute, StaleAfter: 5 * time.Minute,
		Series: map[string]metrics.Series{"openai": partial, "postgres": notFetched}}
	got := metrics.Merge(nil, nil, snap, now)
	o, p := got[0], got[1]
	if o.GaugeState != metrics.Mixed || o.Gauges.Max != 2 || o.Gauges.Min != 0 || o.Gauges.Samples != 300 ||
		o.Gauges.Known != 188 || o.Gauges.Breakdown != metrics.BreakdownPartial {
		t.Errorf("openai = %s %+v, want mixed, worst open from the fleet, 188 instances of a partial breakdown", o.GaugeState, o.Gauges)
	}
	if len(o.Notes) != 1 || !strings.Contains(o.Notes[0], "partial") {
		t.Errorf("openai notes = %q", o.Notes)
	}
	if p.GaugeState != metrics.Forced || p.Gauges.Known != 0 || p.Gauges.Breakdown != metrics.BreakdownNotFetched {
		t.Errorf("postgres = %s %+v, want forced from the fleet without a breakdown", p.GaugeState, p.Gauges)
	}
	if len(p.Notes) != 1 || !strings.Contains(p.Notes[0], "gauges report forced but no override is active") {
		t.Errorf("postgres notes = %q: the fleet reports forced although no instance is shown", p.Notes)
	}
}
