package metrics_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/metrics"
)

// Issue 35: NaN, +Inf, 3.4, samples from 1970, a duplicated series and a
// fleet that shrank were all "confirmed". Goal.Stand is the one rule; each
// hostile reading is unknown, never a confirmation.
func TestStandConfirmsOnlyASoundReadingOfTheGoal(t *testing.T) {
	since := now.Add(-10 * time.Second) // the change was written 10 s before the read
	read := func(v float64) *metrics.Reading { return &metrics.Reading{Value: v, Series: 1, ReadAt: now} }
	at := func(v float64, sampled time.Time) *metrics.Reading {
		r := read(v)
		r.SampledAt = sampled
		return r
	}
	twice := func(v float64) *metrics.Reading {
		r := read(v)
		r.Series = 2
		return r
	}
	tests := []struct {
		name string
		goal metrics.Goal
		in   metrics.InstanceSeries
		want metrics.Standing
		why  string // a part of the reason, for Unknown and Departed
	}{
		{"forced reads forced", metrics.GoalForced, metrics.InstanceSeries{Newest: read(3)}, metrics.Shows, ""},
		{"closed after a force", metrics.GoalForced, metrics.InstanceSeries{Newest: read(0)}, metrics.Contradicts, ""},
		{"open after a force", metrics.GoalForced, metrics.InstanceSeries{Newest: read(2)}, metrics.Contradicts, ""},
		{"NaN", metrics.GoalForced, metrics.InstanceSeries{Newest: read(math.NaN())}, metrics.Unknown, "reports NaN, not a state"},
		{"+Inf", metrics.GoalForced, metrics.InstanceSeries{Newest: read(math.Inf(1))}, metrics.Unknown, "reports +Inf"},
		{"-Inf after a clear", metrics.GoalReleased, metrics.InstanceSeries{Newest: read(math.Inf(-1))}, metrics.Unknown, "reports -Inf"},
		{"3.4 is no state, not forced", metrics.GoalForced, metrics.InstanceSeries{Newest: read(3.4)}, metrics.Unknown, "reports 3.4"},
		{"2.6 is no state either", metrics.GoalForced, metrics.InstanceSeries{Newest: read(2.6)}, metrics.Unknown, "reports 2.6"},
		{"0.4 after a clear", metrics.GoalReleased, metrics.InstanceSeries{Newest: read(0.4)}, metrics.Unknown, "reports 0.4"},
		{"4 is out of range", metrics.GoalForced, metrics.InstanceSeries{Newest: read(4)}, metrics.Unknown, "reports 4"},
		{"-1 after a clear", metrics.GoalReleased, metrics.InstanceSeries{Newest: read(-1)}, metrics.Unknown, "reports -1"},
		{"sample from 1970", metrics.GoalForced, metrics.InstanceSeries{Newest: at(3, time.UnixMilli(1000))}, metrics.Unknown, "1970-01-01T00:00:01Z, before the change"},
		{"sample before the change", metrics.GoalForced, metrics.InstanceSeries{Newest: at(3, since.Add(-time.Millisecond))}, metrics.Unknown, "before the change"},
		{"sample after the change", metrics.GoalForced, metrics.InstanceSeries{Newest: at(3, since.Add(time.Second))}, metrics.Shows, ""},
		{"sample from the future", metrics.GoalForced, metrics.InstanceSeries{Newest: at(3, now.Add(time.Hour))}, metrics.Unknown, "after the read"},
		{"duplicated series, 0 then 3", metrics.GoalForced, metrics.InstanceSeries{Newest: twice(3)}, metrics.Unknown, "reported 2 times in one read"},
		{"duplicated series after a clear", metrics.GoalReleased, metrics.InstanceSeries{Newest: twice(0)}, metrics.Unknown, "duplicated series"},
		{"released reads open", metrics.GoalReleased, metrics.InstanceSeries{Newest: read(2)}, metrics.Shows, ""},
		{"still forced after a clear", metrics.GoalReleased, metrics.InstanceSeries{Newest: read(3)}, metrics.Contradicts, ""},
		{"stopped reporting after the change: the fleet shrank", metrics.GoalForced,
			metrics.InstanceSeries{LastRead: since.Add(time.Second), LastSeen: since.Add(time.Second)}, metrics.Unknown, "stopped reporting at"},
		{"stopped reporting just before the change", metrics.GoalForced,
			metrics.InstanceSeries{LastRead: since.Add(-time.Second)}, metrics.Unknown, "stopped reporting"},
		{"gone long before the change", metrics.GoalForced,
			metrics.InstanceSeries{LastRead: since.Add(-time.Hour), LastSeen: since.Add(-time.Hour)}, metrics.Departed, "before the change"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := tt.goal.Stand(tt.in, since)
			if got != tt.want || !strings.Contains(why, tt.why) {
				t.Errorf("Stand = %d %q, want %d with %q", got, why, tt.want, tt.why)
			}
		})
	}
}

// The same hostile answers through the real scrape: never confirmed, and
// past the bound unconfirmed (nothing contradicts the goal) or not obeyed.
func TestJudgeScrapeNeverConfirmsAHostileExposition(t *testing.T) {
	const head = "# TYPE kosha_breaker_state gauge\n"
	line := func(instance, value string) string {
		return fmt.Sprintf("kosha_breaker_state{dependency=\"openai\",instance=%q} %s\n", instance, value)
	}
	forced := func(instances ...string) (s string) {
		for _, in := range instances {
			s += line(in, "3")
		}
		return s
	}
	tests := []struct {
		name    string
		before  string // the first scrape, if the fleet changes after it
		body    string
		verdict metrics.Verdict
		says    string
	}{
		{name: "NaN and +Inf", body: head + line("gw-1", "NaN") + line("gw-2", "+Inf") + forced("gw-3", "gw-4"),
			verdict: metrics.Unconfirmed, says: "forced on 2 of 4 instances, unconfirmed (unknown: gw-1 reports NaN, not a state; gw-2 reports +Inf, not a state)"},
		{name: "3.4", body: head + line("gw-1", "3.4") + forced("gw-2", "gw-3", "gw-4"),
			verdict: metrics.Unconfirmed, says: "gw-1 reports 3.4, not a state"},
		{name: "stale samples from 1970", body: head + line("gw-1", "3 1000") + line("gw-2", "3 2000") + forced("gw-3", "gw-4"),
			verdict: metrics.Unconfirmed, says: "gw-1 sample taken at 1970-01-01T00:00:01Z, before the change"},
		{name: "each instance twice, 0 then 3", body: head + line("gw-1", "0") + line("gw-1", "3") + line("gw-2", "0") + line("gw-2", "3"),
			verdict: metrics.Unconfirmed, says: "gw-1 reported 2 times in one read, a duplicated series"},
		{name: "one of four left", before: head + line("gw-1", "0") + line("gw-2", "0") + line("gw-3", "0") + line("gw-4", "0"), body: head + forced("gw-1"),
			verdict: metrics.Unconfirmed, says: "forced on 1 of 4 instances, unconfirmed (unknown: gw-2 stopped reporting at"},
		{name: "NaN beside a closed one", body: head + line("gw-1", "NaN") + line("gw-2", "0") + forced("gw-3"),
			verdict: metrics.NotObeyed, says: "forced on 1 of 3 instances, not obeyed (not forced: gw-2; unknown: gw-1 reports NaN, not a state)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := clocktest.NewFake(now)
			first := tt.before
			if first == "" {
				first = tt.body
			}
			e, url := serveMetrics(t, first)
			src, err := metrics.NewPrometheus([]string{url}, metrics.PrometheusOptions{Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			force := metrics.Change{Dependency: "openai", Goal: metrics.GoalForced, Since: clk.Now()}
			judge := func() metrics.Convergence {
				t.Helper()
				snap, err := src.Fetch(context.Background(), metrics.FetchRequest{Dependencies: []string{"openai"}})
				if err != nil {
					t.Fatal(err)
				}
				return metrics.Judge(force, &snap)
			}
			clk.Advance(time.Second)
			if cv := judge(); cv.Verdict == metrics.Confirmed {
				t.Fatalf("first scrape confirmed: %+v", cv)
			}
			e.set(tt.body)
			clk.Advance(time.Second)
			if cv := judge(); cv.Verdict != metrics.Converging {
				t.Errorf("within the bound: %s, want converging (%s)", cv.Verdict, cv.Summary())
			}
			clk.Advance(metrics.ScrapeLag)
			cv := judge()
			if cv.Verdict != tt.verdict || !strings.Contains(cv.Summary(), tt.says) {
				t.Errorf("past the bound: %s %q, want %s with %q", cv.Verdict, cv.Summary(), tt.verdict, tt.says)
			}
		})
	}
}

// Issue 35: "released on 1 of 4 instances (gw-1, gw-2, gw-4)" read as the
// instances that had released. The summary says which is which.
func TestSummaryNamesWhichInstancesAreWhich(t *testing.T) {
	cv := func(goal metrics.Goal, v metrics.Verdict, confirmed int, stragglers []string, unknown ...metrics.Doubt) metrics.Convergence {
		return metrics.Convergence{Change: metrics.Change{Goal: goal}, Verdict: v, PerInstance: true, Instances: 4, Confirmed: confirmed,
			Stragglers: stragglers, Unknown: unknown}
	}
	for want, c := range map[string]metrics.Convergence{
		"forced on 2 of 4 instances (not yet: gw-1, gw-2)":                    cv(metrics.GoalForced, metrics.Converging, 2, []string{"gw-1", "gw-2"}),
		"released on 1 of 4 instances (not yet: gw-1, gw-2, gw-4)":            cv(metrics.GoalReleased, metrics.Converging, 1, []string{"gw-1", "gw-2", "gw-4"}),
		"forced on 3 of 4 instances, not obeyed (not forced: gw-3)":           cv(metrics.GoalForced, metrics.NotObeyed, 3, []string{"gw-3"}),
		"released on 3 of 4 instances, not obeyed (still forced: gw-2)":       cv(metrics.GoalReleased, metrics.NotObeyed, 3, []string{"gw-2"}),
		"forced on 4 of 4 instances":                                          cv(metrics.GoalForced, metrics.Confirmed, 4, nil),
		"forced on 3 of 4 instances, unconfirmed (unknown: gw-4 reports NaN)": cv(metrics.GoalForced, metrics.Unconfirmed, 3, nil, metrics.Doubt{Instance: "gw-4", Why: "reports NaN"}),
	} {
		if got := c.Summary(); got != want {
			t.Errorf("Summary = %q, want %q", got, want)
		}
	}
}
