package dashboard_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/dashboard"
	"github.com/kosha-platform/koshactl/internal/cmd/gaugeenv"
	"github.com/kosha-platform/koshactl/internal/config"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/gauge"
	"github.com/kosha-platform/koshactl/internal/impact"
	"github.com/kosha-platform/koshactl/internal/lever/builtin"
	"github.com/kosha-platform/koshactl/internal/metrics/cwfake"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/vtterm"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

func TestDashboardNeedsATerminal(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	r := e.MustRun(exitcode.Usage, "dashboard")
	if !strings.Contains(r.Stderr, "needs a terminal") || !strings.Contains(r.Stderr, "koshactl breaker status") {
		t.Errorf("stderr = %q", r.Stderr)
	}
	e.TTY = true
	r = e.MustRun(exitcode.Usage, "dashboard", "--interval", "500ms")
	if !strings.Contains(r.Stderr, "--interval 500ms is too short") {
		t.Errorf("stderr = %q", r.Stderr)
	}
	e.MustRun(exitcode.Usage, "dashboard", "--metrics-url", "not a url")
}

func TestDashboardFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want dashboard.Options
	}{
		{nil, dashboard.Options{Interval: 10 * time.Second, Wait: true}},
		{[]string{"--interval", "1m", "--metrics-url", "http://127.0.0.1:9100/metrics", "--wait=false"},
			dashboard.Options{Interval: time.Minute, MetricsURL: "http://127.0.0.1:9100/metrics"}},
	} {
		var got dashboard.Options
		cmd := dashboard.NewCmd(&cmdenv.Factory{}, func(_ context.Context, o *dashboard.Options) error { got = *o; return nil })
		cmd.SetArgs(tc.args)
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("%v: %+v, want %+v", tc.args, got, tc.want)
		}
	}
}

func TestDashboardOnTheLocalContext(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	sandbox := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, "kosha_breaker_state{dependency=\"openai\",instance=\"gw-1\"} 0\nkosha_breaker_state{dependency=\"openai\",instance=\"gw-2\"} 0\n")
	}))
	t.Cleanup(sandbox.Close)
	e.WriteConfig(fmt.Sprintf("contexts:\n  local:\n    store:\n      local: {}\n    metrics:\n      prometheus:\n        url: %s/metrics\n", sandbox.URL))
	e.MustRun(0, "breaker", "force-open", "postgres", "--reason", "db failover", "--for", "30m")

	term, ios, _ := vtterm.New(t)
	f := e.Factory(ios)
	done := make(chan error, 1)
	go func() { done <- dashboard.Run(context.Background(), f, &dashboard.Options{Interval: time.Minute}) }()

	term.WaitFor(t, "context local", "openai", "closed", "2/2", "postgres", "forced", "30m tester")
	// Force openai open from the keyboard, then clear it.
	term.Press("f")
	term.WaitFor(t, "Force core-api open")
	term.Press("\x1b") // esc: not that one
	term.WaitFor(t, "canceled: nothing was changed")
	term.Press("jf")
	term.WaitFor(t, "Force openai open across the fleet")
	term.Press("provider down\r\r")
	term.WaitFor(t, "openai forced open for 1h")
	r := e.MustRun(0, "breaker", "get", "openai", "-o", "json")
	if !strings.Contains(r.Stdout, `"reason": "provider down"`) || !strings.Contains(r.Stdout, `"actor": "tester@test"`) {
		t.Errorf("the store does not hold the dashboard's override:\n%s", r.Stdout)
	}
	term.Press("c\r")
	term.WaitFor(t, "openai cleared")
	audit := e.MustRun(0, "audit", "list", "-o", "json").Stdout
	if strings.Count(audit, `"breaker.force-open"`) != 2 || strings.Count(audit, `"breaker.clear"`) != 1 {
		t.Errorf("audit records of the dashboard's changes are missing:\n%s", audit)
	}
	term.Press("q")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("dashboard ended with %v", err)
		}
	case <-time.After(wait.Ceiling):
		t.Fatal("q did not end the dashboard")
	}
}

func TestDashboardOnCloudWatchWarnsOfTheCost(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	cw := cwfake.New(t)
	cw.Put("openai", "gw-1", clitest.Epoch.Add(-30*time.Second), 2)
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "kosha.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	term, ios, errOut := vtterm.New(t)
	env := &cmdenv.Env{Name: "prod", Store: st, Clock: e.Clock,
		Context: &config.Context{Protected: true, Dependencies: []string{"openai"},
			Metrics: config.MetricsConfig{CloudWatch: &config.CloudWatchMetrics{EndpointURL: cw.URL}}},
		Actor: func(context.Context) (string, error) { return "tester@test", nil },
		AWSConfig: func(context.Context) (aws.Config, error) {
			return aws.Config{Region: "eu-west-1", RetryMaxAttempts: 1, HTTPClient: cw.HTTPClient(),
				Credentials: credentials.NewStaticCredentialsProvider("AKIDFAKE", "fake", "")}, nil
		}}
	env.Kinds = builtin.For(st, e.Clock, env.Name, env.Context)
	f := &cmdenv.Factory{IOStreams: ios, Clock: e.Clock, Env: func(context.Context) (*cmdenv.Env, error) { return env, nil }}
	done := make(chan error, 1)
	go func() { done <- dashboard.Run(context.Background(), f, &dashboard.Options{Interval: 10 * time.Second}) }()
	term.WaitFor(t, "PROTECTED CONTEXT prod", "openai", "open", "~1", "cost: GetMetricData is billed")
	// The dashboard refreshes on the context's clock, which stands still
	// until the test moves it: one refresh so far, one request.
	if calls := cw.Calls(); calls != 1 {
		t.Errorf("GetMetricData calls = %d before the interval passed, want 1", calls)
	}
	nextRefresh(t, e.Clock, 10*time.Second)
	wait.Until(t, "the second refresh's request", func() bool { return cw.Calls() >= 2 })
	term.Press("q")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut.String(), "warning: GetMetricData is billed per metric requested: refreshing every 10s") {
		t.Errorf("stderr = %q", errOut.String())
	}
	if calls := cw.Calls(); calls != 2 {
		t.Errorf("GetMetricData calls = %d after two refreshes, want one per refresh", calls)
	}
}

// nextRefresh moves clk one refresh interval on, once the dashboard waits on
// it (its refresh timer and its one-second countdown timer).
func nextRefresh(t *testing.T, clk *clocktest.Fake, interval time.Duration) {
	t.Helper()
	wait.Until(t, "the dashboard to wait on its timers", func() bool { return clk.Waiters() >= 2 })
	clk.Advance(interval)
}

// At 20 dependencies x 300 instances with one openai instance open and
// Lambda's churn (300 instances seen earlier in the hour, whose names sort
// first, so a truncated SEARCH drops the open one): the table says openai's
// worst is open from the fleet statistics, and its detail view shows a
// partial breakdown.
func TestDashboardOnCloudWatchAtTwentyByThreeHundred(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	cw := cwfake.New(t)
	deps := []string{"openai"}
	for i := range 19 {
		deps = append(deps, fmt.Sprintf("tool-%02d", i))
	}
	for _, d := range deps {
		for i := range 300 {
			v := 0.0
			if d == "openai" && i == 299 {
				v = 2
			}
			cw.Put(d, fmt.Sprintf("i-%03d", i), clitest.Epoch.Add(-30*time.Second), v)
		}
	}
	for i := range 300 {
		cw.Put("openai", fmt.Sprintf("a-%03d", i), clitest.Epoch.Add(-30*time.Minute), 0)
	}
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "kosha.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	term, ios, _ := vtterm.New(t)
	env := &cmdenv.Env{Name: "prod", Store: st, Clock: e.Clock,
		Context: &config.Context{Dependencies: deps, Metrics: config.MetricsConfig{CloudWatch: &config.CloudWatchMetrics{EndpointURL: cw.URL}}},
		Actor:   func(context.Context) (string, error) { return "tester@test", nil },
		AWSConfig: func(context.Context) (aws.Config, error) {
			return aws.Config{Region: "eu-west-1", RetryMaxAttempts: 1, HTTPClient: cw.HTTPClient(),
				Credentials: credentials.NewStaticCredentialsProvider("AKIDFAKE", "fake", "")}, nil
		}}
	env.Kinds = builtin.For(st, e.Clock, env.Name, env.Context)
	f := &cmdenv.Factory{IOStreams: ios, Clock: e.Clock, Env: func(context.Context) (*cmdenv.Env, error) { return env, nil }}
	done := make(chan error, 1)
	go func() { done <- dashboard.Run(context.Background(), f, &dashboard.Options{Interval: time.Minute}) }()
	term.WaitFor(t, "openai     mixed     open   closed ~300", "tool-00")
	if calls := cw.Calls(); calls != 1 || cw.Requests()[0].Metrics != 60 {
		t.Errorf("the table's refresh: %d requests, %d metrics; want one of 60", calls, cw.Requests()[0].Metrics)
	}
	term.Press("\r")
	term.WaitFor(t, "openai · mixed", "worst open · best closed", "199/499 instances reporting (partial)",
		"per-instance breakdown is partial")
	term.Press("jjjjjjjj") // past the impact
	term.WaitFor(t, "Instances (499 returned, partial")
	for _, r := range cw.Requests() {
		if r.Metrics > 500 {
			t.Errorf("a request returned %d metrics", r.Metrics)
		}
	}
	term.Press("q")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// The detail's impact on a context whose metrics setting is a Prometheus
// endpoint: the rates come from the same /metrics the gauges do, read by
// the context's impact assessor, as breaker force-open reads them (two
// scrapes 5s apart on the wall clock: the counters count calls in real
// time), and the estimate is over the time the override has left.
func TestDashboardDetailShowsTheImpactWithRates(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	// 25 screenings a minute of real time, whenever it is scraped.
	start := time.Now()
	sandbox := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		minutes := time.Since(start).Minutes()
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, "kosha_breaker_state{dependency=\"screening-sim\",instance=\"gw-1\"} 3\n")
		fmt.Fprintf(w, "# TYPE kosha_tool_calls_total counter\nkosha_tool_calls_total{outcome=\"deferred\",tool=\"screen_entity\"} %v\n", 100+25*minutes)
		fmt.Fprintf(w, "# TYPE kosha_downstream_calls_total counter\nkosha_downstream_calls_total{dependency=\"screening-sim\",outcome=\"circuit_open\"} %v\n", 7+50*minutes)
	}))
	t.Cleanup(sandbox.Close)
	e.WriteConfig(fmt.Sprintf("contexts:\n  local:\n    store:\n      local: {}\n    metrics:\n      prometheus:\n        url: %s/metrics\n", sandbox.URL))
	e.MustRun(0, "breaker", "force-open", "screening-sim", "--reason", "vendor maintenance", "--for", "30m")

	term, ios, _ := vtterm.New(t)
	f := e.Factory(ios)
	done := make(chan error, 1)
	go func() { done <- dashboard.Run(context.Background(), f, &dashboard.Options{Interval: time.Minute}) }()
	term.WaitFor(t, "screening-sim", "30m tester")
	term.Press("jjj\r")
	term.WaitFor(t, "Impact     while forced (30m left)", "screen_entity deferred")
	// 25/min x the 30m left. The counters count in real time and the two
	// scrapes are timed by the reader, so a loaded machine reads a little
	// off 25 (24.8 once): the rate is held near 25 and the estimate to it.
	m := term.WaitForMatch(t, regexp.MustCompile(`([0-9.]+) calls/min · about ([0-9,]+) screenings deferred over 30m`))
	rate, err := strconv.ParseFloat(m[1], 64)
	if err != nil || rate < 22 || rate > 28 {
		t.Errorf("the detail shows %s calls/min; want about 25", m[1])
	}
	if est, err := strconv.Atoi(strings.ReplaceAll(m[2], ",", "")); err != nil || math.Abs(float64(est)-30*rate) > 0.05*30*rate {
		t.Errorf("the detail estimates %s screenings over 30m at %s calls/min; want about %.0f", m[2], m[1], 30*rate)
	}
	term.WaitFor(t, "call rates: prometheus "+sandbox.URL+"/metrics, counters'", "increase between two scrapes 5") // 5s and the scrape's own time apart
	term.Press("q")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("dashboard ended with %v", err)
		}
	case <-time.After(wait.Ceiling):
		t.Fatal("q did not end the dashboard")
	}
}

// The detail's rates and the forces made from the dashboard are one read
// of the context's source, as a CLI round's: on CloudWatch one
// GetMetricData request for the rates, not one for the detail and one for
// the forces. Each force's record keeps the rates of that read.
func TestDashboardDetailAndForcesShareOneRateRead(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	cw := cwfake.New(t)
	for m := -10; m <= 0; m++ {
		at := clitest.Epoch.Truncate(time.Minute).Add(time.Duration(m) * time.Minute)
		cw.PutCount(gauge.ToolCallsMetricName, map[string]string{gauge.DimTool: impact.ToolScreenEntity}, at, 30)
		cw.PutCount(gauge.DownstreamCallsMetricName, map[string]string{gauge.DimDependency: impact.ScreeningSim}, at, 45)
	}
	cw.Put(impact.OpenAI, "gw-1", clitest.Epoch.Add(-30*time.Second), 0)
	cw.Put(impact.ScreeningSim, "gw-1", clitest.Epoch.Add(-30*time.Second), 0)
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "kosha.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	term, ios, _ := vtterm.New(t)
	env := &cmdenv.Env{Name: "prod", Store: st, Clock: e.Clock,
		Context: &config.Context{Dependencies: []string{impact.OpenAI, impact.ScreeningSim},
			Metrics: config.MetricsConfig{CloudWatch: &config.CloudWatchMetrics{EndpointURL: cw.URL}}},
		Actor: func(context.Context) (string, error) { return "tester@test", nil },
		AWSConfig: func(context.Context) (aws.Config, error) {
			return aws.Config{Region: "eu-west-1", RetryMaxAttempts: 1, HTTPClient: cw.HTTPClient(),
				Credentials: credentials.NewStaticCredentialsProvider("AKIDFAKE", "fake", "")}, nil
		}}
	env.Kinds = builtin.For(st, e.Clock, env.Name, env.Context)
	env.Impact = gaugeenv.Assessor(env, "") // as the command factory wires it
	f := &cmdenv.Factory{IOStreams: ios, Clock: e.Clock, Env: func(context.Context) (*cmdenv.Env, error) { return env, nil }}
	done := make(chan error, 1)
	go func() {
		done <- dashboard.Run(context.Background(), f, &dashboard.Options{Interval: time.Minute, Wait: false})
	}()
	term.WaitFor(t, "openai", "screening-sim")
	rateReads := func() int {
		n := 0
		for _, r := range cw.Requests() {
			if slices.ContainsFunc(r.Queries, func(q cwfake.Query) bool { return q.Metric == gauge.ToolCallsMetricName }) {
				n++
			}
		}
		return n
	}
	// CloudWatch bills each read: none before anything asks for the rates.
	if n := rateReads(); n != 0 {
		t.Errorf("%d rate reads before the detail or a force, want 0", n)
	}
	term.Press("j\r")
	term.WaitFor(t, "screening-sim · ", "30 calls/min", "call rates: cloudwatch")
	term.Press("f") // from the detail
	term.WaitFor(t, "Force screening-sim open across the fleet")
	term.Press("vendor down\r\r")
	term.WaitFor(t, "screening-sim forced open for 1h")
	term.Press("\x1b")
	term.WaitFor(t, "DEPENDENCY")
	term.Press("kf")
	term.WaitFor(t, "Force openai open across the fleet")
	term.Press("provider down\r\r")
	term.WaitFor(t, "openai forced open for 1h")
	if n := rateReads(); n != 1 {
		t.Errorf("%d GetMetricData rate reads for the detail and two forces, want 1", n)
	}
	l, err := env.Audit().List(context.Background(), audit.Query{})
	if err != nil {
		t.Fatal(err)
	}
	forces := 0
	for _, r := range l.Records {
		if im := r.Impact; im != nil {
			if !strings.HasPrefix(im.RatesSource, "cloudwatch") || im.RatesError != "" {
				t.Errorf("%s: impact %+v, want the shared read's rates", r.Subject, im)
			}
			forces++
		}
	}
	if forces != 2 {
		t.Errorf("%d forces recorded an impact, want 2", forces)
	}
	term.Press("q")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
