package metrics_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/metrics/cwfake"
)

// putNow publishes one value per instance i-000 … 30 s before now: 0,
// except 2 for the instance named open.
func putNow(s *cwfake.Server, dep string, instances int, open string) {
	for i := range instances {
		inst := fmt.Sprintf("i-%03d", i)
		v := 0.0
		if inst == open {
			v = 2
		}
		s.Put(dep, inst, now.Add(-30*time.Second), v)
	}
}

// At 20 dependencies x 300 instances a refresh stays within CloudWatch's
// limits: the table's refresh is one request of 60 metrics; the detail
// view's breakdown adds one request of 1 query + 300 series, read again
// only once a minute. Counted, not timed.
func TestCloudWatchAtTwentyByThreeHundred(t *testing.T) {
	s := cwfake.New(t)
	all := deps(20)
	for _, d := range all {
		open := ""
		if d == "dep-007" {
			open = "i-299" // the last name: the one a truncated SEARCH would drop
		}
		putNow(s, d, 300, open)
	}
	clk := clocktest.NewFake(now)
	cw, err := metrics.NewCloudWatch(s.Client(1), metrics.CloudWatchOptions{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	refresh := func(detail ...string) metrics.Snapshot {
		t.Helper()
		snap, err := cw.Fetch(context.Background(), metrics.FetchRequest{Dependencies: all, Window: time.Hour, Instances: detail})
		if err != nil {
			t.Fatal(err)
		}
		return snap
	}

	table := refresh()
	if table.Requests != 1 || table.Metrics != 60 || s.Requests()[0].Metrics != 60 {
		t.Errorf("table refresh: %d requests, %d metrics; want 1 request of 60 (20 x 3 fleet statistics)", table.Requests, table.Metrics)
	}
	st := metrics.Merge(all, nil, &table, now)[7]
	if st.Dependency != "dep-007" || st.GaugeState != metrics.Mixed || st.Gauges.Max != 2 || st.Gauges.Samples != 300 ||
		st.Gauges.Breakdown != metrics.BreakdownNotFetched {
		t.Errorf("dep-007 without a breakdown = %s %+v, want mixed, worst open from the fleet", st.GaugeState, st.Gauges)
	}

	detail := refresh("dep-007")
	if detail.Requests != 2 || detail.Metrics != 60+300 {
		t.Errorf("detail refresh: %d requests, %d metrics; want 2 requests, 360 metrics", detail.Requests, detail.Metrics)
	}
	for _, r := range s.Requests() {
		if r.Metrics > metrics.MaxMetricsPerRequest || r.Truncated {
			t.Errorf("request with %d queries returned %d metrics (truncated %v)", len(r.Queries), r.Metrics, r.Truncated)
		}
	}
	st = metrics.Merge(all, nil, &detail, now)[7]
	if st.Gauges.Breakdown != metrics.BreakdownComplete || st.Gauges.Known != 300 || st.Gauges.ByState[2] != 1 || st.Gauges.ByState[0] != 299 {
		t.Errorf("dep-007 breakdown = %+v, want 300 instances, 1 open", st.Gauges)
	}

	// Ten seconds later the breakdown is reused: one request again.
	clk.Advance(10 * time.Second)
	calls := s.Calls()
	again := refresh("dep-007")
	if s.Calls()-calls != 1 || again.Metrics != 60 || len(again.Series["dep-007"].Instances) != 300 {
		t.Errorf("refresh within the minute: %d requests, %d metrics, %d instances; want 1, 60, 300 (breakdown reused)",
			s.Calls()-calls, again.Metrics, len(again.Series["dep-007"].Instances))
	}
	clk.Advance(time.Minute)
	calls = s.Calls()
	refresh("dep-007")
	if s.Calls()-calls != 2 {
		t.Errorf("a minute later: %d requests, want 2 (the breakdown read again)", s.Calls()-calls)
	}
}

// A dependency with more instance series than one request may return: the
// SEARCH gets a request of its own, CloudWatch truncates it (1 query + 499
// series) and says so, and
// the breakdown is partial while worst still comes from the fleet.
func TestCloudWatchTruncatedBreakdownIsPartial(t *testing.T) {
	s := cwfake.New(t)
	putNow(s, "openai", 600, "i-599")
	putNow(s, "postgres", 10, "")
	snap, err := newCW(t, s, metrics.CloudWatchOptions{}).Fetch(context.Background(),
		metrics.FetchRequest{Dependencies: []string{"openai", "postgres"}, Window: time.Hour, AllInstances: true})
	if err != nil {
		t.Fatal(err)
	}
	reqs := s.Requests()
	if len(reqs) != 3 || len(reqs[1].Queries) != 1 || !reqs[1].Truncated || reqs[1].Metrics != 499 || reqs[2].Truncated {
		t.Fatalf("requests: %d; want the fleet, openai's SEARCH alone (truncated at 500), postgres's", len(reqs))
	}
	o := snap.Series["openai"]
	if o.Breakdown != metrics.BreakdownPartial || len(o.Instances) != 499 || snap.Series["postgres"].Breakdown != metrics.BreakdownComplete {
		t.Errorf("openai breakdown %s with %d instances, postgres %s", o.Breakdown, len(o.Instances), snap.Series["postgres"].Breakdown)
	}
	if !strings.Contains(strings.Join(snap.Warnings, "\n"), "MaxMetricsExceeded: Maximum number of allowed metrics exceeded") {
		t.Errorf("warnings = %q: CloudWatch's message is passed on", snap.Warnings)
	}
	st := metrics.Merge(nil, nil, &snap, now)[0]
	if st.GaugeState != metrics.Mixed || st.Gauges.Max != 2 || st.Gauges.Breakdown != metrics.BreakdownPartial || !strings.Contains(strings.Join(st.Notes, " "), "partial") {
		t.Errorf("openai = %s %+v %q: want mixed with worst open although i-599 was cut, marked partial", st.GaugeState, st.Gauges, st.Notes)
	}
}

// A request with a SEARCH does not page: past MaxDatapoints CloudWatch
// returns PartialData and no NextToken. Asked newest first, what is lost
// is the oldest points, and the breakdown says it is partial.
func TestCloudWatchPartialDataKeepsTheNewestPoints(t *testing.T) {
	s := cwfake.New(t)
	s.PageSize = 100 // stands for the 100,800-datapoint limit
	fill(s, "openai", 3, func(inst, minute int) float64 { return float64(inst % 2) })
	snap, err := newCW(t, s, metrics.CloudWatchOptions{}).Fetch(context.Background(),
		metrics.FetchRequest{Dependencies: []string{"openai"}, Window: time.Hour, Instances: []string{"openai"}})
	if err != nil {
		t.Fatal(err)
	}
	o := snap.Series["openai"]
	if o.Breakdown != metrics.BreakdownPartial || len(o.Instances) != 3 {
		t.Fatalf("breakdown %s with %d instances, want partial with 3", o.Breakdown, len(o.Instances))
	}
	end := now.Truncate(time.Minute)
	for _, in := range o.Instances {
		if last, _ := in.Latest(); !last.Time.Equal(end) {
			t.Errorf("%s newest point %s, want %s: the newest points must survive the cut", in.Instance, last.Time, end)
		}
	}
	if !strings.Contains(strings.Join(snap.Warnings, "\n"), "PartialData") {
		t.Errorf("warnings = %q", snap.Warnings)
	}
	// The fleet request paged through NextToken and is complete.
	if len(snap.Series["openai"].Timeline) != 60 {
		t.Errorf("fleet timeline %d points, want 60", len(snap.Series["openai"].Timeline))
	}
}

// A service value with parentheses, quotes and a backslash is sent escaped
// in the SEARCH's exact-match term, and matches what is published.
func TestCloudWatchEscapesSearchTerms(t *testing.T) {
	const service = `gw (eu) "blue" \ 1`
	s := cwfake.New(t)
	s.Service = service
	putNow(s, "openai", 2, "i-001")
	cw := newCW(t, s, metrics.CloudWatchOptions{Service: service})
	want := `SEARCH('{"Kosha/Resilience",dependency,instance,service} MetricName="breaker_state" dependency="openai" service="gw \(eu\) \"blue\" \\ 1"', 'Maximum', 60)`
	if got := cw.SearchExpression("openai"); got != want {
		t.Errorf("expression = %s\nwant         %s", got, want)
	}
	snap, err := cw.Fetch(context.Background(), metrics.FetchRequest{Dependencies: []string{"openai"}, Window: time.Hour, AllInstances: true})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(snap.Series["openai"].Instances); n != 2 {
		t.Errorf("instances = %d, want 2: the escaped term must match the published value", n)
	}
}

// A breakdown request that fails leaves the fleet statistics standing: a
// warning and a note, not an error.
func TestCloudWatchBreakdownFailureIsAWarning(t *testing.T) {
	s := cwfake.New(t)
	putNow(s, "openai", 3, "i-001")
	s.Fail = func(n int) *cwfake.Failure {
		if n == 2 {
			return &cwfake.Failure{Status: 500, Type: "InternalServiceError", Message: "boom"}
		}
		return nil
	}
	snap, err := newCW(t, s, metrics.CloudWatchOptions{}).Fetch(context.Background(),
		metrics.FetchRequest{Dependencies: []string{"openai"}, Window: time.Hour, Instances: []string{"openai"}})
	if err != nil {
		t.Fatalf("a failed breakdown failed the fetch: %v", err)
	}
	st := metrics.Merge(nil, nil, &snap, now)[0]
	if st.GaugeState != metrics.Mixed || st.Gauges.Max != 2 || st.Gauges.Breakdown != metrics.BreakdownNotFetched ||
		len(st.Notes) != 1 || !strings.Contains(st.Notes[0], "per-instance breakdown not read") || !strings.Contains(st.Notes[0], "boom") {
		t.Errorf("openai = %s %+v %q", st.GaugeState, st.Gauges, st.Notes)
	}
	if len(snap.Warnings) != 1 {
		t.Errorf("warnings = %q", snap.Warnings)
	}
}

// Instances report once a minute at their own second. Thirty seconds into
// the minute, the newest (still filling) period holds only the instances
// that reported so far; the open one reports at second 59. Worst must come
// from the periods that hold every reporting instance, not the newest
// alone.
func TestCloudWatchWorstLooksBackPastTheFillingMinute(t *testing.T) {
	s := cwfake.New(t)
	minute := now.Truncate(time.Minute)
	for i := range 300 {
		inst := fmt.Sprintf("i-%03d", i)
		v := 0.0
		if i == 299 {
			v = 2
		}
		sec := time.Duration(i%60) * time.Second
		for _, m := range []time.Time{minute.Add(-2 * time.Minute), minute.Add(-time.Minute), minute} {
			if at := m.Add(sec); !at.After(now) {
				s.Put("openai", inst, at, v)
			}
		}
	}
	snap, err := newCW(t, s, metrics.CloudWatchOptions{}).Fetch(context.Background(),
		metrics.FetchRequest{Dependencies: []string{"openai"}, Window: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := snap.Series["openai"].Latest(); p.Max != 0 || p.Samples >= 300 {
		t.Fatalf("newest period %+v: the test needs it to lack the open instance", p)
	}
	st := metrics.Merge(nil, nil, &snap, now)[0]
	if st.GaugeState != metrics.Mixed || st.Gauges.Max != 2 || st.Gauges.Samples != 300 || !st.Gauges.LatestAt.Equal(minute) {
		t.Errorf("openai = %s %+v; want mixed, worst open, 300 reporting, newest %s", st.GaugeState, st.Gauges, minute)
	}
}
