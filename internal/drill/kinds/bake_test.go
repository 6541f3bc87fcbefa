package kinds

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/drilltest"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/gauge"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// steps runs d's steps on e in the background, moving the fake clock 5 s
// (a bake's poll) each time a step waits on it; during runs before each
// move.
func bakeSteps(t *testing.T, e *drilltest.Env, clk *clocktest.Fake, d *drill.Drill, during func(move int)) ([]drilltest.StepResult, []drilltest.UndoResult) {
	t.Helper()
	type result struct {
		steps  []drilltest.StepResult
		undone []drilltest.UndoResult
	}
	done := make(chan result, 1)
	rc := e.RunContext(d)
	go func() {
		s, u := e.Steps(context.Background(), rc)
		done <- result{s, u}
	}()
	for move := 1; ; move++ {
		var r result
		ended := false
		wait.Until(t, "the steps to wait on the clock or end", func() bool {
			select {
			case r = <-done:
				ended = true
				return true
			default:
				return clk.Waiters() > 0
			}
		})
		if ended {
			return r.steps, r.undone
		}
		if during != nil {
			during(move)
		}
		clk.Advance(5 * time.Second)
	}
}

// A clear step with bake: the breaker re-opens on both instances, so the
// override is put back (its record naming the clear's) and the step fails
// with exit 15's error; the drill's rollback then undoes the put-back too,
// since the lever's last write is the drill's own.
func TestClearStepBakePutsBackAndTheRollbackUndoesIt(t *testing.T) {
	clk := clocktest.NewFake(time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC))
	e := drilltest.NewEnvClock(t, clk)
	d := drilltest.Parse(t, Builtin(), `
name: bake
timeout: 10m
metrics_url: ${env.FLEET}/metrics
steps:
  - breaker.force-open: {dependency: openai, for: 5m}
  - breaker.clear: {dependency: openai, bake: 2m}
`)
	steps, undone := bakeSteps(t, e, clk, d, func(move int) {
		if move == 2 {
			e.Fleet.Set("openai", gauge.Open)
		}
	})
	if len(steps) != 2 || steps[0].Err != nil {
		t.Fatalf("steps %+v", steps)
	}
	err := steps[1].Err
	if exitcode.Of(err) != exitcode.RolledBack || !strings.Contains(err.Error(), "re-opened on 2 of 2 instances") {
		t.Fatalf("the baked clear: %v (exit %d), want exit 15, re-opened on 2 of 2", err, exitcode.Of(err))
	}
	l, lerr := e.Audit.List(context.Background(), audit.Query{Subject: breaker.OverrideKey("openai")})
	if lerr != nil {
		t.Fatal(lerr)
	}
	var putBack *audit.Record
	for i, r := range l.Records {
		if r.RollbackOf != "" {
			if putBack != nil {
				t.Fatalf("two put-backs: %+v", l.Records)
			}
			putBack = &l.Records[i]
		}
	}
	if putBack == nil || putBack.Action != breaker.ActionForceOpen || putBack.RunID != "test-run" {
		t.Fatalf("records %+v: want one put-back, a force of the run", l.Records)
	}
	var cleared *audit.Record
	for i, r := range l.Records {
		if r.ID == putBack.RollbackOf {
			cleared = &l.Records[i]
		}
	}
	if cleared == nil || cleared.Action != breaker.ActionClear || !strings.Contains(cleared.Reason, "step step-2") {
		t.Errorf("the put-back rolls back %+v, want the clear of step-2", cleared)
	}
	if n := e.Notices(); len(n) != 1 || !strings.HasPrefix(n[0], "ROLLED BACK openai: ") || !strings.Contains(n[0], "rollback of "+putBack.RollbackOf) {
		t.Errorf("live log notices %q, want the put-back announced", n)
	}
	if len(undone) != 1 || undone[0].Err != nil {
		t.Fatalf("rollbacks %+v", undone)
	}
	if e.Store.Has(breaker.OverrideKey("openai")) {
		t.Error("the drill left the put-back override behind")
	}
}

func TestClearStepBakeHeld(t *testing.T) {
	clk := clocktest.NewFake(time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC))
	e := drilltest.NewEnvClock(t, clk)
	d := drilltest.Parse(t, Builtin(), `
name: bake
timeout: 10m
metrics_url: ${env.FLEET}/metrics
steps:
  - breaker.force-open: {dependency: openai, for: 5m}
  - breaker.clear: {dependency: openai, bake: 30s, reopen_share: 0}
`)
	steps, _ := bakeSteps(t, e, clk, d, nil)
	if len(steps) != 2 || steps[1].Err != nil {
		t.Fatalf("steps %+v", steps)
	}
	if o := steps[1].Outputs; o.Public()["baked"] != "held" || !strings.Contains(o.Detail, "the fleet held for 30s") {
		t.Errorf("outputs %+v, want baked held", o)
	}

	// A bake past the drill's deadline is refused before the clear.
	d = drilltest.Parse(t, Builtin(), `
name: too-long
timeout: 1m
metrics_url: ${env.FLEET}/metrics
steps:
  - breaker.force-open: {dependency: openai}
  - breaker.clear: {dependency: openai, bake: 5m}
`)
	steps, _ = bakeSteps(t, e, clk, d, nil)
	if len(steps) != 2 || steps[1].Err == nil || !strings.Contains(steps[1].Err.Error(), "longer than the") {
		t.Errorf("a bake past the deadline: %+v", steps)
	}
}

func TestClearStepBakeDecode(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"{dependency: openai, bake: -1m}", "bake: -1m must be positive"},
		{"{dependency: openai, reopen_share: 0.2}", "reopen_share only applies with bake"},
		{"{dependency: openai, bake: 1m, reopen_share: 1.5}", "not a share from 0"},
	} {
		_, probs := drill.Parse(Builtin(), "t.yaml", []byte("name: x\ntimeout: 5m\nsteps:\n  - breaker.clear: "+tc.src+"\n"))
		if len(probs) == 0 || !strings.Contains(drilltest.Problems(probs), tc.want) {
			t.Errorf("%s: problems %v, want %q", tc.src, probs, tc.want)
		}
	}
}
