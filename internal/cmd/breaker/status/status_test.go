package status_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/kosha-platform/koshactl/internal/lever/builtin"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/kosha-platform/koshactl/internal/cmd/breaker/status"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/config"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/metrics/cwfake"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/syncbuf"
)

// sandbox serves kosha_breaker_state as the sandbox will.
type sandbox struct {
	mu   sync.Mutex
	text string
	srv  *httptest.Server
}

func newSandbox(t *testing.T, text string) *sandbox {
	s := &sandbox{text: text}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, s.text)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *sandbox) set(text string) {
	s.mu.Lock()
	s.text = text
	s.mu.Unlock()
}

func (s *sandbox) url() string { return s.srv.URL + "/metrics" }

const fleet = `kosha_breaker_state{dependency="openai",instance="gw-1"} 3
kosha_breaker_state{dependency="openai",instance="gw-2"} 3
kosha_breaker_state{dependency="postgres",instance="gw-1"} 2
kosha_breaker_state{dependency="postgres",instance="gw-2"} 0
kosha_breaker_state{dependency="core-api",instance="gw-1"} 0
kosha_breaker_state{dependency="core-api",instance="gw-2"} 0
`

// localWithSandbox writes a config whose local context scrapes sb.
func localWithSandbox(e *clitest.Env, sb *sandbox, extra string) {
	e.WriteConfig(fmt.Sprintf("contexts:\n  local:\n    store:\n      local: {}\n%s    metrics:\n      prometheus:\n        url: %s\n", extra, sb.url()))
}

func decode(t *testing.T, s string) status.Result {
	t.Helper()
	var r status.Result
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, s)
	}
	return r
}

func dep(t *testing.T, r status.Result, name string) status.DependencyView {
	t.Helper()
	for _, d := range r.Dependencies {
		if d.Dependency == name {
			return d
		}
	}
	t.Fatalf("no %s in %+v", name, r.Dependencies)
	return status.DependencyView{}
}

func TestStatusMergesOverridesAndGauges(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	sb := newSandbox(t, fleet)
	localWithSandbox(e, sb, "")
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "provider incident", "--for", "30m")

	r := e.MustRun(0, "breaker", "status")
	for _, want := range []string{
		"context local · store sqlite",
		"DEPENDENCY     STATE    GAUGES   FLEET      WORST   BEST    INSTANCES  OVERRIDE",
		"core-api       closed   closed   -          closed  closed  2/2        -",
		"openai         forced   forced   confirmed  forced  forced  2/2        tester@test, expires 2026-11-29T19:30:00Z: provider incident",
		"postgres       mixed    mixed    -          open    closed  2/2        -",
		"screening-sim  no data  no data  -          -       -       -          -",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, r.Stdout)
		}
	}

	res := decode(t, e.MustRun(0, "breaker", "status", "-o", "json").Stdout)
	if res.Kind != "BreakerStatus" || res.Context != "local" || !res.Store.OK || !res.Gauges.OK || res.Gauges.Requests != 1 ||
		res.Gauges.Source != "prometheus "+sb.url() || res.GeneratedAt != "2026-11-29T19:00:00.000Z" {
		t.Errorf("result header = %+v", res)
	}
	o := dep(t, res, "openai")
	if o.State.String() != "forced_open" || o.GaugeState.String() != "forced_open" || o.Override == nil || o.Override.Actor != "tester@test" ||
		*o.Gauges.Worst != "forced_open" || o.Gauges.InstancesReporting != 2 || len(o.Instances) != 2 || o.Instances[0].Instance != "gw-1" {
		t.Errorf("openai = %+v", o)
	}
	p := dep(t, res, "postgres")
	if p.State.String() != "mixed" || *p.Gauges.Max != 2 || *p.Gauges.Min != 0 || p.Gauges.ByState["open"] != 1 || p.Gauges.ByState["closed"] != 1 {
		t.Errorf("postgres = %+v", p)
	}
	if len(p.Timeline) != 0 {
		t.Error("timeline printed without --timeline")
	}

	res = decode(t, e.MustRun(0, "breaker", "status", "postgres", "--timeline", "-o", "json").Stdout)
	if len(res.Dependencies) != 1 || len(res.Dependencies[0].Timeline) != 1 || res.Dependencies[0].Timeline[0].Samples != 2 {
		t.Errorf("filtered with timeline = %+v", res.Dependencies)
	}
	if y := e.MustRun(0, "breaker", "status", "-o", "yaml").Stdout; !strings.Contains(y, "kind: BreakerStatus") || !strings.Contains(y, "gauge_state: mixed") {
		t.Errorf("yaml:\n%s", y)
	}
}

func TestStatusNotesWhereStoreAndGaugesDisagree(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	sb := newSandbox(t, fleet)
	localWithSandbox(e, sb, "")
	e.MustRun(0, "breaker", "force-open", "postgres", "--reason", "db failover", "--for", "1h")
	e.Clock.Advance(10 * time.Minute)
	r := e.MustRun(0, "breaker", "status")
	if !strings.Contains(r.Stdout, "note: postgres: override active for 10m but 2 of 2 instances do not report forced") {
		t.Errorf("no note about the instances ignoring the override:\n%s", r.Stdout)
	}
	if !strings.Contains(r.Stdout, "note: openai: gauges report forced but no override is active") {
		t.Errorf("no note about gauges forced without override:\n%s", r.Stdout)
	}
}

func TestStatusWithAFailingSourcePrintsWhatItHasAndExits5(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	sb := newSandbox(t, fleet)
	localWithSandbox(e, sb, "")
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "provider incident")
	sb.srv.Close()
	r := e.MustRun(exitcode.Unavailable, "breaker", "status", "-o", "json")
	res := decode(t, r.Stdout)
	if res.Gauges.OK || res.Gauges.Error == nil || !strings.Contains(*res.Gauges.Error, "metrics source unavailable") || !res.Store.OK {
		t.Errorf("sources = %+v / %+v", res.Store, res.Gauges)
	}
	if o := dep(t, res, "openai"); o.State.String() != "forced_open" || o.GaugeState.String() != "no_data" {
		t.Errorf("openai without gauges = %s / %s, want the override's forced", o.State, o.GaugeState)
	}
	if !strings.Contains(r.Stderr, "status is incomplete: gauges:") {
		t.Errorf("stderr = %q", r.Stderr)
	}
	r = e.MustRun(exitcode.Unavailable, "breaker", "status")
	if !strings.Contains(r.Stdout, "! gauges unavailable, fleet state unknown") {
		t.Errorf("table does not say the gauges are missing:\n%s", r.Stdout)
	}
}

func TestStatusCheck(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	sb := newSandbox(t, "kosha_breaker_state{dependency=\"openai\",instance=\"gw-1\"} 0\n")
	localWithSandbox(e, sb, "    dependencies: [openai]\n")
	e.MustRun(0, "breaker", "status", "--check")
	sb.set("kosha_breaker_state{dependency=\"openai\",instance=\"gw-1\"} 1\n")
	r := e.MustRun(exitcode.Error, "breaker", "status", "--check")
	if !strings.Contains(r.Stderr, "check failed: openai is half-open") {
		t.Errorf("stderr = %q", r.Stderr)
	}
}

func TestStatusArgumentsAndFlags(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	sb := newSandbox(t, fleet)
	localWithSandbox(e, sb, "")
	r := e.MustRun(exitcode.Usage, "breaker", "status", "open-ai")
	if !strings.Contains(r.Stderr, `did you mean "openai"?`) {
		t.Errorf("stderr = %q", r.Stderr)
	}
	e.MustRun(exitcode.Usage, "breaker", "status", "--metrics-url", "127.0.0.1:8787/metrics")
	e.MustRun(exitcode.Usage, "breaker", "status", "--watch", "--interval", "100ms")
	e.MustRun(exitcode.Usage, "breaker", "status", "-o", "xml")

	other := newSandbox(t, "kosha_breaker_state{dependency=\"openai\",instance=\"other-1\"} 2\n")
	res := decode(t, e.MustRun(0, "breaker", "status", "openai", "--metrics-url", other.url(), "-o", "json").Stdout)
	if o := dep(t, res, "openai"); len(o.Instances) != 1 || o.Instances[0].Instance != "other-1" {
		t.Errorf("--metrics-url ignored: %+v", o.Instances)
	}

	var got *status.Options
	cmd := status.NewCmd(&cmdenv.Factory{}, func(_ context.Context, o *status.Options) error { got = o; return nil })
	cmd.SetArgs([]string{"openai", "-w", "--interval", "30s", "-o", "json", "--timeline", "--check"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !got.Watch || got.Interval != 30*time.Second || got.Output != "json" || !got.Timeline || !got.Check || got.Dependencies[0] != "openai" {
		t.Errorf("options = %+v", got)
	}
}

func TestStatusWatchPrintsJSONLinesUntilInterrupted(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	sb := newSandbox(t, fleet)
	localWithSandbox(e, sb, "")
	out, errOut := &syncbuf.Buffer{}, &syncbuf.Buffer{}
	f := e.Factory(&iostreams.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waiting := make(chan time.Duration)
	tick := make(chan time.Time)
	opts := &status.Options{Watch: true, Interval: 15 * time.Second, Output: "json",
		After: func(d time.Duration) <-chan time.Time { waiting <- d; return tick }}
	done := make(chan error, 1)
	go func() { done <- status.Run(ctx, f, opts) }()

	if d := <-waiting; d != 15*time.Second {
		t.Errorf("waited %s, want the interval", d)
	}
	sb.set(strings.ReplaceAll(fleet, `dependency="postgres",instance="gw-1"} 2`, `dependency="postgres",instance="gw-1"} 0`))
	e.Clock.Advance(15 * time.Second)
	tick <- e.Clock.Now()
	<-waiting
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("watch ended with %v, want nil on interrupt", err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 JSON lines, got %d:\n%s", len(lines), out.String())
	}
	first, second := decode(t, lines[0]), decode(t, lines[1])
	if dep(t, first, "postgres").State.String() != "mixed" || dep(t, second, "postgres").State.String() != "closed" {
		t.Errorf("postgres: %s then %s, want mixed then closed", dep(t, first, "postgres").State, dep(t, second, "postgres").State)
	}
	if first.GeneratedAt == second.GeneratedAt {
		t.Error("both lines carry the same time")
	}
}

func TestStatusOnCloudWatch(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	cw := cwfake.New(t)
	for i, v := range []float64{2, 2, 0} {
		cw.Put("openai", fmt.Sprintf("gw-%d", i+1), clitest.Epoch.Add(-30*time.Second), v)
	}
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "kosha.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	out, errOut := &syncbuf.Buffer{}, &syncbuf.Buffer{}
	ios := &iostreams.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut}
	env := &cmdenv.Env{Name: "prod", Store: st, Clock: e.Clock,
		Context: &config.Context{Dependencies: []string{"openai"}, Metrics: config.MetricsConfig{CloudWatch: &config.CloudWatchMetrics{EndpointURL: cw.URL}}},
		Actor:   func(context.Context) (string, error) { return "tester@test", nil },
		AWSConfig: func(context.Context) (aws.Config, error) {
			return aws.Config{Region: "eu-west-1", RetryMaxAttempts: 1, HTTPClient: cw.HTTPClient(),
				Credentials: credentials.NewStaticCredentialsProvider("AKIDFAKE", "fake", "")}, nil
		}}
	env.Kinds = builtin.For(st, e.Clock, env.Name, env.Context)
	f := &cmdenv.Factory{IOStreams: ios, Clock: e.Clock, Env: func(context.Context) (*cmdenv.Env, error) { return env, nil }}

	if err := status.Run(context.Background(), f, &status.Options{Output: "json"}); err != nil {
		t.Fatal(err)
	}
	res := decode(t, out.String())
	o := dep(t, res, "openai")
	if res.Gauges.Source != "cloudwatch Kosha/Resilience (eu-west-1)" || res.Gauges.Requests != 1 || cw.Calls() != 1 || res.Gauges.Metrics != 3 {
		t.Errorf("gauges = %+v after %d calls", res.Gauges, cw.Calls())
	}
	if o.State.String() != "mixed" || *o.Gauges.Worst != "open" || *o.Gauges.Best != "closed" || o.Gauges.Samples != 3 ||
		o.Gauges.InstancesReporting != 0 || o.Gauges.Breakdown != metrics.BreakdownNotFetched {
		t.Errorf("openai = %+v, want the fleet's view without a breakdown", o)
	}

	// --instances reads the breakdown too: one more request.
	mark := len(out.String())
	if err := status.Run(context.Background(), f, &status.Options{Output: "json", Instances: true}); err != nil {
		t.Fatal(err)
	}
	res = decode(t, out.String()[mark:])
	if o = dep(t, res, "openai"); res.Gauges.Requests != 2 || o.Gauges.InstancesReporting != 3 || o.Gauges.Breakdown != metrics.BreakdownComplete || len(o.Instances) != 3 {
		t.Errorf("with --instances: %d requests, openai %+v", res.Gauges.Requests, o.Gauges)
	}

	// Watching CloudWatch every 10 s warns what it costs.
	ctx, cancel := context.WithCancel(context.Background())
	opts := &status.Options{Watch: true, Interval: 10 * time.Second, Output: "json",
		After: func(time.Duration) <-chan time.Time { cancel(); return make(chan time.Time) }}
	if err := status.Run(ctx, f, opts); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut.String(), "warning: GetMetricData is billed per metric requested: refreshing every 10s requests 3 metrics") {
		t.Errorf("stderr = %q", errOut.String())
	}
}

// cloudWatchEnv runs status against cw as a production context knowing deps.
func cloudWatchEnv(t *testing.T, e *clitest.Env, cw *cwfake.Server, deps []string) (*cmdenv.Factory, *syncbuf.Buffer, *syncbuf.Buffer) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "kosha.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	out, errOut := &syncbuf.Buffer{}, &syncbuf.Buffer{}
	ios := &iostreams.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut}
	env := &cmdenv.Env{Name: "prod", Store: st, Clock: e.Clock,
		Context: &config.Context{Dependencies: deps, Metrics: config.MetricsConfig{CloudWatch: &config.CloudWatchMetrics{EndpointURL: cw.URL}}},
		Actor:   func(context.Context) (string, error) { return "tester@test", nil },
		AWSConfig: func(context.Context) (aws.Config, error) {
			return aws.Config{Region: "eu-west-1", RetryMaxAttempts: 1, HTTPClient: cw.HTTPClient(),
				Credentials: credentials.NewStaticCredentialsProvider("AKIDFAKE", "fake", "")}, nil
		}}
	env.Kinds = builtin.For(st, e.Clock, env.Name, env.Context)
	return &cmdenv.Factory{IOStreams: ios, Clock: e.Clock, Env: func(context.Context) (*cmdenv.Env, error) { return env, nil }}, out, errOut
}

// putFleet publishes, 30 s before the test's clock, one value per instance
// i-000 … for each dependency: 0, except open for the instances listed.
func putFleet(cw *cwfake.Server, deps []string, instances int, open map[string]string) {
	for _, d := range deps {
		for i := range instances {
			inst := fmt.Sprintf("i-%03d", i)
			v := 0.0
			if open[d] == inst {
				v = 2
			}
			cw.Put(d, inst, clitest.Epoch.Add(-30*time.Second), v)
		}
	}
}

// The measurement: 4 dependencies × 300 instances, one openai
// instance open. The fleet's Maximum is 2; CloudWatch truncates what a
// SEARCH returns past 500 metrics, and the open instance is among the series
// cut. Worst must still say open.
func TestStatusOnCloudWatchTakesWorstFromTheFleetNotATruncatedInstanceSet(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	cw := cwfake.New(t)
	deps := []string{"core-api", "openai", "postgres", "redis"}
	putFleet(cw, deps, 300, map[string]string{"openai": "i-299"})
	f, out, _ := cloudWatchEnv(t, e, cw, deps)
	if err := status.Run(context.Background(), f, &status.Options{Output: "json"}); err != nil {
		t.Fatal(err)
	}
	o := dep(t, decode(t, out.String()), "openai")
	if o.State.String() != "mixed" || o.Gauges.Worst == nil || *o.Gauges.Worst != "open" || *o.Gauges.Max != 2 || *o.Gauges.Best != "closed" {
		t.Errorf("openai: state %s, gauges %+v; want mixed, worst open (fleet Maximum 2), best closed", o.State, o.Gauges)
	}
	for _, r := range cw.Requests() {
		if r.Truncated {
			t.Errorf("a request asked for more than 500 metrics (%d queries)", len(r.Queries))
		}
	}
}

// At 20 dependencies x 300 instances, one openai instance open, and Lambda's
// churn (300 more instances reported earlier in the hour): worst comes from
// the fleet, and --instances reads a breakdown CloudWatch truncates (600
// series for openai), marked partial in the JSON and the table.
func TestStatusOnCloudWatchAtTwentyByThreeHundred(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	cw := cwfake.New(t)
	deps := []string{"openai"}
	for i := range 19 {
		deps = append(deps, fmt.Sprintf("tool-%02d", i))
	}
	putFleet(cw, deps, 300, map[string]string{"openai": "i-299"})
	for i := range 300 {
		// Recycled execution environments: names that sort first, so the
		// truncated SEARCH keeps them and drops the open instance.
		cw.Put("openai", fmt.Sprintf("a-%03d", i), clitest.Epoch.Add(-30*time.Minute), 0)
	}
	f, out, _ := cloudWatchEnv(t, e, cw, deps)

	if err := status.Run(context.Background(), f, &status.Options{Output: "json"}); err != nil {
		t.Fatal(err)
	}
	res := decode(t, out.String())
	o := dep(t, res, "openai")
	if res.Gauges.Requests != 1 || res.Gauges.Metrics != 60 || *o.Gauges.Worst != "open" || o.State.String() != "mixed" {
		t.Errorf("without --instances: %d requests, %d metrics, openai %s worst %s", res.Gauges.Requests, res.Gauges.Metrics, o.State, *o.Gauges.Worst)
	}

	mark := len(out.String())
	if err := status.Run(context.Background(), f, &status.Options{Output: "json", Instances: true}); err != nil {
		t.Fatal(err)
	}
	res = decode(t, out.String()[mark:])
	o = dep(t, res, "openai")
	if *o.Gauges.Worst != "open" || *o.Gauges.Max != 2 || o.Gauges.Breakdown != metrics.BreakdownPartial || o.Gauges.ByState["open"] != 0 ||
		len(o.Instances) != 499 || !strings.Contains(strings.Join(o.Notes, " "), "partial") {
		t.Errorf("openai with --instances: worst %s, breakdown %s, %d instances, notes %q; want open from the fleet, a partial breakdown of 499",
			*o.Gauges.Worst, o.Gauges.Breakdown, len(o.Instances), o.Notes)
	}
	if t1 := dep(t, res, "tool-01"); t1.Gauges.Breakdown != metrics.BreakdownComplete || t1.Gauges.InstancesReporting != 300 {
		t.Errorf("tool-01 = %+v, want a complete breakdown of 300", t1.Gauges)
	}
	for _, r := range cw.Requests() {
		if r.Metrics > 500 {
			t.Errorf("a request returned %d metrics", r.Metrics)
		}
	}

	mark = len(out.String())
	if err := status.Run(context.Background(), f, &status.Options{Output: "table", Instances: true, Dependencies: []string{"openai"}}); err != nil {
		t.Fatal(err)
	}
	table := out.String()[mark:]
	for _, want := range []string{"openai      mixed  mixed   -      open   closed  199/499 of ~300 (partial)", "note: openai: per-instance breakdown is partial",
		"MaxMetricsExceeded: Maximum number of allowed metrics exceeded"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}
