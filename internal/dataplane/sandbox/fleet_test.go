package sandbox_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/lever/levertest"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/dataplane/circuit"
	"github.com/kosha-platform/koshactl/internal/dataplane/sandbox"
	"github.com/kosha-platform/koshactl/internal/dataplane/sandbox/memstore"
	"github.com/kosha-platform/koshactl/internal/testutil/syncbuf"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// With a fake clock the override cache's bound is exact: an instance that
// read the store just before the force applies it on the first sync at or
// after one refresh period, never before.
func TestOverridePropagationBound(t *testing.T) {
	t.Parallel()
	clk := clocktest.NewFake(time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC))
	st := memstore.New()
	cfg := sandbox.DefaultConfig() // LLD time: refresh 5 s
	cfg.Instances = 8
	srv, err := sandbox.New(cfg, sandbox.Deps{Store: st, Clock: clk, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	sync := func() {
		for _, in := range srv.Fleet().Instances() {
			in.SyncOverrides(context.Background())
		}
	}
	forced := func() (n int) {
		for _, in := range srv.Fleet().Instances() {
			if in.BreakerState(sandbox.OpenAI) == circuit.ForcedOpen {
				n++
			}
		}
		return n
	}
	sync() // every instance reads (nothing) now
	clk.Advance(time.Second)
	lg := audit.NewLog(st, clk, "test")
	if _, _, err := levertest.Force(context.Background(), st, clk, lg, levertest.Req{Dependency: sandbox.OpenAI, Reason: "drill", Actor: "t", For: time.Hour}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(4*time.Second - time.Nanosecond)
	sync()
	if n := forced(); n != 0 {
		t.Fatalf("%d instances forced 1 ns before the 5 s cache period ended", n)
	}
	clk.Advance(time.Nanosecond)
	sync()
	if n := forced(); n != cfg.Instances {
		t.Fatalf("%d of %d instances forced once the cache period ended", n, cfg.Instances)
	}
	if _, _, err := levertest.Clear(context.Background(), st, clk, lg, sandbox.OpenAI, "t", "drill"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(5 * time.Second)
	sync()
	if n := forced(); n != 0 {
		t.Fatalf("%d instances still forced one period after the clear", n)
	}
}

// Idle instances move too: the fleet's poll applies a force with no traffic.
func TestIdleInstancesApplyOverrides(t *testing.T) {
	t.Parallel()
	h := start(t, testConfig())
	lg := audit.NewLog(h.store, nil, "test")
	if _, _, err := levertest.Force(context.Background(), h.store, nil, lg, levertest.Req{Dependency: sandbox.ScreeningSim, Reason: "drill", Actor: "t", For: time.Hour}); err != nil {
		t.Fatal(err)
	}
	cfg := h.srv.Config()
	start := time.Now()
	wait.Until(t, "every instance forced", func() bool { return allAre(h.states(sandbox.ScreeningSim), 4, 3) })
	took := time.Since(start)
	t.Logf("propagation %s (cache %s)", took, cfg.OverrideRefresh)
	r := h.call(agent, sandbox.ToolGetServiceHealth, nil, "gw-2", nil)
	deps, _ := r.Structured["dependencies"].([]any)
	found := false
	for _, d := range deps {
		m := d.(map[string]any)
		if str(m, "name") == sandbox.ScreeningSim {
			found = str(m, "state") == "forced_open" && str(m, "override_reason") == "drill"
		}
	}
	if !found || str(r.Structured, "status") != "degraded" {
		t.Errorf("health: %v", r.Structured)
	}
}

func TestMetricsExposeEveryInstance(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.Instances = 3
	h := start(t, cfg)
	fams := h.scrape()
	for _, dep := range []string{sandbox.CoreAPI, sandbox.OpenAI, sandbox.ScreeningSim} {
		for i := 1; i <= 3; i++ {
			if v, ok := value(fams, "kosha_breaker_state", map[string]string{"dependency": dep, "instance": sandbox.InstanceName(i)}); !ok || v != 0 {
				t.Errorf("kosha_breaker_state{%s,%s} = %v (present %v), want 0", dep, sandbox.InstanceName(i), v, ok)
			}
		}
	}
	if _, ok := value(fams, "kosha_breaker_state", map[string]string{"dependency": sandbox.Postgres}); ok {
		t.Error("postgres has no breaker (LLD: n/a) but reports a gauge")
	}
	for _, name := range []string{"kosha_downstream_calls_total", "kosha_retries_total", "kosha_shed_total", "kosha_rate_limited_total",
		"kosha_chaos_ignored_total", "kosha_in_flight_requests"} {
		if fams[name] == nil {
			t.Errorf("%s missing from /metrics", name)
		}
	}
	// The Go and process collectors came with client_golang, whose init
	// every koshactl command paid for; nothing read them.
	for name := range fams {
		if !strings.HasPrefix(name, "kosha_") {
			t.Errorf("/metrics serves %s: the sandbox serves only its kosha_* families", name)
		}
	}
	h.call(agent, sandbox.ToolSearchKnowledgeBase, map[string]any{"query": "refund"}, "", nil)
	fams = h.scrape()
	for _, dep := range []string{sandbox.CoreAPI, sandbox.OpenAI, sandbox.Postgres} {
		if v, _ := value(fams, "kosha_downstream_calls_total", map[string]string{"dependency": dep, "outcome": "success"}); v != 1 {
			t.Errorf("one search: %s successes %v, want 1", dep, v)
		}
	}
	if v, _ := value(fams, "kosha_tool_calls_total", map[string]string{"tool": sandbox.ToolSearchKnowledgeBase, "outcome": "ok"}); v != 1 {
		t.Errorf("kosha_tool_calls_total{search,ok} = %v", v)
	}
}

func TestRetriesAreCountedPerDependency(t *testing.T) {
	t.Parallel()
	h := start(t, testConfig())
	sim, _ := h.srv.Sim(sandbox.ScreeningSim)
	for _, bad := range []sandbox.Knob{{P: 1}, {Fault: chaos.FaultError, P: 0}, {Fault: chaos.FaultLatency, P: 1},
		{Fault: chaos.FaultError, Ms: 5, P: 1}} {
		if err := sim.SetKnob(bad); !errors.Is(err, sandbox.ErrInvalidKnob) {
			t.Errorf("SetKnob(%+v) = %v, want ErrInvalidKnob", bad, err)
		}
	}
	if err := sim.SetKnob(sandbox.Knob{Fault: chaos.FaultError, P: 1}); err != nil {
		t.Fatal(err)
	}
	h.call(agent, sandbox.ToolScreenEntity, map[string]any{"name": "Ada"}, "", nil)
	fams := h.scrape()
	if v, _ := value(fams, "kosha_retries_total", map[string]string{"dependency": sandbox.ScreeningSim}); v != 1 {
		t.Errorf("screening-sim retries %v, want 1 (2 attempts)", v)
	}
	if v, _ := value(fams, "kosha_downstream_calls_total", map[string]string{"dependency": sandbox.ScreeningSim, "outcome": "error"}); v != 1 {
		t.Errorf("screening-sim error calls %v, want 1 logical call", v)
	}
}

func TestEMFLines(t *testing.T) {
	t.Parallel()
	var buf syncbuf.Buffer
	cfg := testConfig()
	cfg.Instances = 2
	h := start(t, cfg, func(d *sandbox.Deps) { d.EMF = &buf })
	lg := audit.NewLog(h.store, nil, "test")
	if _, _, err := levertest.Force(context.Background(), h.store, nil, lg, levertest.Req{Dependency: sandbox.CoreAPI, Reason: "drill", Actor: "t", For: time.Hour}); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, "a forced EMF line per instance", func() bool {
		n := 0
		for line := range strings.Lines(buf.String()) {
			if strings.Contains(line, `"breaker_state":3`) && strings.Contains(line, `"dependency":"core-api"`) {
				n++
			}
		}
		return n >= 2
	})
	sc := bufio.NewScanner(strings.NewReader(buf.String()))
	frozenLines := 0
	for sc.Scan() {
		var line struct {
			AWS struct {
				Timestamp         int64
				CloudWatchMetrics []struct {
					Namespace  string
					Dimensions [][]string
					Metrics    []struct{ Name, Unit string }
				}
			} `json:"_aws"`
			Dependency, Service, Instance string
			BreakerState                  *int `json:"breaker_state"`
			ChaosFrozen                   *int `json:"chaos_frozen"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("EMF line is not JSON: %v\n%s", err, sc.Text())
		}
		cw := line.AWS.CloudWatchMetrics
		if line.ChaosFrozen != nil {
			// The freeze gauge: one series per instance, no dependency; the
			// fleet set is the service's (docs/contracts/freeze.md).
			if len(cw) != 1 || cw[0].Metrics[0].Name != "chaos_frozen" || *line.ChaosFrozen != 0 || line.Dependency != "" ||
				!reflect.DeepEqual(cw[0].Dimensions, [][]string{{"service"}}) || !strings.HasPrefix(line.Instance, "gw-") {
				t.Fatalf("malformed chaos_frozen line: %s", sc.Text())
			}
			frozenLines++
			continue
		}
		if line.AWS.Timestamp == 0 || len(cw) != 1 || cw[0].Namespace != "Kosha/Resilience" || len(cw[0].Metrics) != 1 ||
			cw[0].Metrics[0].Name != "breaker_state" || line.BreakerState == nil || line.Service != "mcp-gateway" ||
			!strings.HasPrefix(line.Instance, "gw-") || line.Dependency == "" {
			t.Fatalf("malformed EMF line: %s", sc.Text())
		}
		// The fleet sets only: the instance is a log property, not a
		// dimension (one custom metric per dependency, not per instance).
		want := [][]string{{"dependency"}, {"dependency", "service"}}
		if !reflect.DeepEqual(cw[0].Dimensions, want) {
			t.Fatalf("dimension sets %v, want %v", cw[0].Dimensions, want)
		}
	}
	if frozenLines < 2 {
		t.Errorf("%d chaos_frozen lines, want one per instance at least", frozenLines)
	}
}

func TestTrafficGeneratorDrivesTheFleet(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.Traffic.RPS = 200
	h := start(t, cfg)
	if st := h.srv.Status(); st.Traffic.Clients != 267 {
		t.Errorf("auto clients for 200 rps at 1 token/s: %d, want 267 (each under 75%% of its refill)", st.Traffic.Clients)
	}
	wait.Until(t, "traffic on every instance", func() bool {
		for _, in := range h.srv.Fleet().Instances() {
			if in.Served() < 5 {
				return false
			}
		}
		return true
	})
	fams := h.scrape()
	if v, _ := value(fams, "kosha_rate_limited_total", nil); v != 0 {
		t.Errorf("synthetic clients were rate limited %v times", v)
	}
	if v, _ := value(fams, "kosha_tool_calls_total", map[string]string{"tool": sandbox.ToolSearchKnowledgeBase}); v == 0 {
		t.Error("the mix's most common tool was never called")
	}
}
