package metrics_test

import (
	"context"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/chaos/chaostest"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/dataplane/sandbox"
	"github.com/kosha-platform/koshactl/internal/dataplane/sandbox/memstore"
	"github.com/kosha-platform/koshactl/internal/freeze/freezetest"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

const frozenText = `# TYPE kosha_chaos_frozen gauge
kosha_chaos_frozen{instance="gw-1"} 1
kosha_chaos_frozen{instance="gw-2"} 0
kosha_chaos_frozen{instance="gw-3"} 1
kosha_chaos_frozen{instance="gw-4"} NaN
kosha_chaos_frozen{instance="gw-5"} 1
kosha_chaos_frozen{instance="gw-5"} 1
# TYPE kosha_breaker_state gauge
kosha_breaker_state{dependency="openai",instance="gw-9"} 3
`

// A freeze is confirmed when every instance reporting the gauge reads 1,
// its lift when every one reads 0; the others are named, as stragglers or,
// for a value that is no answer, as unknown.
func TestJudgeFreezeNamesTheInstancesThatDoNotObey(t *testing.T) {
	t.Parallel()
	_, url := serveMetrics(t, frozenText)
	p, err := metrics.NewPrometheus([]string{url}, metrics.PrometheusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vals, err := p.FreezeGauges(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := vals["gw-9"]; ok || len(vals) != 5 {
		t.Fatalf("read %v: want the five instances of kosha_chaos_frozen, nothing of another metric", vals)
	}
	s := metrics.JudgeFreeze(vals, true)
	if s.Confirmed() {
		t.Error("a fleet with an unfrozen instance confirmed the freeze")
	}
	if got := s.Summary(); got != "frozen on 2 of 5 instances (not frozen: gw-2; unknown: gw-4 reports NaN, neither 0 nor 1; gw-5 reports 2 series)" {
		t.Errorf("summary %q", got)
	}
	lift := metrics.JudgeFreeze(map[string][]float64{"gw-1": {0}, "gw-2": {1}}, false)
	if lift.Confirmed() || lift.Summary() != "unfrozen on 1 of 2 instances (still frozen: gw-2)" {
		t.Errorf("lift: %+v %q", lift, lift.Summary())
	}
	if metrics.JudgeFreeze(nil, true).Confirmed() {
		t.Error("no instance at all confirmed a freeze")
	}
	if !metrics.JudgeFreeze(map[string][]float64{"gw-1": {1}, "gw-2": {1}}, true).Confirmed() {
		t.Error("every instance frozen did not confirm")
	}
}

// Against the sandbox: a freeze written to its store is confirmed by a
// scrape on every instance that obeys the store, and the one that ignores
// it is named.
func TestFreezeGaugesOfTheSandbox(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	key, err := chaos.NewKey([]byte("a freeze test key of 32 bytes!!!"))
	if err != nil {
		t.Fatal(err)
	}
	ks, _ := chaostest.NewKeySet(key)
	cfg := sandbox.DefaultConfig()
	cfg.TimeScale, cfg.ChaosEnabled, cfg.Instances, cfg.IgnoreOverrides = 20, true, 3, []int{2}
	cfg.Downstreams, _ = sandbox.Profile(sandbox.ProfileInstant)
	cfg.Profile = sandbox.ProfileInstant
	log := audit.NewLog(st, clock.Real{}, "test")
	srv, err := sandbox.New(cfg, sandbox.Deps{Store: st, Keys: ks, Audit: log, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(t.Context(), ln); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	p, err := metrics.NewPrometheus([]string{srv.URL() + sandbox.PathMetrics}, metrics.PrometheusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	judge := func(want bool) metrics.FreezeStanding {
		vals, err := p.FreezeGauges(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return metrics.JudgeFreeze(vals, want)
	}
	if s := judge(false); !s.Confirmed() {
		t.Fatalf("before any freeze: %s", s.Summary())
	}
	freezetest.Set(t, st, log, "alice@laptop", "incident", "INC-5", time.Now(), 0)
	var s metrics.FreezeStanding
	wait.Until(t, "the obeying instances report the freeze", func() bool {
		s = judge(true)
		return len(s.Obeying) == 2
	})
	if s.Confirmed() || s.Summary() != "frozen on 2 of 3 instances (not frozen: gw-2)" {
		t.Errorf("with gw-2 ignoring the store: %s", s.Summary())
	}
}
