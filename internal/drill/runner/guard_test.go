package runner

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/kinds"
	"github.com/kosha-platform/koshactl/internal/exitcode"
)

// A stop condition that cannot be evaluated refuses the run before any
// lever is pulled (it used to be a notice, and the drill went on blind):
// one line naming the condition, the cause and the fix, exit 5, no lever,
// no rollback, no audit record.
func TestPreflightRefusesAStopConditionThatCannotBeEvaluated(t *testing.T) {
	e := newEnv(t)
	d := parse(t, `
name: blind
timeout: 1m
metrics_url: ${env.FLEET}/no-such-path
stop_conditions:
  - name: core-api open
    breaker: {dependency: core-api, state: open}
rollback:
  - shell: "touch must-not-run"
steps:
  - breaker.force-open: {dependency: openai}
`)
	j, log := e.run(context.Background(), d)
	if j.Outcome != drill.OutcomeRefused || j.ExitCode != exitcode.Unavailable {
		t.Fatalf("outcome %s exit %d: %s\n%s", j.Outcome, j.ExitCode, j.Reason, log)
	}
	for _, want := range []string{`stop condition "core-api open" could not be evaluated`, "404", "check that the source is reachable", "nothing was done"} {
		if !strings.Contains(j.Reason, want) {
			t.Errorf("reason lacks %q: %s", want, j.Reason)
		}
	}
	if strings.Contains(j.Reason, "\n") {
		t.Errorf("reason is not one line: %q", j.Reason)
	}
	if g := j.Guard; g == nil || g.Phase != drill.GuardPreflight || g.Role != drill.RoleStopCondition || g.Condition != "core-api open" || g.Fix == "" {
		t.Errorf("guard = %+v", j.Guard)
	}
	if e.Store.Has(breaker.OverrideKey("openai")) || len(j.Rollbacks) != 0 || len(e.auditRecords()) != 0 {
		t.Errorf("a refused run acted: rollbacks %+v, audit %+v", j.Rollbacks, e.auditRecords())
	}
	if j.Steps[0].Status != drill.StatusSkipped || len(j.Preflight) != 1 || j.Preflight[0].OK {
		t.Errorf("steps %+v preflight %+v", j.Steps, j.Preflight)
	}
	x, err := JUnit(j)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(x), `name="outcome" value="refused"`) || !strings.Contains(string(x), `type="preflight"`) ||
		!strings.Contains(string(x), `<testcase name="stop condition &#34;core-api open&#34;" classname="drill.blind.preflight"`) {
		t.Errorf("JUnit does not say refused at preflight, naming the guard by its role:\n%s", x)
	}
}

// Issue 21: a drill whose metrics source does not answer waited out its
// hypothesis (60 s) and exited 1. The preflight names the source, gives
// the sandbox hint for a source on this machine, and exits 5 at once.
func TestPreflightRefusesAnUnreachableHypothesisSource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.Fleet.SetMetricsDown(true)
		d := parse(t, `
name: no-sandbox
timeout: 3m
metrics_url: http://127.0.0.1:8787/metrics
hypothesis:
  - name: openai closed
    breaker: {dependency: openai, state: closed}
    within: 30s
steps:
  - breaker.force-open: {dependency: openai}
`)
		start := time.Now()
		j, log := e.run(context.Background(), d)
		if j.Outcome != drill.OutcomeRefused || j.ExitCode != exitcode.Unavailable || time.Since(start) > time.Second {
			t.Fatalf("outcome %s exit %d after %s: %s\n%s", j.Outcome, j.ExitCode, time.Since(start), j.Reason, log)
		}
		for _, want := range []string{`hypothesis check "openai closed" could not be evaluated`, "prometheus http://127.0.0.1:8787/metrics", "is the sandbox running?"} {
			if !strings.Contains(j.Reason, want) {
				t.Errorf("reason lacks %q: %s", want, j.Reason)
			}
		}
		if len(j.Hypothesis.Before) != 0 || e.Store.Has(breaker.OverrideKey("openai")) {
			t.Errorf("a refused run went on: %+v", j.Hypothesis.Before)
		}
	})
}

const lostDrill = `
name: lost
timeout: 10m
poll_interval: 100ms
%GRACE%
metrics_url: ${env.FLEET}/metrics
stop_conditions:
  - name: core-api open
    breaker: {dependency: core-api, state: open}
%ONERROR%
steps:
  - id: force
    breaker.force-open: {dependency: openai}
  - id: hold
    sleep: 9m
  - id: never
    shell: "true"
`

func lostSrc(grace, onError string) string {
	return strings.NewReplacer("%GRACE%", grace, "%ONERROR%", onError).Replace(lostDrill)
}

// The metrics going away mid-run: the stop condition stays unevaluable,
// and once past the grace (polls and time) the steps stop and everything
// rolls back, recorded as guard lost; within a poll interval of the grace.
func TestStopConditionLostMidRunRollsBack(t *testing.T) {
	for _, tc := range []struct {
		name, grace string
		polls       int
		wait        time.Duration
	}{
		{"drill's grace", "guard_grace: {polls: 5, for: 2s}", 5, 2 * time.Second},
		{"default grace", "", drill.DefaultGuardGracePolls, drill.DefaultGuardGraceFor},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t)
				d := parse(t, lostSrc(tc.grace, ""))
				var down time.Time
				rec := &recorder{on: func(ev Event) {
					if ev.Kind == EventStepStarted && ev.Step.ID == "hold" {
						down = time.Now()
						e.Fleet.SetMetricsDown(true)
					}
				}}
				j, log := e.run(context.Background(), d, rec)
				took := time.Since(down)
				if j.Outcome != drill.OutcomeGuardLost || j.ExitCode != exitcode.Unavailable || !j.RollbacksOK {
					t.Fatalf("outcome %s exit %d: %s\n%s", j.Outcome, j.ExitCode, j.Reason, log)
				}
				if took < tc.wait || took > tc.wait+2*d.PollInterval+time.Second {
					t.Errorf("the guard was lost %s after the source went away, want within a poll or two of %s", took, tc.wait)
				}
				g := j.Guard
				if g == nil || g.Phase != drill.GuardDuringRun || g.Condition != "core-api open" || g.Polls < tc.polls || g.GracePolls != tc.polls ||
					g.GraceSeconds != tc.wait.Seconds() || g.Since == nil || g.At.Sub(*g.Since) < tc.wait {
					t.Errorf("guard = %+v", g)
				}
				if s := stepByID(t, j, "hold"); s.Status != drill.StatusGuardLost || !strings.Contains(s.Error, "guard lost") {
					t.Errorf("hold = %+v", s)
				}
				if s := stepByID(t, j, "never"); s.Status != drill.StatusSkipped {
					t.Errorf("never = %+v", s)
				}
				if e.Store.Has(breaker.OverrideKey("openai")) {
					t.Error("the override is still there after a lost guard")
				}
				if !strings.Contains(log, "GUARD LOST") {
					t.Errorf("the summary does not say guard lost:\n%s", log)
				}
				x, err := JUnit(j)
				if err != nil {
					t.Fatal(err)
				}
				for _, want := range []string{`name="outcome" value="guard_lost"`, `name="guard_condition" value="core-api open"`, `type="guard_lost"`} {
					if !strings.Contains(string(x), want) {
						t.Errorf("JUnit lacks %s:\n%s", want, x)
					}
				}
			})
		})
	}
}

// on_error: continue opts out: the run goes on blind, with one notice (not
// one per poll), and passes; the plan shows the choice.
func TestStopConditionOnErrorContinueGoesOnBlind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		d := parse(t, lostSrc("guard_grace: {polls: 2, for: 1s}", "    on_error: continue"))
		d.Steps[1].Spec = parse(t, "name: x\ntimeout: 1m\nsteps:\n  - sleep: 5s\n").Steps[0].Spec
		rec := &recorder{on: func(ev Event) {
			if ev.Kind == EventStepStarted && ev.Step.ID == "hold" {
				e.Fleet.SetMetricsDown(true)
			}
		}}
		j, log := e.run(context.Background(), d, rec)
		if j.Outcome != drill.OutcomePassed {
			t.Fatalf("outcome %s: %s\n%s", j.Outcome, j.Reason, log)
		}
		if len(j.Notices) != 1 || !strings.Contains(j.Notices[0], `stop condition "core-api open" could not be evaluated`) ||
			!strings.Contains(j.Notices[0], "on_error: continue") {
			t.Errorf("notices = %q", j.Notices)
		}
		var b strings.Builder
		WritePlan(&b, NewPlan(context.Background(), d, e.Deps))
		if !strings.Contains(b.String(), "on_error: continue") {
			t.Errorf("the plan does not show on_error: continue:\n%s", b.String())
		}
	})
}

// A stop condition that fails a poll or two and recovers within the grace
// stops nothing; the log says it can be evaluated again.
func TestStopConditionRecoveringWithinTheGraceStopsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		d := parse(t, lostSrc("guard_grace: {polls: 3, for: 1s}", ""))
		d.Steps[1].Spec = parse(t, "name: x\ntimeout: 1m\nsteps:\n  - sleep: 5s\n").Steps[0].Spec
		rec := &recorder{on: func(ev Event) {
			if ev.Kind == EventStepStarted && ev.Step.ID == "hold" {
				e.Fleet.SetMetricsDown(true)
				go func() {
					time.Sleep(500 * time.Millisecond) // bubble time: 5 polls, less than the 1 s grace
					e.Fleet.SetMetricsDown(false)
				}()
			}
		}}
		j, log := e.run(context.Background(), d, rec)
		if j.Outcome != drill.OutcomePassed {
			t.Fatalf("outcome %s: %s\n%s", j.Outcome, j.Reason, log)
		}
		if len(j.Notices) != 2 || !strings.Contains(j.Notices[1], "can be evaluated again") {
			t.Errorf("notices = %q", j.Notices)
		}
	})
}

// wait-for and a polling hypothesis check are guards too: an unevaluable
// condition past the grace ends them as guard lost instead of polling on
// blind until their timeout; on_error: continue keeps the old wait.
func TestWaitForAndHypothesisGuards(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		downAt    func(Event) bool
		want      string
		role      string
	}{
		{"wait-for", `
name: w
timeout: 10m
poll_interval: 100ms
guard_grace: {polls: 3, for: 2s}
metrics_url: ${env.FLEET}/metrics
steps:
  - id: force
    breaker.force-open: {dependency: openai}
  - id: wait
    continue_on_failure: true
    wait-for:
      breaker: {dependency: openai, state: closed}
      timeout: 5m
  - id: never
    shell: "true"
`, func(ev Event) bool { return ev.Kind == EventStepStarted && ev.Step.ID == "wait" }, drill.OutcomeGuardLost, drill.RoleWaitFor},
		{"wait-for on_error continue", `
name: w
timeout: 10m
poll_interval: 100ms
guard_grace: {polls: 3, for: 2s}
metrics_url: ${env.FLEET}/metrics
steps:
  - id: force
    breaker.force-open: {dependency: openai}
  - id: wait
    wait-for:
      breaker: {dependency: openai, state: closed}
      timeout: 5m
      on_error: continue
`, func(ev Event) bool { return ev.Kind == EventStepStarted && ev.Step.ID == "wait" }, drill.OutcomeFailed, ""},
		{"hypothesis before", `
name: h
timeout: 10m
poll_interval: 100ms
guard_grace: {polls: 3, for: 2s}
metrics_url: ${env.FLEET}/metrics
hypothesis:
  - name: openai forced
    breaker: {dependency: openai, state: forced_open}
    within: 5m
steps:
  - id: force
    breaker.force-open: {dependency: openai}
`, func(ev Event) bool { return ev.Kind == EventPhase && ev.Phase == drill.PhaseBefore }, drill.OutcomeGuardLost, drill.RoleHypothesis},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t)
				d := parse(t, tc.src)
				var down time.Time
				rec := &recorder{on: func(ev Event) {
					if tc.downAt(ev) {
						down = time.Now()
						e.Fleet.SetMetricsDown(true)
					}
				}}
				j, log := e.run(context.Background(), d, rec)
				took := time.Since(down)
				if j.Outcome != tc.want || !j.RollbacksOK || e.Store.Has(breaker.OverrideKey("openai")) {
					t.Fatalf("outcome %s: %s\n%s", j.Outcome, j.Reason, log)
				}
				if tc.role == "" {
					if took < 5*time.Minute {
						t.Errorf("on_error: continue ended the wait after %s, want its 5m timeout", took)
					}
					return
				}
				if took > 3*time.Second || j.Guard == nil || j.Guard.Role != tc.role || j.ExitCode != exitcode.Unavailable {
					t.Errorf("after %s: guard %+v exit %d", took, j.Guard, j.ExitCode)
				}
				for _, s := range j.Steps {
					if s.ID == "never" && s.Status != drill.StatusSkipped {
						t.Errorf("a step ran after the guard was lost: %+v", s)
					}
				}
			})
		})
	}
}

func TestGuardFieldProblems(t *testing.T) {
	for src, want := range map[string]string{
		"guard_grace: {polls: 0}\n":          "t.yaml:3:22: guard_grace: polls: 0: use 1-1000",
		"guard_grace: {for: 2m}\n":           "t.yaml:3:20: guard_grace: for: 2m0s is not shorter than the drill's timeout 1m0s",
		"guard_grace: {polls: 2, when: 1}\n": `t.yaml:3:25: guard_grace: unknown field "when"`,
		"guard_grace: {}\n":                  "t.yaml:3:14: guard_grace: give polls",
		"guard_grace: 30s\n":                 "t.yaml:3:14: guard_grace must be a mapping",

		"stop_conditions:\n  - shell: \"true\"\n    on_error: ignore\n": `t.yaml:5:15: stop_conditions[0]: on_error: "ignore": use stop`,
	} {
		_, probs := drill.Parse(kinds.Builtin(), "t.yaml", []byte("name: p\ntimeout: 1m\n"+src+"steps:\n  - shell: \"true\"\n"))
		if len(probs) == 0 || !strings.Contains(probs[0].String(), want) {
			t.Errorf("%s: problems %v, want %q", src, probs, want)
		}
	}
	d := parse(t, "name: p\ntimeout: 1m\nguard_grace: {polls: 7}\nsteps:\n  - wait-for: {shell: \"true\", timeout: 5s, on_error: continue}\n")
	if d.GuardGrace.Polls != 7 || d.GuardGrace.For != drill.DefaultGuardGraceFor {
		t.Errorf("grace = %+v", d.GuardGrace)
	}
}

// Issue 45: a preflight row read "✓ core-api's breaker opened … held", as
// if core-api had opened. A guard's row names its role and quotes its name,
// and says that it can be evaluated and whether it holds now: a condition
// that held, not an event.
func TestPreflightRowsNameTheGuardNotTheEvent(t *testing.T) {
	e := newEnv(t)
	d := parse(t, `
name: worded
timeout: 1m
metrics_url: ${env.FLEET}/metrics
hypothesis:
  - name: openai closed
    breaker: {dependency: openai, state: closed}
stop_conditions:
  - name: core-api's breaker opened
    breaker: {dependency: core-api, state: open}
steps:
  - sleep: {for: 10ms}
`)
	j, log := e.run(context.Background(), d)
	if j.Outcome != drill.OutcomePassed {
		t.Fatalf("outcome %s: %s\n%s", j.Outcome, j.Reason, log)
	}
	for _, want := range []string{`ok   stop condition "core-api's breaker opened": can be evaluated (it does not hold now): `,
		`ok   hypothesis check "openai closed": can be evaluated (it holds now): `} {
		if !strings.Contains(log, want) {
			t.Errorf("the live log lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, "ok   core-api's breaker opened") {
		t.Errorf("a preflight row reads as the event:\n%s", log)
	}
	if len(j.Preflight) != 2 || j.Preflight[0].Role != drill.RoleStopCondition || j.Preflight[1].Role != drill.RoleHypothesis {
		t.Errorf("preflight records %+v", j.Preflight)
	}
}
