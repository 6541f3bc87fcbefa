package gaugeenv_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/gaugeenv"
	"github.com/kosha-platform/koshactl/internal/config"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// On a context whose metrics setting is a Prometheus endpoint, LiveRates
// starts the impact's read before anything asks (the dashboard opening),
// through the context's assessor; on a context that names no source it
// reads nothing and returns no source.
func TestLiveRatesStartsTheReadOnPrometheus(t *testing.T) {
	t.Parallel()
	var scrapes atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		scrapes.Add(1)
		fmt.Fprint(w, "# TYPE kosha_tool_calls_total counter\nkosha_tool_calls_total{outcome=\"ok\",tool=\"screen_entity\"} 1\n")
	}))
	t.Cleanup(srv.Close)
	env := &cmdenv.Env{Name: "local", Clock: clocktest.NewFake(time.Date(2026, 12, 7, 17, 0, 0, 0, time.UTC)),
		Context: &config.Context{Metrics: config.MetricsConfig{Prometheus: &config.PrometheusMetrics{URL: srv.URL + "/metrics"}}}}
	env.Impact = gaugeenv.Assessor(env, "")
	src, err := gaugeenv.LiveRates(t.Context(), env, "")
	if err != nil || src == nil {
		t.Fatalf("LiveRates: %v, %v", src, err)
	}
	wait.Until(t, "the read started at opening scrapes", func() bool { return scrapes.Load() >= 1 })

	none := &cmdenv.Env{Name: "local", Context: &config.Context{}}
	none.Impact = gaugeenv.Assessor(none, "")
	if src, err := gaugeenv.LiveRates(t.Context(), none, ""); src != nil || err != nil {
		t.Errorf("a context without a metrics setting: %v, %v; want no source", src, err)
	}
}

// The dashboard reads the sandbox's gauges on a local context that names
// no metrics source: its detail and its changes take their call rates from
// that source too (MeasureImpactAsGauges), where the CLI's levers, which
// read no gauges, read none (Assessor).
func TestTheDashboardsImpactReadsWhatItsGaugesRead(t *testing.T) {
	t.Parallel()
	local := func() *cmdenv.Env {
		return &cmdenv.Env{Name: "local", Clock: clocktest.NewFake(time.Date(2026, 12, 7, 17, 0, 0, 0, time.UTC)), Context: config.BuiltinLocal()}
	}
	cli := local()
	cli.Impact = gaugeenv.Assessor(cli, "")
	if src, err := gaugeenv.LiveRates(t.Context(), cli, ""); src != nil || err != nil {
		t.Errorf("the CLI's assessor on a local context without a metrics setting: %v, %v; want no source", src, err)
	}
	dash := local()
	dash.Impact = gaugeenv.Assessor(dash, "")
	if err := gaugeenv.MeasureImpactAsGauges(dash, ""); err != nil {
		t.Fatal(err)
	}
	if src, err := gaugeenv.LiveRates(t.Context(), dash, ""); src == nil || err != nil {
		t.Errorf("the dashboard's assessor on a local context without a metrics setting: %v, %v; want the sandbox's source", src, err)
	}
}
