package metrics_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/metrics"
)

// A bake judges the breakers re-opened on most instances when more than
// half of the fleet reports open or half-open; forced (someone's override)
// and closed are not re-opened; an unreadable value is unknown.
func TestJudgeReopenCountsOpenAndHalfOpenInstances(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		values   []int
		reopened []string
		tripped  bool
	}{
		{"three of four open or half-open", []int{2, 1, 2, 0}, []string{"gw-1", "gw-2", "gw-3"}, true},
		{"half is not most", []int{2, 2, 0, 0}, []string{"gw-1", "gw-2"}, false},
		{"forced is someone's override, not a re-open", []int{3, 3, 3, 0}, []string{}, false},
		{"a closed fleet held", []int{0, 0, 0, 0}, []string{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := clocktest.NewFake(now)
			_, url := serveMetrics(t, scrapeText(tc.values...))
			src, err := metrics.NewPrometheus([]string{url}, metrics.PrometheusOptions{Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			clk.Advance(time.Minute)
			snap, err := src.Fetch(context.Background(), metrics.FetchRequest{Dependencies: []string{"openai"}})
			if err != nil {
				t.Fatal(err)
			}
			r := metrics.JudgeReopen("openai", now, &snap)
			if !r.Judged || r.Instances != 4 || !reflect.DeepEqual(r.Reopened, tc.reopened) || r.Tripped(metrics.DefaultReopenShare) != tc.tripped {
				t.Errorf("JudgeReopen = %+v (tripped %v), want 4 instances, re-opened %v, tripped %v", r, r.Tripped(metrics.DefaultReopenShare), tc.reopened, tc.tripped)
			}
		})
	}
}

func TestJudgeReopenShareAndUnknown(t *testing.T) {
	t.Parallel()
	clk := clocktest.NewFake(now)
	_, url := serveMetrics(t, "# TYPE kosha_breaker_state gauge\n"+
		"kosha_breaker_state{dependency=\"openai\",instance=\"gw-1\"} 2\n"+
		"kosha_breaker_state{dependency=\"openai\",instance=\"gw-2\"} 7\n"+
		"kosha_breaker_state{dependency=\"openai\",instance=\"gw-3\"} 0\n"+
		"kosha_breaker_state{dependency=\"openai\",instance=\"gw-4\"} 0\n")
	src, err := metrics.NewPrometheus([]string{url}, metrics.PrometheusOptions{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := src.Fetch(context.Background(), metrics.FetchRequest{Dependencies: []string{"openai"}})
	if err != nil {
		t.Fatal(err)
	}
	r := metrics.JudgeReopen("openai", now, &snap)
	if r.Instances != 4 || len(r.Unknown) != 1 || r.Unknown[0].Instance != "gw-2" || !reflect.DeepEqual(r.Reopened, []string{"gw-1"}) {
		t.Fatalf("JudgeReopen = %+v, want gw-1 re-opened, gw-2 unknown, of 4", r)
	}
	if r.Tripped(0.5) || !r.Tripped(0.2) || !r.Tripped(0) {
		t.Errorf("one of four re-opened: tripped at 0.5 %v, at 0.2 %v, at 0 %v; want false, true, true", r.Tripped(0.5), r.Tripped(0.2), r.Tripped(0))
	}
	if got := metrics.JudgeReopen("core-api", now, &snap); got.Judged || got.Tripped(0) {
		t.Errorf("a dependency no instance reports: %+v, want not judged", got)
	}
}

// CloudWatch's fleet statistics cannot say how many instances re-opened:
// without a complete breakdown nothing is judged (and nothing tripped).
func TestJudgeReopenNeedsCloudWatchsBreakdown(t *testing.T) {
	t.Parallel()
	snap := metrics.Snapshot{FetchedAt: now.Add(5 * time.Minute), Period: time.Minute, Series: map[string]metrics.Series{
		"openai": {Dependency: "openai", Breakdown: metrics.BreakdownNotFetched,
			Timeline: []metrics.Point{{Time: now.Add(2 * time.Minute), Max: 2, Min: 2, Samples: 4}}}}}
	if r := metrics.JudgeReopen("openai", now, &snap); r.Judged || r.Tripped(0) {
		t.Errorf("fleet statistics alone: %+v, want not judged", r)
	}
	pts := func(v float64) []metrics.Point {
		return []metrics.Point{{Time: now.Add(2 * time.Minute), Max: v, Min: v, Samples: 1}}
	}
	snap.Series["openai"] = metrics.Series{Dependency: "openai", Breakdown: metrics.BreakdownComplete, Instances: []metrics.InstanceSeries{
		{Instance: "gw-1", Points: pts(2)}, {Instance: "gw-2", Points: pts(1)}, {Instance: "gw-3", Points: pts(0)}}}
	r := metrics.JudgeReopen("openai", now, &snap)
	if !r.Judged || r.Instances != 3 || !reflect.DeepEqual(r.Reopened, []string{"gw-1", "gw-2"}) || !r.Tripped(0.5) {
		t.Errorf("breakdown: %+v, want gw-1 and gw-2 of 3 re-opened, tripped", r)
	}
}
