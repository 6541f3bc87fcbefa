package impact_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/gauge"
	"github.com/kosha-platform/koshactl/internal/impact"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/metrics/cwfake"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// fleetCounters is a sandbox's /metrics whose call counters grow by
// perScrape each time it is scraped: screen_entity and screening-sim by
// perScrape, search_knowledge_base and openai by twice that, every data
// tool and core-api by three times that. It counts its scrapes.
type fleetCounters struct {
	perScrape float64
	scrapes   atomic.Int64
}

func (f *fleetCounters) serve(t testing.TB) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n := float64(f.scrapes.Add(1)) * f.perScrape
		fmt.Fprintf(w, "# TYPE kosha_tool_calls_total counter\n")
		for tool, k := range map[string]float64{impact.ToolScreenEntity: 1, impact.ToolSearchKnowledgeBase: 2, impact.ToolRaiseDispute: 3,
			impact.ToolFlagTransaction: 3, impact.ToolGetServiceHealth: 3} {
			fmt.Fprintf(w, "kosha_tool_calls_total{outcome=\"ok\",tool=%q} %v\n", tool, k*n)
		}
		fmt.Fprintf(w, "# TYPE kosha_downstream_calls_total counter\n")
		for dep, k := range map[string]float64{impact.ScreeningSim: 1, impact.OpenAI: 2, impact.CoreAPI: 3} {
			fmt.Fprintf(w, "kosha_downstream_calls_total{dependency=%q,outcome=\"success\"} %v\n", dep, k*n)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/metrics"
}

// assessAll assesses each of forces one after another, as apply's windows
// are, advancing clk by step whenever the reads wait on it.
func assessAll(t *testing.T, a lever.Assessor, clk *clocktest.Fake, step time.Duration, forces ...lever.Forces) []*impact.Report {
	t.Helper()
	var out []*impact.Report
	drive(t, clk, step, func() {
		for _, f := range forces {
			out = append(out, a.Assess(t.Context(), f).(*impact.Report))
		}
	})
	return out
}

// drive runs fn, advancing clk by step whenever something waits on it,
// until fn returns.
func drive(t testing.TB, clk *clocktest.Fake, step time.Duration, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	ceiling := time.NewTimer(wait.Ceiling)
	defer ceiling.Stop()
	for {
		changed := clk.WaitersChanged()
		if clk.Waiters() > 0 {
			clk.Advance(step)
			continue
		}
		select {
		case <-done:
			return
		case <-changed:
		case <-ceiling.C:
			t.Fatal("the assessments neither ended nor waited")
		}
	}
}

var threeWindows = []lever.Forces{
	{Dependencies: []string{impact.ScreeningSim}, For: 30 * time.Minute},
	{Dependencies: []string{impact.OpenAI}, For: 30 * time.Minute},
	{Dependencies: []string{impact.CoreAPI}, For: time.Hour},
}

// Three windows forced in one round (apply, apply --dry-run) are answered
// by one rate read of the context's Prometheus source: two scrapes 5 s
// apart, not a read (and a wait) per window. Each report carries its own
// tools' and dependencies' rates from that read.
func TestAssessorReadsPrometheusOnceForARound(t *testing.T) {
	t.Parallel()
	fc, clk, src := prometheusFleet(t)
	opened := 0
	a := &impact.Assessor{Clock: clk, Open: func(context.Context) (impact.RateSource, error) { opened++; return src, nil }}

	reps := assessAll(t, a, clk, metrics.DefaultRateInterval, threeWindows...)
	if n := fc.scrapes.Load(); n != 2 {
		t.Errorf("%d scrapes for three windows, want 2: one rate read for the round", n)
	}
	if opened != 1 {
		t.Errorf("the source was opened %d times, want once", opened)
	}
	// 10 calls in 5 s: 120 a minute, per unit of the counter's factor.
	want := []struct {
		tool              string
		toolRate, depRate float64
	}{{impact.ToolScreenEntity, 120, 120}, {impact.ToolSearchKnowledgeBase, 240, 240}, {impact.ToolSearchKnowledgeBase, 240, 360}}
	for i, r := range reps {
		if r.Rates == nil || r.Rates.Error != "" || r.Rates.WindowSeconds != 5 || !r.Rates.ReadAt.Equal(reps[0].Rates.ReadAt) {
			t.Fatalf("window %d: rates %+v, want the one read's", i, r.Rates)
		}
		tl := r.Tools[0]
		if tl.Tool != want[i].tool || tl.CallsPerMinute == nil || *tl.CallsPerMinute != want[i].toolRate ||
			r.Dependencies[0].CallsPerMinute == nil || *r.Dependencies[0].CallsPerMinute != want[i].depRate {
			t.Errorf("window %d (%s): tool %+v, dependency %+v", i, r.Dependencies[0].Dependency, tl, r.Dependencies[0])
		}
	}
	if len(reps[0].Tools) != 1 || len(reps[0].Dependencies) != 1 {
		t.Errorf("screening-sim's report names %+v and %+v: only its own", reps[0].Tools, reps[0].Dependencies)
	}
	if e := reps[0].Tools[0].Estimate; e == nil || e.Calls != 3600 {
		t.Errorf("screening-sim's estimate %+v, want 3600 screenings over 30m", e)
	}

	// Past ShareFor a change gets a new read, measured from the scrapes
	// the reader kept: one scrape, no wait.
	clk.Advance(impact.DefaultShareFor + time.Second)
	r := a.Assess(t.Context(), threeWindows[0]).(*impact.Report)
	if n := fc.scrapes.Load(); n != 3 || r.Rates.ReadAt.Equal(reps[0].Rates.ReadAt) || r.Rates.Error != "" {
		t.Errorf("a change past ShareFor: %d scrapes (want 3), rates %+v", n, r.Rates)
	}
	// A dependency no read asked for gets a read of its own.
	r = a.Assess(t.Context(), lever.Forces{Dependencies: []string{"redis"}}).(*impact.Report)
	if n := fc.scrapes.Load(); n != 4 || r.Rates == nil || r.Rates.Error != "" {
		t.Errorf("a dependency outside the matrix: %d scrapes (want 4), rates %+v", n, r.Rates)
	}
}

// Changes assessed at once (an agent's proposals, a drill's parallel
// reads) wait for one read: two scrapes, not two each.
func TestAssessorSharesAReadUnderWay(t *testing.T) {
	t.Parallel()
	fc, clk, src := prometheusFleet(t)
	a := &impact.Assessor{Clock: clk, Open: func(context.Context) (impact.RateSource, error) { return src, nil }}
	reps := make([]*impact.Report, len(threeWindows))
	drive(t, clk, metrics.DefaultRateInterval, func() {
		var wg sync.WaitGroup
		for i, f := range threeWindows {
			wg.Go(func() { reps[i] = a.Assess(t.Context(), f).(*impact.Report) })
		}
		wg.Wait()
	})
	if n := fc.scrapes.Load(); n != 2 {
		t.Errorf("%d scrapes for three changes at once, want 2", n)
	}
	for i, r := range reps {
		if r.Rates == nil || r.Rates.Error != "" || r.Tools[0].CallsPerMinute == nil {
			t.Errorf("change %d: rates %+v", i, r.Rates)
		}
	}
}

// On CloudWatch a round's windows cost one GetMetricData request, and
// each report warns only of its own names without a datapoint.
func TestAssessorReadsCloudWatchOnceForARound(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 19, 0, 30, 0, time.UTC)
	cw := cwfake.New(t)
	for m := -10; m <= 0; m++ {
		at := now.Truncate(time.Minute).Add(time.Duration(m) * time.Minute)
		cw.PutCount(gauge.ToolCallsMetricName, map[string]string{gauge.DimTool: impact.ToolScreenEntity}, at, 30)
		cw.PutCount(gauge.DownstreamCallsMetricName, map[string]string{gauge.DimDependency: impact.ScreeningSim}, at, 45)
		cw.PutCount(gauge.ToolCallsMetricName, map[string]string{gauge.DimTool: impact.ToolSearchKnowledgeBase}, at, 12)
	}
	clk := clocktest.NewFake(now)
	src := metrics.NewCloudWatchRates(cw.Client(1), metrics.CloudWatchRateOptions{Region: "eu-west-1", Clock: clk})
	a := &impact.Assessor{Clock: clk, Open: func(context.Context) (impact.RateSource, error) { return src, nil }}

	reps := assessAll(t, a, clk, time.Second, threeWindows...)
	if n := cw.Calls(); n != 1 {
		t.Fatalf("%d GetMetricData requests for three windows, want 1", n)
	}
	if q := cw.Requests()[0].Queries; len(q) != len(impact.ToolNames())+len(impact.Matrix()) {
		t.Errorf("the read asked %d queries, want every tool and dependency of the matrix (%d)", len(q), len(impact.ToolNames())+len(impact.Matrix()))
	}
	screening, openai := reps[0], reps[1]
	if v := screening.Tools[0].CallsPerMinute; v == nil || *v != 30 || len(screening.Rates.Warnings) != 0 {
		t.Errorf("screening-sim: tool %+v, warnings %q (want 30/min and none: its names have data)", screening.Tools[0], screening.Rates.Warnings)
	}
	if v := openai.Tools[0].CallsPerMinute; v == nil || *v != 12 || len(openai.Rates.Warnings) != 1 ||
		openai.Rates.Warnings[0] != "cloudwatch: no datapoint in the window for downstream_calls openai: no calls, or the fleet does not publish the metric" {
		t.Errorf("openai: tool %+v, warnings %q (want its own name without data only)", openai.Tools[0], openai.Rates.Warnings)
	}
	if w := reps[2].Rates.Warnings; len(w) != 1 || w[0] != "cloudwatch: no datapoint in the window for tool_calls raise_dispute, "+
		"tool_calls flag_transaction_for_review, tool_calls get_service_health, 1 more: no calls, or the fleet does not publish the metric" {
		t.Errorf("core-api: warnings %q, want its own names without data", w)
	}
}

// The context's known dependencies are read with the matrix's: windows
// of dependencies the matrix does not name (a levers file names only known
// ones) share the round's read too.
func TestAssessorReadsTheContextsDependenciesWithTheMatrixs(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 19, 0, 30, 0, time.UTC)
	cw := cwfake.New(t)
	clk := clocktest.NewFake(now)
	src := metrics.NewCloudWatchRates(cw.Client(1), metrics.CloudWatchRateOptions{Region: "eu-west-1", Clock: clk})
	a := &impact.Assessor{Clock: clk, Dependencies: []string{"redis", "kafka"}, Open: func(context.Context) (impact.RateSource, error) { return src, nil }}
	for _, dep := range []string{impact.ScreeningSim, "redis", "kafka"} {
		if r := a.Assess(t.Context(), lever.Forces{Dependencies: []string{dep}}).(*impact.Report); r.Rates == nil || r.Rates.Error != "" {
			t.Fatalf("%s: rates %+v", dep, r.Rates)
		}
	}
	if n := cw.Calls(); n != 1 {
		t.Errorf("%d GetMetricData requests, want 1", n)
	}
	if q := cw.Requests()[0].Queries; len(q) != len(impact.ToolNames())+len(impact.Matrix())+2 {
		t.Errorf("the read asked %d queries, want the matrix's and the context's two", len(q))
	}
}

// A source that fails fails the round once: the other windows share the
// failure instead of each waiting for its own.
func TestAssessorSharesAFailedRead(t *testing.T) {
	t.Parallel()
	src := &fakeRates{err: fmt.Errorf("scrape: %w", metrics.ErrUnavailable)}
	a := &impact.Assessor{Clock: clocktest.NewFake(time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)),
		Open: func(context.Context) (impact.RateSource, error) { return src, nil }}
	for _, f := range threeWindows {
		r := a.Assess(t.Context(), f).(*impact.Report)
		if r.Rates == nil || !strings.Contains(r.Rates.Error, "scrape") || r.Tools[0].CallsPerMinute != nil {
			t.Errorf("%s: rates %+v, want the matrix's impact and why", f.Dependencies[0], r.Rates)
		}
	}
	if src.calls != 1 {
		t.Errorf("the failing source was read %d times, want once", src.calls)
	}
	opens := 0
	b := &impact.Assessor{Open: func(context.Context) (impact.RateSource, error) {
		opens++
		return nil, errors.New("no AWS configuration")
	}}
	for _, f := range threeWindows {
		if r := b.Assess(t.Context(), f).(*impact.Report); r.Rates == nil || !strings.Contains(r.Rates.Error, "no AWS configuration") {
			t.Errorf("rates %+v", r.Rates)
		}
	}
	if opens != 1 {
		t.Errorf("a source that cannot be opened was opened %d times, want once", opens)
	}
}

// A change with little time left waits for a shared read no longer than
// Of would, and the read goes on for the changes after it.
func TestAssessorWaitsAtMostHalfTheCallersTime(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		a := &impact.Assessor{Open: func(context.Context) (impact.RateSource, error) { return blockingRates{}, nil }}
		ctx, cancel := context.WithTimeout(t.Context(), 4*time.Second)
		defer cancel()
		start := time.Now()
		r := a.Assess(ctx, threeWindows[0]).(*impact.Report)
		if took := time.Since(start); took != 2*time.Second {
			t.Errorf("the change waited %s of its 4s, want 2s", took)
		}
		if r.Rates == nil || !strings.Contains(r.Rates.Error, "did not answer within 2s") {
			t.Errorf("rates %+v", r.Rates)
		}
		// The read itself ends at DefaultTimeout, and says so to a change
		// that waits for it.
		r = a.Assess(t.Context(), threeWindows[1]).(*impact.Report)
		if took := time.Since(start); took != impact.DefaultTimeout {
			t.Errorf("the read ended after %s, want %s", took, impact.DefaultTimeout)
		}
		if r.Rates == nil || !strings.Contains(r.Rates.Error, "did not answer within 15s") {
			t.Errorf("rates %+v", r.Rates)
		}
	})
}

// A read warmed before any change (the dashboard opening on a Prometheus
// source) answers the changes that come while it is under way or within
// ShareFor after: two forces, two scrapes, as the CLI's round. A change
// past ShareFor does not take it: it reads again, so a record's rates are
// never older than the CLI's would be.
func TestAssessorWarmedReadAnswersTheFirstChanges(t *testing.T) {
	t.Parallel()
	fc, clk, src := prometheusFleet(t)
	a := &impact.Assessor{Clock: clk, Open: func(context.Context) (impact.RateSource, error) { return src, nil }}
	a.Warm(t.Context())
	wait.Until(t, "the warm read's first scrape", func() bool { return fc.scrapes.Load() == 1 })
	reps := assessAll(t, a, clk, metrics.DefaultRateInterval, threeWindows[:2]...)
	if n := fc.scrapes.Load(); n != 2 {
		t.Errorf("%d scrapes for a warm read and two changes, want 2", n)
	}
	for i, r := range reps {
		if r.Rates == nil || r.Rates.Error != "" || r.Tools[0].CallsPerMinute == nil {
			t.Errorf("change %d: rates %+v", i, r.Rates)
		}
	}
	clk.Advance(impact.DefaultShareFor + time.Second)
	if r := assessAll(t, a, clk, metrics.DefaultRateInterval, threeWindows[0])[0]; r.Rates == nil || r.Rates.Error != "" {
		t.Errorf("a change past the share window: rates %+v", r.Rates)
	}
	if n := fc.scrapes.Load(); n != 3 {
		t.Errorf("a change past the share window: %d scrapes, want 3 (a read of its own)", n)
	}
}

// A warm read that failed answers no change: the first change reads the
// source again (a CLI change would have), and that change's read is
// shared as any other.
func TestAssessorWarmReadThatFailedIsReadAgain(t *testing.T) {
	t.Parallel()
	src := &fakeRates{err: fmt.Errorf("scrape: %w", metrics.ErrUnavailable)}
	a := &impact.Assessor{Clock: clocktest.NewFake(time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)),
		Open: func(context.Context) (impact.RateSource, error) { return src, nil }}
	a.Warm(t.Context())
	// Wait for the warm read itself: a read of the shared source here
	// would start a read of its own once the warm one has failed, and
	// that one, a change's, is shared.
	if err := a.LastRead(t.Context()); err == nil {
		t.Fatal("the warm read did not fail")
	}
	src.err = nil
	src.rates = screeningRates()
	for _, f := range threeWindows[:2] {
		if r := a.Assess(t.Context(), f).(*impact.Report); r.Rates == nil || r.Rates.Error != "" {
			t.Errorf("%s: rates %+v, want the read after the failed warm one", f.Dependencies[0], r.Rates)
		}
	}
	if src.calls != 2 {
		t.Errorf("the source was read %d times, want twice (the warm read, then the changes' one)", src.calls)
	}
}

// What Source reads is the changes' shared read: the dashboard's detail
// and the changes made from it cost one read.
func TestAssessorSourceSharesTheChangesRead(t *testing.T) {
	t.Parallel()
	src := &fakeRates{rates: screeningRates()}
	a := &impact.Assessor{Clock: clocktest.NewFake(time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)),
		Open: func(context.Context) (impact.RateSource, error) { return src, nil }}
	shared, err := a.Source(t.Context())
	if err != nil || shared == nil || shared.Describe() != src.Describe() {
		t.Fatalf("Source: %v, %v", shared, err)
	}
	got, err := shared.Rates(t.Context(), metrics.RateRequest{Tools: []string{impact.ToolScreenEntity}, Dependencies: []string{impact.ScreeningSim}})
	if err != nil || got.Tools[impact.ToolScreenEntity] != 25 {
		t.Fatalf("Rates: %+v, %v", got, err)
	}
	if r := a.Assess(t.Context(), threeWindows[0]).(*impact.Report); r.Rates == nil || r.Rates.Error != "" {
		t.Errorf("rates %+v", r.Rates)
	}
	if src.calls != 1 {
		t.Errorf("the source was read %d times, want once", src.calls)
	}
	var none *impact.Assessor
	if s, err := none.Source(t.Context()); s != nil || err != nil {
		t.Errorf("an assessor without a source: %v, %v", s, err)
	}
}

// prometheusFleet is a fleet's counters served for scraping (10 calls a
// scrape) and the Prometheus rate source reading them on a fake clock.
func prometheusFleet(t *testing.T) (*fleetCounters, *clocktest.Fake, impact.RateSource) {
	t.Helper()
	fc := &fleetCounters{perScrape: 10}
	url := fc.serve(t)
	clk := clocktest.NewFake(time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC))
	src, err := metrics.NewPrometheusRates([]string{url}, metrics.PrometheusRateOptions{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return fc, clk, src
}
