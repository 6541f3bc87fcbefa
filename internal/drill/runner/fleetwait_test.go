package runner

import (
	"context"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/drill"
)

// wait: true on the breaker steps waits for the gauges with the rule of
// `breaker force-open --wait` and says what they confirmed.
func TestBreakerStepsWaitForTheFleet(t *testing.T) {
	e := newEnv(t)
	d := parse(t, `
name: wait-for-the-fleet
timeout: 1m
metrics_url: ${env.FLEET}/metrics
steps:
  - breaker.force-open: {dependency: openai, wait: true}
  - breaker.clear: {dependency: openai, wait: true}
`)
	j, log := e.run(context.Background(), d)
	if j.Outcome != drill.OutcomePassed {
		t.Fatalf("outcome %s\n%s", j.Outcome, log)
	}
	if got := j.Steps[0].Detail; !strings.Contains(got, "fleet confirmed: forced on 2 of 2 instances") {
		t.Errorf("force-open detail %q", got)
	}
	if got := j.Steps[1].Detail; !strings.Contains(got, "fleet confirmed: released on 2 of 2 instances") {
		t.Errorf("clear detail %q", got)
	}
	// The journal records what the fleet confirmed, for the report.
	for i, goal := range []string{"forced", "released"} {
		f := j.Steps[i].Fleet
		if f == nil || !f.Confirmed || f.Dependency != "openai" || f.Goal != goal || f.Summary != goal+" on 2 of 2 instances" || f.TimeoutSeconds <= 0 {
			t.Errorf("step %d fleet record %+v", i, f)
		}
	}
	if e.store.has(breaker.OverrideKey("openai")) {
		t.Error("override left behind")
	}
	// Without a metrics source there is nothing to wait on: refused.
	e.svc.Gauges = nil
	j, log = e.run(context.Background(), parse(t, `
name: no-gauges
timeout: 1m
steps:
  - breaker.force-open: {dependency: openai, wait: true}
`))
	if j.Outcome == drill.OutcomePassed || !strings.Contains(log, "metrics source to wait on") {
		t.Errorf("outcome %s without gauges\n%s", j.Outcome, log)
	}
}
