package dashboard_test

import (
	"bytes"
	"context"
	"fmt"
	"github.com/kosha-platform/koshactl/internal/lever/builtin"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"

	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/dashboard"
	"github.com/kosha-platform/koshactl/internal/config"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/metrics/cwfake"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
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

// terminal is what the dashboard draws on: keys go in through a pipe, the
// output is replayed on a terminal emulator so the test reads the screen.
type terminal struct {
	keys *io.PipeWriter
	mu   sync.Mutex
	out  bytes.Buffer
	emu  *vt.Emulator
}

func newTerminal(t *testing.T) (*terminal, *iostreams.IOStreams, *bytes.Buffer) {
	pr, pw := io.Pipe()
	term := &terminal{keys: pw, emu: vt.NewEmulator(80, 24)}
	// Not a real tty: the renderer relies on LF meaning CR LF.
	_, _ = term.emu.WriteString(ansi.SetModeLineFeedNewLine)
	// The emulator's answers to terminal queries go back to the program, as
	// a terminal's would.
	go func() { _, _ = io.Copy(pw, term.emu) }()
	t.Cleanup(func() { _ = term.emu.InputPipe().(io.Closer).Close(); _ = pw.Close() })
	errOut := &bytes.Buffer{}
	ios := &iostreams.IOStreams{In: pr, Out: term, ErrOut: errOut}
	ios.SetStdinTTY(true)
	ios.SetStdoutTTY(true)
	ios.SetStderrTTY(true)
	return term, ios, errOut
}

func (term *terminal) Write(p []byte) (int, error) {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.out.Write(p)
}

// waitFor polls the screen until it shows every text.
func (term *terminal) waitFor(t *testing.T, texts ...string) {
	t.Helper()
	var screen string
	if err := wait.For(t.Context(), fmt.Sprintf("the screen to show %q", texts), func() bool {
		term.mu.Lock()
		_, _ = term.emu.Write(term.out.Bytes())
		term.out.Reset()
		term.mu.Unlock()
		screen = term.emu.String()
		ok := true
		for _, text := range texts {
			ok = ok && strings.Contains(screen, text)
		}
		return ok
	}); err != nil {
		t.Fatalf("%v; the last screen:\n%s", err, screen)
	}
}

func (term *terminal) press(keys string) {
	_, _ = term.keys.Write([]byte(keys))
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

	term, ios, _ := newTerminal(t)
	f := e.Factory(ios)
	done := make(chan error, 1)
	go func() { done <- dashboard.Run(context.Background(), f, &dashboard.Options{Interval: time.Minute}) }()

	term.waitFor(t, "context local", "openai", "closed", "2/2", "postgres", "forced", "30m tester")
	// Force openai open from the keyboard, then clear it.
	term.press("f")
	term.waitFor(t, "Force core-api open")
	term.press("\x1b") // esc: not that one
	term.waitFor(t, "canceled: nothing was changed")
	term.press("jf")
	term.waitFor(t, "Force openai open across the fleet")
	term.press("provider down\r\r")
	term.waitFor(t, "openai forced open for 1h")
	r := e.MustRun(0, "breaker", "get", "openai", "-o", "json")
	if !strings.Contains(r.Stdout, `"reason": "provider down"`) || !strings.Contains(r.Stdout, `"actor": "tester@test"`) {
		t.Errorf("the store does not hold the dashboard's override:\n%s", r.Stdout)
	}
	term.press("c\r")
	term.waitFor(t, "openai cleared")
	audit := e.MustRun(0, "audit", "list", "-o", "json").Stdout
	if strings.Count(audit, `"breaker.force-open"`) != 2 || strings.Count(audit, `"breaker.clear"`) != 1 {
		t.Errorf("audit records of the dashboard's changes are missing:\n%s", audit)
	}
	term.press("q")
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
	term, ios, errOut := newTerminal(t)
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
	term.waitFor(t, "PROTECTED CONTEXT prod", "openai", "open", "~1", "cost: GetMetricData is billed")
	// The dashboard refreshes on the context's clock, which stands still
	// until the test moves it: one refresh so far, one request.
	if calls := cw.Calls(); calls != 1 {
		t.Errorf("GetMetricData calls = %d before the interval passed, want 1", calls)
	}
	nextRefresh(t, e.Clock, 10*time.Second)
	wait.Until(t, "the second refresh's request", func() bool { return cw.Calls() >= 2 })
	term.press("q")
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
func nextRefresh(t *testing.T, clk *clock.Fake, interval time.Duration) {
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
	term, ios, _ := newTerminal(t)
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
	term.waitFor(t, "openai     mixed     open   closed ~300", "tool-00")
	if calls := cw.Calls(); calls != 1 || cw.Requests()[0].Metrics != 60 {
		t.Errorf("the table's refresh: %d requests, %d metrics; want one of 60", calls, cw.Requests()[0].Metrics)
	}
	term.press("\r")
	term.waitFor(t, "openai · mixed", "worst open · best closed", "199/499 instances reporting (partial)",
		"per-instance breakdown is partial")
	term.press("jjjjjjjj") // past the impact
	term.waitFor(t, "Instances (499 returned, partial")
	for _, r := range cw.Requests() {
		if r.Metrics > 500 {
			t.Errorf("a request returned %d metrics", r.Metrics)
		}
	}
	term.press("q")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// The detail's impact on the local context: the rates come from the same
// /metrics the gauges do, measured as two scrapes apart on the factory's
// clock, and the estimate is over the time the override has left.
func TestDashboardDetailShowsTheImpactWithRates(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	// 25 screenings a minute of the clock's time, whenever it is scraped.
	sandbox := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		minutes := e.Clock.Now().Sub(clitest.Epoch).Minutes()
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, "kosha_breaker_state{dependency=\"screening-sim\",instance=\"gw-1\"} 3\n")
		fmt.Fprintf(w, "# TYPE kosha_tool_calls_total counter\nkosha_tool_calls_total{outcome=\"deferred\",tool=\"screen_entity\"} %v\n", 100+25*minutes)
		fmt.Fprintf(w, "# TYPE kosha_downstream_calls_total counter\nkosha_downstream_calls_total{dependency=\"screening-sim\",outcome=\"circuit_open\"} %v\n", 7+50*minutes)
	}))
	t.Cleanup(sandbox.Close)
	e.WriteConfig(fmt.Sprintf("contexts:\n  local:\n    store:\n      local: {}\n    metrics:\n      prometheus:\n        url: %s/metrics\n", sandbox.URL))
	e.MustRun(0, "breaker", "force-open", "screening-sim", "--reason", "vendor maintenance", "--for", "30m")

	term, ios, _ := newTerminal(t)
	f := e.Factory(ios)
	done := make(chan error, 1)
	go func() { done <- dashboard.Run(context.Background(), f, &dashboard.Options{Interval: time.Minute}) }()
	term.waitFor(t, "screening-sim", "30m tester")
	term.press("jjj\r")
	term.waitFor(t, "Impact     while forced (30m left)", "screen_entity deferred", "call rates: measuring")
	// The first read scrapes twice, 5s apart on the factory's clock: its
	// wait joins the refresh's and the clock's ticks.
	wait.Until(t, "the rate read waits for its second scrape", func() bool { return e.Clock.Waiters() == 3 })
	e.Clock.Advance(metrics.DefaultRateInterval)
	term.waitFor(t, "25 calls/min · about 750 screenings deferred over 29m55s", // 25/min x the 29m55s left
		"call rates: prometheus "+sandbox.URL+"/metrics, counters'", "increase between two scrapes 5s apart, read 0s ago")
	term.press("q")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("dashboard ended with %v", err)
		}
	case <-time.After(wait.Ceiling):
		t.Fatal("q did not end the dashboard")
	}
}
