package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/gauge"
)

func TestHypothesisFailingBeforeRunsNoStep(t *testing.T) {
	e := newEnv(t)
	e.Fleet.Set("openai", gauge.Open)
	out := filepath.Join(t.TempDir(), "cleanup")
	e.Deps.Environ = []string{"OUT=" + out}
	d := parse(t, `
name: not-steady
timeout: 1m
metrics_url: ${env.FLEET}/metrics
hypothesis:
  - breaker: {dependency: openai, state: closed}
steps:
  - breaker.force-open: {dependency: core-api}
rollback:
  - shell: echo cleaned > "$OUT"
`)
	j, log := e.run(context.Background(), d)
	if j.Outcome != drill.OutcomeFailed || j.ExitCode != exitcode.Error {
		t.Fatalf("outcome %s\n%s", j.Outcome, log)
	}
	if j.Steps[0].Status != drill.StatusSkipped || e.Store.Has(breaker.OverrideKey("core-api")) {
		t.Errorf("a step ran although the steady state did not hold: %+v", j.Steps[0])
	}
	if !strings.Contains(j.Reason, "openai: 2 instances: 2 open") {
		t.Errorf("reason = %q", j.Reason)
	}
	if _, err := os.Stat(out); err != nil {
		t.Errorf("the drill-level rollback did not run: %v", err)
	}
	if j.Hypothesis.AfterSkipped == "" || len(j.Hypothesis.After) != 0 {
		t.Errorf("hypothesis after = %+v", j.Hypothesis)
	}
}

func TestHypothesisAfterPollsWithin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		d := parse(t, `
name: recovers
timeout: 1m
metrics_url: ${env.FLEET}/metrics
hypothesis:
  - name: openai closed
    breaker: {dependency: openai, state: closed}
    within: 10s
    interval: 1s
steps:
  - http: {url: "${env.FLEET}/trip?dep=openai", method: POST, expect: {status: 204}}
`)
		go func() {
			// The fleet's breaker recovers 3.5s into the re-check.
			time.Sleep(3500 * time.Millisecond)
			e.Fleet.Set("openai", gauge.Closed)
		}()
		j, log := e.run(context.Background(), d)
		if j.Outcome != drill.OutcomePassed {
			t.Fatalf("outcome %s: %s\n%s", j.Outcome, j.Reason, log)
		}
		after := j.Hypothesis.After[0]
		if !after.OK || after.Checks != 5 {
			t.Errorf("after check = %+v, want it to hold at the 5th check", after)
		}
	})
}
