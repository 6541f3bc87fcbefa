package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/config"
	"github.com/kosha-platform/koshactl/internal/gauge"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/metrics/cwfake"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// counters writes the sandbox's call counters as its /metrics does.
func counters(screenOK, screenDeferred, screeningCalls, searchOK float64) string {
	var b strings.Builder
	b.WriteString("# HELP kosha_tool_calls_total Tool calls by tool and outcome.\n# TYPE kosha_tool_calls_total counter\n")
	fmt.Fprintf(&b, "kosha_tool_calls_total{outcome=\"ok\",tool=\"screen_entity\"} %v\n", screenOK)
	if screenDeferred >= 0 {
		fmt.Fprintf(&b, "kosha_tool_calls_total{outcome=\"deferred\",tool=\"screen_entity\"} %v\n", screenDeferred)
	}
	fmt.Fprintf(&b, "kosha_tool_calls_total{outcome=\"ok\",tool=\"search_knowledge_base\"} %v\n", searchOK)
	b.WriteString("# TYPE kosha_downstream_calls_total counter\n")
	fmt.Fprintf(&b, "kosha_downstream_calls_total{dependency=\"screening-sim\",outcome=\"success\"} %v\n", screeningCalls)
	b.WriteString("kosha_downstream_calls_total{dependency=\"screening-sim\",outcome=\"circuit_open\"} 0\n")
	b.WriteString("# TYPE kosha_breaker_state gauge\nkosha_breaker_state{dependency=\"screening-sim\",instance=\"gw-1\"} 0\n")
	return b.String()
}

// rateRead runs r.Rates on its own goroutine; advance, once it waits on
// clk, is called before the clock moves by step.
func rateRead(t *testing.T, r metrics.RateSource, clk *clocktest.Fake, req metrics.RateRequest, step time.Duration, advance func()) (metrics.CallRates, error) {
	t.Helper()
	type result struct {
		rates metrics.CallRates
		err   error
	}
	done := make(chan result, 1)
	go func() {
		rates, err := r.Rates(t.Context(), req)
		done <- result{rates, err}
	}()
	ceiling := time.NewTimer(wait.Ceiling)
	defer ceiling.Stop()
	for {
		changed := clk.WaitersChanged()
		select {
		case res := <-done:
			return res.rates, res.err
		default:
		}
		if clk.Waiters() == 0 {
			select {
			case res := <-done:
				return res.rates, res.err
			case <-changed:
			case <-ceiling.C:
				t.Fatal("the rate read neither ended nor waited")
			}
			continue
		}
		advance()
		clk.Advance(step)
	}
}

var screeningReq = metrics.RateRequest{Tools: []string{"screen_entity", "search_knowledge_base", "raise_dispute"}, Dependencies: []string{"screening-sim"}}

func TestPrometheusRatesScrapeTwiceOnAFirstRead(t *testing.T) {
	t.Parallel()
	e, url := serveMetrics(t, counters(100, 20, 400, 7))
	clk := clocktest.NewFake(now)
	r, err := metrics.NewPrometheusRates([]string{url}, metrics.PrometheusRateOptions{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	// 5 s later: screen_entity +3 ok +1 deferred (48/min), screening-sim +4
	// (48/min), search unchanged.
	rates, err := rateRead(t, r, clk, screeningReq, metrics.DefaultRateInterval, func() { e.set(counters(103, 21, 404, 7)) })
	if err != nil {
		t.Fatal(err)
	}
	if rates.Window != 5*time.Second || rates.Tools["screen_entity"] != 48 || rates.Tools["search_knowledge_base"] != 0 ||
		rates.Dependencies["screening-sim"] != 48 || !strings.Contains(rates.Method, "two scrapes 5s apart") {
		t.Fatalf("rates %+v", rates)
	}
	if _, ok := rates.Tools["raise_dispute"]; ok {
		t.Error("raise_dispute has no series and was reported as a rate")
	}
	if e.hits != 2 {
		t.Errorf("%d scrapes, want 2", e.hits)
	}

	// A read 55 s later measures from the first scrape, without waiting: a
	// minute of traffic (60 screenings, 30 of them deferred after a reset of
	// the deferred counter).
	clk.Advance(55 * time.Second)
	e.set(counters(133, 9, 470, 7))
	rates, err = r.Rates(t.Context(), screeningReq)
	if err != nil {
		t.Fatal(err)
	}
	if rates.Window != time.Minute || math.Abs(rates.Tools["screen_entity"]-(33+9)) > 1e-9 || rates.Dependencies["screening-sim"] != 70 {
		t.Errorf("second read: %+v (want 42/min: +33 ok, and the deferred counter reset to 9 counts 9)", rates)
	}
	if e.hits != 3 {
		t.Errorf("%d scrapes, want 3: the second read scrapes once", e.hits)
	}
}

func TestPrometheusRatesCountANewSeriesFromZero(t *testing.T) {
	t.Parallel()
	e, url := serveMetrics(t, counters(100, -1, 400, 7))
	clk := clocktest.NewFake(now)
	r, err := metrics.NewPrometheusRates([]string{url}, metrics.PrometheusRateOptions{Clock: clk, Interval: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	rates, err := rateRead(t, r, clk, screeningReq, 10*time.Second, func() { e.set(counters(100, 5, 400, 7)) })
	if err != nil {
		t.Fatal(err)
	}
	if rates.Tools["screen_entity"] != 30 {
		t.Errorf("screen_entity %v/min, want 30: the deferred series appeared with 5 calls in 10s", rates.Tools["screen_entity"])
	}
}

func TestPrometheusRatesForgetScrapesPastTheWindow(t *testing.T) {
	t.Parallel()
	e, url := serveMetrics(t, counters(100, 0, 400, 7))
	clk := clocktest.NewFake(now)
	r, err := metrics.NewPrometheusRates([]string{url}, metrics.PrometheusRateOptions{Clock: clk, Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rateRead(t, r, clk, screeningReq, metrics.DefaultRateInterval, func() {}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Minute)
	rates, err := rateRead(t, r, clk, screeningReq, metrics.DefaultRateInterval, func() { e.set(counters(110, 0, 400, 7)) })
	if err != nil {
		t.Fatal(err)
	}
	if rates.Window != metrics.DefaultRateInterval || rates.Tools["screen_entity"] != 120 {
		t.Errorf("rates %+v: a read past the window scrapes twice again", rates)
	}
}

func TestPrometheusRatesFailures(t *testing.T) {
	t.Parallel()
	t.Run("no target answers", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.NotFoundHandler())
		url := srv.URL + "/metrics"
		srv.Close()
		r, err := metrics.NewPrometheusRates([]string{url}, metrics.PrometheusRateOptions{Clock: clocktest.NewFake(now)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Rates(t.Context(), screeningReq); !errors.Is(err, metrics.ErrUnavailable) {
			t.Errorf("err %v, want ErrUnavailable", err)
		}
	})
	t.Run("one of two targets answers", func(t *testing.T) {
		t.Parallel()
		e, url := serveMetrics(t, counters(100, 0, 400, 7))
		down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadGateway) }))
		t.Cleanup(down.Close)
		clk := clocktest.NewFake(now)
		r, err := metrics.NewPrometheusRates([]string{url, down.URL + "/metrics"}, metrics.PrometheusRateOptions{Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		rates, err := rateRead(t, r, clk, screeningReq, metrics.DefaultRateInterval, func() { e.set(counters(105, 0, 400, 7)) })
		if err != nil {
			t.Fatal(err)
		}
		if rates.Tools["screen_entity"] != 60 || len(rates.Warnings) != 1 || !strings.Contains(rates.Warnings[0], "502") {
			t.Errorf("rates %+v", rates)
		}
	})
	t.Run("a redirect is not followed", func(t *testing.T) {
		t.Parallel()
		_, url := serveMetrics(t, counters(100, 0, 400, 7))
		redirect := httptest.NewServer(http.RedirectHandler(url, http.StatusFound))
		t.Cleanup(redirect.Close)
		r, err := metrics.NewPrometheusRates([]string{redirect.URL + "/metrics"}, metrics.PrometheusRateOptions{Clock: clocktest.NewFake(now)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Rates(t.Context(), screeningReq); err == nil || !strings.Contains(err.Error(), "follows no redirect") {
			t.Errorf("err %v", err)
		}
	})
	// The rate reader scrapes as the gauge reader does: an answer over the
	// 16 MiB cap is refused as too large, naming the counters to federate,
	// never cut at the cap and failed as a parse error of the cut line.
	t.Run("an answer over the cap", func(t *testing.T) {
		t.Parallel()
		var b strings.Builder
		b.WriteString(counters(100, 0, 400, 7))
		for i := 0; b.Len() < 17_000_000; i++ {
			fmt.Fprintf(&b, "kosha_requests_total{dependency=\"openai\",instance=\"gw-%d\",route=\"/a/long/route/name/to/fill/the/line\"} %d\n", i, i)
		}
		_, url := serveMetrics(t, b.String())
		r, err := metrics.NewPrometheusRates([]string{url}, metrics.PrometheusRateOptions{Clock: clocktest.NewFake(now),
			Client: &http.Client{Timeout: wait.Ceiling}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.Rates(t.Context(), screeningReq)
		if !errors.Is(err, metrics.ErrUnavailable) {
			t.Fatalf("err %v, want unavailable", err)
		}
		for _, want := range []string{"too large", "16 MiB", "/federate?match[]=kosha_tool_calls_total&match[]=kosha_downstream_calls_total"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%q does not say %q", err, want)
			}
		}
		if strings.Contains(err.Error(), "parse") {
			t.Errorf("%q reads as a parse error", err)
		}
	})
	t.Run("canceled while waiting for the second scrape", func(t *testing.T) {
		t.Parallel()
		_, url := serveMetrics(t, counters(100, 0, 400, 7))
		clk := clocktest.NewFake(now)
		r, err := metrics.NewPrometheusRates([]string{url}, metrics.PrometheusRateOptions{Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() {
			_, err := r.Rates(ctx, screeningReq)
			done <- err
		}()
		wait.Until(t, "the read waits for its second scrape", func() bool { return clk.Waiters() == 1 })
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("err %v, want context.Canceled", err)
		}
	})
	t.Run("bad url", func(t *testing.T) {
		t.Parallel()
		if _, err := metrics.NewPrometheusRates([]string{"ftp://x"}, metrics.PrometheusRateOptions{}); !errors.Is(err, metrics.ErrInvalidSource) {
			t.Errorf("err %v", err)
		}
	})
}

func TestCloudWatchRatesSumWholeMinutesPastTheRetrievalDelay(t *testing.T) {
	t.Parallel()
	for _, service := range []string{"", "gateway"} {
		t.Run("service="+service, func(t *testing.T) {
			t.Parallel()
			s := cwfake.New(t)
			dims := func(k, v string) map[string]string {
				d := map[string]string{k: v}
				if service != "" {
					d[gauge.DimService] = service
				}
				return d
			}
			// now is 19:00:30: the window is 18:53 to 18:58. Two publishers
			// each minute from 18:50 to 19:00: 10 and 20 screenings.
			for m := -10; m <= 0; m++ {
				at := now.Truncate(time.Minute).Add(time.Duration(m) * time.Minute)
				s.PutCount(gauge.ToolCallsMetricName, dims(gauge.DimTool, "screen_entity"), at.Add(10*time.Second), 10)
				s.PutCount(gauge.ToolCallsMetricName, dims(gauge.DimTool, "screen_entity"), at.Add(40*time.Second), 20)
				s.PutCount(gauge.DownstreamCallsMetricName, dims(gauge.DimDependency, "screening-sim"), at, 45)
			}
			// A series without the service dimension is another metric.
			s.PutCount(gauge.ToolCallsMetricName, map[string]string{gauge.DimTool: "raise_dispute", "other": "x"}, now.Add(-4*time.Minute), 1000)
			r := metrics.NewCloudWatchRates(s.Client(1), metrics.CloudWatchRateOptions{Service: service, Region: "eu-west-1", Clock: clocktest.NewFake(now)})
			rates, err := r.Rates(t.Context(), screeningReq)
			if err != nil {
				t.Fatal(err)
			}
			if rates.Tools["screen_entity"] != 30 || rates.Dependencies["screening-sim"] != 45 ||
				rates.Window != 5*time.Minute || !strings.Contains(rates.Method, "18:53 to 18:58 UTC") {
				t.Errorf("rates %+v", rates)
			}
			// No datapoint: no calls, or not published; CloudWatch cannot
			// tell, so no rate is stated.
			_, search := rates.Tools["search_knowledge_base"]
			_, dispute := rates.Tools["raise_dispute"]
			if search || dispute || len(rates.Warnings) != 1 ||
				rates.Warnings[0] != "cloudwatch: no datapoint in the window for tool_calls search_knowledge_base, tool_calls raise_dispute: "+
					"no calls, or the fleet does not publish the metric" {
				t.Errorf("tools without datapoints: %+v, warnings %q", rates.Tools, rates.Warnings)
			}
			reqs := s.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			q := reqs[0]
			if !q.Start.Equal(time.Date(2026, 11, 29, 18, 53, 0, 0, time.UTC)) || !q.End.Equal(time.Date(2026, 11, 29, 18, 58, 0, 0, time.UTC)) ||
				len(q.Queries) != 4 || q.Queries[0].Stat != "Sum" || q.Queries[0].Period != 60 || q.Queries[0].Metric != gauge.ToolCallsMetricName ||
				q.Queries[3].Metric != gauge.DownstreamCallsMetricName || (q.Queries[0].Dimensions[gauge.DimService] != service) {
				t.Errorf("request %+v", q)
			}
		})
	}
}

func TestCloudWatchRatesWithoutAnyCount(t *testing.T) {
	t.Parallel()
	s := cwfake.New(t)
	r := metrics.NewCloudWatchRates(s.Client(1), metrics.CloudWatchRateOptions{Clock: clocktest.NewFake(now)})
	rates, err := r.Rates(t.Context(), screeningReq)
	if err != nil {
		t.Fatal(err)
	}
	if len(rates.Tools)+len(rates.Dependencies) != 0 || len(rates.Warnings) != 1 ||
		rates.Warnings[0] != "cloudwatch: no tool_calls or downstream_calls datapoint in the window: the fleet publishes none, or there were no calls" {
		t.Errorf("rates %+v", rates)
	}
}

func TestCloudWatchRatesDenied(t *testing.T) {
	t.Parallel()
	s := cwfake.New(t)
	s.Authorize = func(action, _ string, _ map[string][]string) string { return "not authorized to perform: " + action }
	r := metrics.NewCloudWatchRates(s.Client(1), metrics.CloudWatchRateOptions{Clock: clocktest.NewFake(now)})
	if _, err := r.Rates(t.Context(), screeningReq); !errors.Is(err, metrics.ErrDenied) {
		t.Errorf("err %v, want ErrDenied", err)
	}
}

func TestNewRateSourceFollowsTheGaugeChoice(t *testing.T) {
	t.Parallel()
	local := &config.Context{}
	src, err := metrics.NewRateSource(t.Context(), metrics.SourceConfig{Context: local})
	if err != nil {
		t.Fatal(err)
	}
	if src.Describe() != "prometheus "+metrics.DefaultPrometheusURL {
		t.Errorf("local context: %s", src.Describe())
	}
	src, err = metrics.NewRateSource(t.Context(), metrics.SourceConfig{Context: local, PrometheusURL: "http://10.0.0.1:9090/metrics"})
	if err != nil || src.Describe() != "prometheus http://10.0.0.1:9090/metrics" {
		t.Errorf("--metrics-url: %v %v", src, err)
	}
}
