package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/metrics/cwfake"
)

// now is mid-minute on purpose: windows align to whole minutes.
var now = time.Date(2026, 11, 29, 19, 0, 30, 0, time.UTC)

func deps(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("dep-%03d", i)
	}
	return out
}

// fill publishes one value per minute for the last hour for each instance.
func fill(s *cwfake.Server, dep string, instances int, value func(inst, minute int) float64) {
	for i := range instances {
		for m := 0; m < 60; m++ {
			t := now.Truncate(time.Minute).Add(-time.Duration(m) * time.Minute).Add(5 * time.Second)
			s.Put(dep, fmt.Sprintf("gw-%d", i+1), t, value(i, m))
		}
	}
}

func newCW(t *testing.T, s *cwfake.Server, opts metrics.CloudWatchOptions) *metrics.CloudWatch {
	t.Helper()
	if opts.Clock == nil {
		opts.Clock = clocktest.NewFake(now)
	}
	cw, err := metrics.NewCloudWatch(s.Client(1), opts)
	if err != nil {
		t.Fatal(err)
	}
	return cw
}

func TestCloudWatchFleetInOneRequestBreakdownsBudgeted(t *testing.T) {
	s := cwfake.New(t)
	all := deps(100)
	for _, d := range all {
		fill(s, d, 8, func(inst, minute int) float64 {
			if d == "dep-007" && inst < 2 && minute < 5 {
				return 2 // two instances opened five minutes ago
			}
			return 0
		})
	}
	snap, err := newCW(t, s, metrics.CloudWatchOptions{}).Fetch(context.Background(), metrics.FetchRequest{Dependencies: all, Window: time.Hour, AllInstances: true})
	if err != nil {
		t.Fatal(err)
	}
	// One request for every fleet statistic; the breakdowns (8 instance
	// series + 1 query each) packed into requests of at most 500 metrics:
	// 55 and 45 dependencies.
	if s.Calls() != 3 || snap.Requests != 3 {
		t.Fatalf("GetMetricData calls = %d (snapshot says %d), want 1 fleet request and 2 breakdown requests", s.Calls(), snap.Requests)
	}
	reqs := s.Requests()
	req := reqs[0]
	if len(req.Queries) != 100*metrics.FleetQueriesPerDependency {
		t.Errorf("queries = %d, want %d", len(req.Queries), 100*metrics.FleetQueriesPerDependency)
	}
	total := 0
	for _, r := range reqs {
		if r.Metrics > metrics.MaxMetricsPerRequest || r.Truncated {
			t.Errorf("a request returned %d metrics (truncated %v)", r.Metrics, r.Truncated)
		}
		total += r.Metrics
	}
	if len(reqs[1].Queries) != 55 || len(reqs[2].Queries) != 45 || total != 300+800 || snap.Metrics != total {
		t.Errorf("breakdown requests hold %d and %d dependencies, %d metrics in all (snapshot %d), want 55, 45 and 1100",
			len(reqs[1].Queries), len(reqs[2].Queries), total, snap.Metrics)
	}
	if got := req.Header.Get("Smithy-Protocol"); got != "rpc-v2-cbor" {
		t.Errorf("Smithy-Protocol = %q", got)
	}
	if req.ScanBy != "TimestampDescending" {
		t.Errorf("ScanBy = %q, want the newest points first", req.ScanBy)
	}
	if want := time.Date(2026, 11, 29, 18, 1, 0, 0, time.UTC); !req.Start.Equal(want) {
		t.Errorf("StartTime = %s, want %s (60 whole minutes ending after the current one)", req.Start, want)
	}
	if want := time.Date(2026, 11, 29, 19, 1, 0, 0, time.UTC); !req.End.Equal(want) {
		t.Errorf("EndTime = %s, want %s", req.End, want)
	}
	s7 := snap.Series["dep-007"]
	if len(s7.Timeline) != 60 {
		t.Errorf("dep-007 timeline has %d points, want 60", len(s7.Timeline))
	}
	if len(s7.Instances) != 8 {
		t.Fatalf("dep-007 has %d instances, want 8", len(s7.Instances))
	}
	last, _ := s7.Latest()
	if last.Max != 2 || last.Min != 0 || last.Samples != 8 {
		t.Errorf("dep-007 latest = %+v, want max 2 min 0 samples 8", last)
	}
	if p, _ := s7.Instances[0].Latest(); s7.Instances[0].Instance != "gw-1" || p.Max != 2 {
		t.Errorf("gw-1 latest = %+v (%s), want open", p, s7.Instances[0].Instance)
	}
	if p, _ := s7.Instances[7].Latest(); p.Max != 0 {
		t.Errorf("gw-8 latest = %+v, want closed", p)
	}
	first := s7.Timeline[0]
	if first.Max != 0 || !first.Time.Equal(req.Start) {
		t.Errorf("dep-007 first point = %+v, want closed at the window start", first)
	}
}

func TestCloudWatchQueryShape(t *testing.T) {
	for _, tc := range []struct {
		name, service, wantSearch string
		wantDims                  map[string]string
	}{
		{"no service", "",
			`SEARCH('{"Kosha/Resilience",dependency,instance} MetricName="breaker_state" dependency="openai"', 'Maximum', 60)`,
			map[string]string{"dependency": "openai"}},
		{"service", "gateway",
			`SEARCH('{"Kosha/Resilience",dependency,instance,service} MetricName="breaker_state" dependency="openai" service="gateway"', 'Maximum', 60)`,
			map[string]string{"dependency": "openai", "service": "gateway"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := cwfake.New(t)
			s.Service = tc.service
			fill(s, "openai", 2, func(int, int) float64 { return 1 })
			snap, err := newCW(t, s, metrics.CloudWatchOptions{Service: tc.service}).Fetch(context.Background(), metrics.FetchRequest{Dependencies: []string{"openai"}, Window: time.Hour, AllInstances: true})
			if err != nil {
				t.Fatal(err)
			}
			qs := append(s.Requests()[0].Queries, s.Requests()[1].Queries...)
			var stats []string
			for _, q := range qs[:3] {
				stats = append(stats, q.Stat)
				if q.Namespace != "Kosha/Resilience" || q.Metric != "breaker_state" || q.Period != 60 || !reflect.DeepEqual(q.Dimensions, tc.wantDims) {
					t.Errorf("query %s = %+v", q.ID, q)
				}
			}
			if want := []string{"Maximum", "Minimum", "SampleCount"}; !reflect.DeepEqual(stats, want) {
				t.Errorf("stats = %v, want %v", stats, want)
			}
			if qs[3].Expression != tc.wantSearch {
				t.Errorf("search = %s\nwant     %s", qs[3].Expression, tc.wantSearch)
			}
			if qs[3].Label != "${PROP('Dim.instance')}" {
				t.Errorf("search label = %q", qs[3].Label)
			}
			if got := len(snap.Series["openai"].Instances); got != 2 {
				t.Errorf("instances = %d, want 2 (the SEARCH must match what is published)", got)
			}
		})
	}
}

func TestCloudWatchFollowsNextToken(t *testing.T) {
	all := deps(30)
	fetch := func(pageSize int) (metrics.Snapshot, int) {
		s := cwfake.New(t)
		s.PageSize = pageSize
		for i, d := range all {
			fill(s, d, 3, func(inst, minute int) float64 { return float64((i + inst + minute) % 4) })
		}
		snap, err := newCW(t, s, metrics.CloudWatchOptions{}).Fetch(context.Background(), metrics.FetchRequest{Dependencies: all, Window: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range s.Requests()[1:] {
			if r.NextToken == "" {
				t.Error("a follow-up request carried no NextToken")
			}
		}
		return snap, s.Calls()
	}
	whole, calls := fetch(0)
	if calls != 1 {
		t.Fatalf("unpaged calls = %d", calls)
	}
	paged, calls := fetch(1000)
	// 30 dependencies x 3 fleet series x 60 points = 5400.
	if calls != 6 || paged.Requests != 6 {
		t.Fatalf("paged calls = %d (snapshot %d), want 6 pages of at most 1000 datapoints", calls, paged.Requests)
	}
	if len(paged.Warnings) != 0 {
		t.Errorf("warnings = %q: every page was followed", paged.Warnings)
	}
	if !reflect.DeepEqual(whole.Series, paged.Series) {
		t.Error("paged result differs from the unpaged one: pages were not merged per series")
	}
}

func TestCloudWatchSplitsRequestsBeyondTheQueryLimit(t *testing.T) {
	s := cwfake.New(t)
	all := deps(metrics.DependenciesPerRequest + 5)
	fill(s, all[len(all)-1], 1, func(int, int) float64 { return 2 })
	snap, err := newCW(t, s, metrics.CloudWatchOptions{}).Fetch(context.Background(), metrics.FetchRequest{Dependencies: all, Window: time.Hour, AllInstances: true})
	if err != nil {
		t.Fatal(err)
	}
	reqs := s.Requests()
	if len(reqs) != 3 || len(reqs[0].Queries) != metrics.DependenciesPerRequest*metrics.FleetQueriesPerDependency ||
		len(reqs[1].Queries) != 5*metrics.FleetQueriesPerDependency {
		t.Fatalf("requests = %d with %d and %d queries", len(reqs), len(reqs[0].Queries), len(reqs[len(reqs)-1].Queries))
	}
	if p, ok := snap.Series[all[len(all)-1]].Latest(); !ok || p.Max != 2 {
		t.Errorf("the last dependency (second request) = %+v %v: results of the second request were misattributed", p, ok)
	}
	if len(snap.Series) != len(all) {
		t.Errorf("series = %d, want one per dependency", len(snap.Series))
	}
}

func TestCloudWatchDerivesFleetFromInstancesWhenTheFleetSetIsMissing(t *testing.T) {
	s := cwfake.New(t)
	s.Fleet = false
	fill(s, "openai", 3, func(inst, _ int) float64 { return float64(inst) })
	snap, err := newCW(t, s, metrics.CloudWatchOptions{}).Fetch(context.Background(), metrics.FetchRequest{Dependencies: []string{"openai"}, Window: time.Hour, AllInstances: true})
	if err != nil {
		t.Fatal(err)
	}
	p, ok := snap.Series["openai"].Latest()
	if !ok || p.Max != 2 || p.Min != 0 || p.Samples != 3 {
		t.Errorf("derived latest = %+v %v, want max 2 min 0 from 3 instances", p, ok)
	}
	if len(snap.Warnings) != 1 || !strings.Contains(snap.Warnings[0], "derived from instances") {
		t.Errorf("warnings = %q", snap.Warnings)
	}
}

func TestCloudWatchWithoutInstanceDimension(t *testing.T) {
	s := cwfake.New(t)
	s.Instances = false
	fill(s, "openai", 4, func(inst, _ int) float64 { return 2 })
	snap, err := newCW(t, s, metrics.CloudWatchOptions{}).Fetch(context.Background(), metrics.FetchRequest{Dependencies: []string{"openai"}, Window: time.Hour, AllInstances: true})
	if err != nil {
		t.Fatal(err)
	}
	st := metrics.Merge([]string{"openai"}, nil, &snap, now)[0]
	if st.State != metrics.Open || st.Gauges.Samples != 4 || st.Gauges.Known != 0 || len(st.Instances) != 0 {
		t.Errorf("status = %+v, want open from 4 samples and no instances", st)
	}
}

func TestCloudWatchErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		failure cwfake.Failure
		want    error
	}{
		{"denied", cwfake.Failure{Status: 403, Type: "AccessDenied", Message: "not allowed to cloudwatch:GetMetricData"}, metrics.ErrDenied},
		{"expired token", cwfake.Failure{Status: 403, Type: "ExpiredToken", Message: "expired"}, metrics.ErrDenied},
		{"server", cwfake.Failure{Status: 500, Type: "InternalServiceError", Message: "boom"}, metrics.ErrUnavailable},
		{"throttled", cwfake.Failure{Status: 400, Type: "Throttling", Message: "Rate exceeded"}, metrics.ErrUnavailable},
		{"invalid", cwfake.Failure{Status: 400, Type: "com.amazonaws.cloudwatch#InvalidParameterValueException", Message: "bad"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := cwfake.New(t)
			s.Fail = func(int) *cwfake.Failure { return &tc.failure }
			_, err := newCW(t, s, metrics.CloudWatchOptions{}).Fetch(context.Background(), metrics.FetchRequest{Dependencies: []string{"openai"}, Window: time.Hour, AllInstances: true})
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.failure.Message) {
				t.Errorf("error %q does not carry the service's message", err)
			}
			for _, sentinel := range []error{metrics.ErrDenied, metrics.ErrUnavailable} {
				if got := errors.Is(err, sentinel); got != (sentinel == tc.want) {
					t.Errorf("errors.Is(%v, %v) = %v", err, sentinel, got)
				}
			}
		})
	}
}

func TestCloudWatchRetriesThrottling(t *testing.T) {
	s := cwfake.New(t)
	s.Fail = func(n int) *cwfake.Failure {
		if n == 1 {
			return &cwfake.Failure{Status: 400, Type: "Throttling", Message: "Rate exceeded"}
		}
		return nil
	}
	fill(s, "openai", 1, func(int, int) float64 { return 0 })
	cw, err := metrics.NewCloudWatch(s.Client(3), metrics.CloudWatchOptions{Clock: clocktest.NewFake(now)})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := cw.Fetch(context.Background(), metrics.FetchRequest{Dependencies: []string{"openai"}, Window: time.Hour})
	if err != nil {
		t.Fatalf("throttled once then answered: %v", err)
	}
	if _, ok := snap.Series["openai"].Latest(); !ok || s.Calls() != 2 {
		t.Errorf("calls = %d, data = %v", s.Calls(), ok)
	}
}

func TestNewCloudWatchRejectsValuesThatWouldBreakTheExpression(t *testing.T) {
	tooLong := time.Duration(math.MaxInt32/60+1) * time.Minute // whole minutes, but its seconds overflow an int32
	for _, opts := range []metrics.CloudWatchOptions{{Namespace: `Kosha"x`}, {Namespace: `Kosha\x`}, {Service: "gw' OR"}, {Service: "a\nb"}, {Period: 90 * time.Second}, {Period: tooLong}} {
		if _, err := metrics.NewCloudWatch(nil, opts); !errors.Is(err, metrics.ErrInvalidSource) {
			t.Errorf("NewCloudWatch(%+v) = %v, want ErrInvalidSource", opts, err)
		}
	}
}

func TestCloudWatchIgnoresInvalidAndDuplicateDependencies(t *testing.T) {
	s := cwfake.New(t)
	_, err := newCW(t, s, metrics.CloudWatchOptions{}).Fetch(context.Background(), metrics.FetchRequest{Dependencies: []string{"openai", "openai", "Bad Name", `x"y`}, Window: time.Hour, AllInstances: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(s.Requests()[0].Queries); got != metrics.FleetQueriesPerDependency {
		t.Errorf("queries = %d, want one dependency's worth", got)
	}
}

func TestWindowAlignsToWholePeriods(t *testing.T) {
	start, end := metrics.Window(now, 60*time.Minute, time.Minute)
	if !end.Equal(time.Date(2026, 11, 29, 19, 1, 0, 0, time.UTC)) || end.Sub(start) != time.Hour {
		t.Errorf("window = %s..%s", start, end)
	}
	start, end = metrics.Window(now, 90*time.Second, time.Minute)
	if end.Sub(start) != 2*time.Minute {
		t.Errorf("a 90 s window rounds up to 2 periods, got %s", end.Sub(start))
	}
}

func TestRefreshCost(t *testing.T) {
	// The dashboard at its default 10 s on 20 dependencies x 300 instances,
	// the detail view open: 360 refreshes x 60 fleet metrics = 21,600, plus
	// one breakdown a minute x 300 = 18,000 metrics an hour: $0.396.
	c := metrics.RefreshCost{Dependencies: 20, Breakdowns: 1, Instances: 300, Interval: 10 * time.Second}
	if c.FleetMetrics() != 60 || c.BreakdownMetrics() != 300 || c.MetricsPerHour() != 39600 {
		t.Errorf("fleet %d, breakdown %d, per hour %f", c.FleetMetrics(), c.BreakdownMetrics(), c.MetricsPerHour())
	}
	if got := c.PerHour(); math.Abs(got-0.396) > 1e-9 || got > 0.50 {
		t.Errorf("cost per hour = %f, want 0.396 (at most the documented $0.50)", got)
	}
	// Without the detail view: $0.216.
	c.Breakdowns = 0
	if got := c.PerHour(); math.Abs(got-0.216) > 1e-9 {
		t.Errorf("table only = %f, want 0.216", got)
	}
	// 100 x 1,000 at 60 s with one breakdown: 60 x (300 + 1000) = 78,000: $0.78.
	c = metrics.RefreshCost{Dependencies: 100, Breakdowns: 1, Instances: 1000, Interval: time.Minute}
	if got := c.PerHour(); math.Abs(got-0.78) > 1e-9 {
		t.Errorf("100 x 1000 at 60 s = %f, want 0.78", got)
	}
	if got := (metrics.RefreshCost{Dependencies: 100, Interval: 0}).PerHour(); got != 0 {
		t.Errorf("cost at interval 0 = %f", got)
	}
}

func TestCostWarning(t *testing.T) {
	w := metrics.CostWarning(20, 1, 10*time.Second)
	for _, want := range []string{"refreshing every 10s requests 60 metrics (20 dependencies x 3 fleet statistics)",
		"the per-instance breakdown of the dependency in the detail view, one metric per instance at most every 1m0s (300 metrics, assuming 300 instances)",
		"about $0.40 an hour or $9.50 a day at $0.01 per 1,000", "60s or more costs 1.8 times less"} {
		if !strings.Contains(w, want) {
			t.Errorf("%q lacks %q", w, want)
		}
	}
	if w := metrics.CostWarning(1, 0, 10*time.Second); !strings.Contains(w, "requests 3 metrics (1 dependencies x 3 fleet statistics) and no per-instance breakdown") {
		t.Errorf("without breakdowns: %q", w)
	}
}
