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

	"github.com/kosha-platform/koshactl/internal/clock"
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
		opts.Clock = clock.NewFake(now)
	}
	cw, err := metrics.NewCloudWatch(s.Client(1), opts)
	if err != nil {
		t.Fatal(err)
	}
	return cw
}

func TestCloudWatchOneRequestForAHundredDependencies(t *testing.T) {
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
	snap, err := newCW(t, s, metrics.CloudWatchOptions{}).Fetch(context.Background(), all, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if s.Calls() != 1 || snap.Requests != 1 {
		t.Fatalf("GetMetricData calls = %d (snapshot says %d), want exactly 1 for 100 dependencies", s.Calls(), snap.Requests)
	}
	req := s.Requests()[0]
	if len(req.Queries) != 100*metrics.QueriesPerDependency {
		t.Errorf("queries = %d, want %d", len(req.Queries), 100*metrics.QueriesPerDependency)
	}
	if got := req.Header.Get("Smithy-Protocol"); got != "rpc-v2-cbor" {
		t.Errorf("Smithy-Protocol = %q", got)
	}
	if req.ScanBy != "TimestampAscending" {
		t.Errorf("ScanBy = %q", req.ScanBy)
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
			snap, err := newCW(t, s, metrics.CloudWatchOptions{Service: tc.service}).Fetch(context.Background(), []string{"openai"}, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			qs := s.Requests()[0].Queries
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
		snap, err := newCW(t, s, metrics.CloudWatchOptions{}).Fetch(context.Background(), all, time.Hour)
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
	// 30 dependencies x (3 fleet series + 3 instances) x 60 points = 10800.
	if calls != 11 || paged.Requests != 11 {
		t.Fatalf("paged calls = %d (snapshot %d), want 11 pages of at most 1000 datapoints", calls, paged.Requests)
	}
	if !reflect.DeepEqual(whole.Series, paged.Series) {
		t.Error("paged result differs from the unpaged one: pages were not merged per series")
	}
}

func TestCloudWatchSplitsRequestsBeyondTheQueryLimit(t *testing.T) {
	s := cwfake.New(t)
	all := deps(metrics.DependenciesPerRequest + 5)
	fill(s, all[len(all)-1], 1, func(int, int) float64 { return 2 })
	snap, err := newCW(t, s, metrics.CloudWatchOptions{}).Fetch(context.Background(), all, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	reqs := s.Requests()
	if len(reqs) != 2 || len(reqs[0].Queries) != metrics.MaxQueriesPerRequest || len(reqs[1].Queries) != 5*metrics.QueriesPerDependency {
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
	snap, err := newCW(t, s, metrics.CloudWatchOptions{}).Fetch(context.Background(), []string{"openai"}, time.Hour)
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
	snap, err := newCW(t, s, metrics.CloudWatchOptions{}).Fetch(context.Background(), []string{"openai"}, time.Hour)
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
			_, err := newCW(t, s, metrics.CloudWatchOptions{}).Fetch(context.Background(), []string{"openai"}, time.Hour)
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
	cw, err := metrics.NewCloudWatch(s.Client(3), metrics.CloudWatchOptions{Clock: clock.NewFake(now)})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := cw.Fetch(context.Background(), []string{"openai"}, time.Hour)
	if err != nil {
		t.Fatalf("throttled once then answered: %v", err)
	}
	if _, ok := snap.Series["openai"].Latest(); !ok || s.Calls() != 2 {
		t.Errorf("calls = %d, data = %v", s.Calls(), ok)
	}
}

func TestNewCloudWatchRejectsValuesThatWouldBreakTheExpression(t *testing.T) {
	tooLong := time.Duration(math.MaxInt32/60+1) * time.Minute // whole minutes, but its seconds overflow an int32
	for _, opts := range []metrics.CloudWatchOptions{{Namespace: `Kosha"x`}, {Service: "gw' OR"}, {Service: `a\b`}, {Period: 90 * time.Second}, {Period: tooLong}} {
		if _, err := metrics.NewCloudWatch(nil, opts); !errors.Is(err, metrics.ErrInvalidSource) {
			t.Errorf("NewCloudWatch(%+v) = %v, want ErrInvalidSource", opts, err)
		}
	}
}

func TestCloudWatchIgnoresInvalidAndDuplicateDependencies(t *testing.T) {
	s := cwfake.New(t)
	_, err := newCW(t, s, metrics.CloudWatchOptions{}).Fetch(context.Background(), []string{"openai", "openai", "Bad Name", `x"y`}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(s.Requests()[0].Queries); got != metrics.QueriesPerDependency {
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

func TestCostEstimate(t *testing.T) {
	// 100 dependencies x (3 + 8 instances) = 1100 metrics per refresh;
	// every 10 s that is 360 refreshes an hour: 396,000 metrics, $3.96.
	if got := metrics.MetricsPerRefresh(100, 8); got != 1100 {
		t.Errorf("metrics per refresh = %d", got)
	}
	if got := metrics.CostPerHour(100, 8, 10*time.Second); got < 3.959 || got > 3.961 {
		t.Errorf("cost per hour = %f, want 3.96", got)
	}
	if got := metrics.CostPerHour(100, 8, 0); got != 0 {
		t.Errorf("cost at interval 0 = %f", got)
	}
}
