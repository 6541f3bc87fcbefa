package kinds

import (
	"context"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/drill/drilltest"
)

// wait: true on the breaker steps waits for the gauges with the rule of
// `breaker force-open --wait` and says what they confirmed.
func TestBreakerStepsWaitForTheFleet(t *testing.T) {
	e := drilltest.NewEnv(t)
	d := drilltest.Parse(t, Builtin(), `
name: wait-for-the-fleet
timeout: 1m
metrics_url: ${env.FLEET}/metrics
steps:
  - breaker.force-open: {dependency: openai, wait: true}
  - breaker.clear: {dependency: openai, wait: true}
`)
	steps, _ := e.Steps(context.Background(), e.RunContext(d))
	if len(steps) != 2 || steps[0].Err != nil || steps[1].Err != nil {
		t.Fatalf("steps %+v", steps)
	}
	if got := steps[0].Outputs.Detail; !strings.Contains(got, "fleet confirmed: forced on 2 of 2 instances") {
		t.Errorf("force-open detail %q", got)
	}
	if got := steps[1].Outputs.Detail; !strings.Contains(got, "fleet confirmed: released on 2 of 2 instances") {
		t.Errorf("clear detail %q", got)
	}
	// The step says what the fleet confirmed, for the journal and the report.
	for i, goal := range []string{"forced", "released"} {
		f := steps[i].Outputs.Fleet
		if f == nil || !f.Confirmed || f.Dependency != "openai" || f.Goal != goal || f.Summary != goal+" on 2 of 2 instances" || f.TimeoutSeconds <= 0 {
			t.Errorf("step %d fleet record %+v", i, f)
		}
	}
	if e.Store.Has(breaker.OverrideKey("openai")) {
		t.Error("override left behind")
	}
	// Without a metrics source there is nothing to wait on: refused.
	e.Deps.Gauges = nil
	steps, _ = e.Steps(context.Background(), e.RunContext(drilltest.Parse(t, Builtin(), `
name: no-gauges
timeout: 1m
steps:
  - breaker.force-open: {dependency: openai, wait: true}
`)))
	if err := steps[0].Err; err == nil || !strings.Contains(err.Error(), "metrics source to wait on") {
		t.Errorf("force-open without gauges: %v", err)
	}
}
