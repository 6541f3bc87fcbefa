package impact_test

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/dataplane/circuit"
	"github.com/kosha-platform/koshactl/internal/dataplane/sandbox"
	"github.com/kosha-platform/koshactl/internal/dataplane/sandbox/memstore"
	"github.com/kosha-platform/koshactl/internal/impact"
	"github.com/kosha-platform/koshactl/internal/lever/levertest"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// The check, on the reference data plane: a sandbox with traffic,
// screening-sim forced, and the impact read from its /metrics names
// screen_entity, deferred, with a call rate above zero and the screenings
// deferred over the override.
func TestImpactOnTheSandboxWithTraffic(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	cfg := sandbox.DefaultConfig()
	cfg.TimeScale = 20
	cfg.Downstreams, _ = sandbox.Profile(sandbox.ProfileInstant)
	cfg.Profile = sandbox.ProfileInstant
	cfg.Traffic.RPS = 40
	srv, err := sandbox.New(cfg, sandbox.Deps{Store: st, Logger: slog.New(slog.DiscardHandler), ContextName: "test"})
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
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait.Ceiling)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("sandbox shutdown: %v", err)
		}
	})
	if _, _, err := levertest.Force(t.Context(), st, nil, audit.NewLog(st, nil, "test"), levertest.Req{Dependency: impact.ScreeningSim, Reason: "impact", Actor: "t", For: time.Hour}); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, "every instance forced", func() bool {
		for _, in := range srv.Fleet().Instances() {
			if in.BreakerState(sandbox.ScreeningSim) != circuit.ForcedOpen {
				return false
			}
		}
		return true
	})
	src, err := metrics.NewPrometheusRates([]string{srv.URL() + sandbox.PathMetrics}, metrics.PrometheusRateOptions{Interval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var r impact.Report
	wait.Until(t, "screenings counted between two scrapes", func() bool {
		r = impact.Of(t.Context(), impact.Request{Dependencies: []string{impact.ScreeningSim}, For: 30 * time.Minute}, src)
		return len(r.Tools) == 1 && r.Tools[0].CallsPerMinute != nil && *r.Tools[0].CallsPerMinute > 0
	})
	tool := r.Tools[0]
	if tool.Tool != impact.ToolScreenEntity || tool.Behaviour != impact.Deferred || tool.Estimate == nil || tool.Estimate.Calls <= 0 ||
		!strings.HasSuffix(tool.Estimate.Text, "screenings deferred over 30m") || r.Rates.Error != "" {
		t.Errorf("impact %+v, estimate %+v, rates %+v", tool, tool.Estimate, r.Rates)
	}
	if d := r.Dependencies[0]; d.CallsPerMinute == nil || *d.CallsPerMinute <= 0 {
		t.Errorf("screening-sim's calls %v, want the refused calls counted", d.CallsPerMinute)
	}
}
