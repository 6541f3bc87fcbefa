package runner

import (
	"context"
	"github.com/kosha-platform/koshactl/internal/lever/levertest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/kinds"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/gauge"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
)

const outageDrill = `
name: openai-outage
timeout: 1m
poll_interval: 10ms
vars:
  fleet: ${env.FLEET}
metrics_url: ${vars.fleet}/metrics
hypothesis:
  - name: search is not degraded
    http:
      url: ${vars.fleet}/search
      expect: {json: {result.degraded: false}}
  - name: openai closed
    breaker: {dependency: openai, state: closed}
steps:
  - id: force
    breaker.force-open: {dependency: openai, for: 10m, reason: provider outage}
  - id: forced
    wait-for:
      breaker: {dependency: openai, state: forced_open}
      timeout: 5s
  - id: degraded
    http:
      method: POST
      url: ${vars.fleet}/search
      json: {query: refunds}
      expect:
        status: 200
        json:
          result.degraded: true
          result.degraded_reason: embeddings_unavailable
  - id: recover
    breaker.clear: {dependency: openai}
`

func TestRunPassesAndRollsBackTheOverride(t *testing.T) {
	e := newEnv(t)
	d := parse(t, outageDrill)
	j, log := e.run(context.Background(), d)
	if j.Outcome != drill.OutcomePassed || j.ExitCode != exitcode.OK || !j.RollbacksOK {
		t.Fatalf("outcome %s (exit %d): %s\n%s", j.Outcome, j.ExitCode, j.Reason, log)
	}
	if e.Store.Has(breaker.OverrideKey("openai")) {
		t.Error("the override is still in the store after the run")
	}
	if len(j.Rollbacks) != 1 || j.Rollbacks[0].Subject != "breaker#openai" || j.Rollbacks[0].Status != drill.StatusOK || j.Rollbacks[0].Step != "force" {
		t.Fatalf("rollbacks = %+v", j.Rollbacks)
	}
	if got := j.Rollbacks[0].Detail; got != "already clear" {
		t.Errorf("the drill cleared its own override; rollback should find it gone, said %q", got)
	}
	// Each lever step records why it pulled (the game-day report shows
	// it); a step with no reason field records its id; a probe, nothing.
	for id, want := range map[string]string{"force": "provider outage", "recover": "step recover", "degraded": ""} {
		if got := stepByID(t, j, id).Reason; got != want {
			t.Errorf("step %s records the reason %q, want %q", id, got, want)
		}
	}
	// The override was clamped to the drill's deadline, not the step's 10m.
	exp, err := time.Parse(time.RFC3339Nano, stepByID(t, j, "force").Outputs["expires_at"])
	if err != nil {
		t.Fatal(err)
	}
	if exp.After(j.Deadline) {
		t.Errorf("override expires %s, after the drill's deadline %s", exp, j.Deadline)
	}
	if len(j.Hypothesis.Before) != 2 || len(j.Hypothesis.After) != 2 || !j.Hypothesis.After[1].OK {
		t.Errorf("hypothesis = %+v", j.Hypothesis)
	}
	// Every change is audited with the run id in its reason.
	recs := e.auditRecords()
	actions := map[string]int{}
	for _, r := range recs {
		actions[r.Action]++
	}
	if len(recs) != 2 || actions[breaker.ActionForceOpen] != 1 || actions[breaker.ActionClear] != 1 {
		t.Fatalf("audit records = %+v", recs)
	}
	for _, r := range recs {
		if !strings.Contains(r.Reason, "drill openai-outage run "+j.RunID) {
			t.Errorf("audit reason %q does not name the drill run", r.Reason)
		}
	}
	for _, want := range []string{"[1/4] force (breaker.force-open): force openai open for 10m", "rb-1 registered", "PASSED", "4/4 steps passed"} {
		if !strings.Contains(log, want) {
			t.Errorf("live log lacks %q:\n%s", want, log)
		}
	}
}

func TestStepFailureStillRollsBack(t *testing.T) {
	e := newEnv(t)
	d := parse(t, `
name: fails
timeout: 1m
steps:
  - id: force
    breaker.force-open: {dependency: openai}
  - id: wrong
    http:
      url: ${env.FLEET}/search
      expect: {json: {result.degraded: false}}
  - id: never
    breaker.force-open: {dependency: core-api}
`)
	j, log := e.run(context.Background(), d)
	if j.Outcome != drill.OutcomeFailed || j.ExitCode != exitcode.Error || !j.RollbacksOK {
		t.Fatalf("outcome %s exit %d\n%s", j.Outcome, j.ExitCode, log)
	}
	wrong := stepByID(t, j, "wrong")
	if wrong.Status != drill.StatusFailed || !strings.Contains(wrong.Error, "json: result.degraded: want false, got true") {
		t.Errorf("failed step = %+v", wrong)
	}
	if s := stepByID(t, j, "never"); s.Status != drill.StatusSkipped {
		t.Errorf("a step after the failure ran: %+v", s)
	}
	if e.Store.Has(breaker.OverrideKey("openai")) {
		t.Error("the override survived a failed drill")
	}
	if j.Rollbacks[0].Detail != "cleared" {
		t.Errorf("rollback detail = %q", j.Rollbacks[0].Detail)
	}
	if !strings.Contains(j.Reason, "step wrong failed") {
		t.Errorf("reason = %q", j.Reason)
	}
}

// A write whose response is lost (the override IS written, the client gets
// an error) is resolved by the domain's re-read: the step passes (its
// token is on the stored item), and it is rolled back, the rollback having
// been registered before the step acted.
// SIGINT cancels the run context; rollbacks run on a fresh one.
func TestInterruptRollsBackOnAFreshContext(t *testing.T) {
	e := newEnv(t)
	d := parse(t, `
name: interrupted
timeout: 10m
steps:
  - id: force
    breaker.force-open: {dependency: openai}
  - id: drain
    ratelimit.drain: {client: drill-client, for: 5m}
  - id: wait
    sleep: 5m
  - id: never
    breaker.force-open: {dependency: core-api}
`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := &recorder{on: func(ev Event) {
		if ev.Kind == EventStepStarted && ev.Step.ID == "wait" {
			cancel() // the operator presses Ctrl-C during the sleep
		}
	}}
	j, log := e.run(ctx, d, rec)
	if j.Outcome != drill.OutcomeInterrupted || j.ExitCode != exitcode.Interrupted || !j.RollbacksOK {
		t.Fatalf("outcome %s exit %d rollbacks ok %v\n%s", j.Outcome, j.ExitCode, j.RollbacksOK, log)
	}
	if s := stepByID(t, j, "wait"); s.Status != drill.StatusInterrupted {
		t.Errorf("sleep step = %+v", s)
	}
	if s := stepByID(t, j, "never"); s.Status != drill.StatusSkipped {
		t.Errorf("a step ran after the interrupt: %+v", s)
	}
	if e.Store.Has(breaker.OverrideKey("openai")) {
		t.Error("override not rolled back after the interrupt")
	}
	st, err := e.Buckets.Get(context.Background(), "drill-client")
	if err != nil {
		t.Fatal(err)
	}
	if !st.Admit || st.Tokens != ratelimit.DefaultCapacity {
		t.Errorf("bucket after rollback: %+v, want full", st)
	}
	if j.Hypothesis.AfterSkipped == "" {
		t.Error("the hypothesis after an interrupt should be skipped, and say so")
	}
	if len(j.Rollbacks) != 2 || j.Rollbacks[0].Status != drill.StatusOK || j.Rollbacks[1].Status != drill.StatusOK {
		t.Errorf("rollbacks = %+v", j.Rollbacks)
	}
}

func TestDrillTimeoutEndsTheStepsAndRollsBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		d := parse(t, `
name: slow
timeout: 12s
steps:
  - breaker.force-open: {dependency: openai}
  - sleep: 7500ms
  - id: late
    sleep: 7500ms
`)
		start := time.Now()
		j, log := e.run(context.Background(), d)
		if j.Outcome != drill.OutcomeTimedOut || j.ExitCode != exitcode.Error || !j.RollbacksOK {
			t.Fatalf("outcome %s exit %d\n%s", j.Outcome, j.ExitCode, log)
		}
		if s := stepByID(t, j, "late"); s.Status != drill.StatusTimedOut {
			t.Errorf("late step = %+v", s)
		}
		if time.Since(start) != 12*time.Second {
			t.Errorf("the run took %s, want exactly the 12s timeout", time.Since(start))
		}
		if e.Store.Has(breaker.OverrideKey("openai")) {
			t.Error("override not cleared after the timeout")
		}
	})
}

func TestForceOpenRefusesWhenTheDrillHasLessThanTheMinimumLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		d := parse(t, `
name: short
timeout: 3s
steps:
  - id: force
    breaker.force-open: {dependency: openai}
`)
		j, log := e.run(context.Background(), d)
		if j.Outcome != drill.OutcomeFailed || !strings.Contains(log, "under the 5s minimum override") {
			t.Fatalf("outcome %s\n%s", j.Outcome, log)
		}
		if e.Store.Has(breaker.OverrideKey("openai")) {
			t.Error("an override too short for the fleet to see was written")
		}
	})
}

func TestStopConditionAbortsAStepAndRollsBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		d := parse(t, `
name: stop
timeout: 10m
poll_interval: 200ms
metrics_url: ${env.FLEET}/metrics
stop_conditions:
  - name: core-api opened
    breaker: {dependency: core-api, state: [open, forced_open], instances: any}
steps:
  - breaker.force-open: {dependency: openai}
  - id: wait
    sleep: 5m
  - id: never
    shell: "true"
`)
		start := time.Now()
		go func() {
			time.Sleep(1100 * time.Millisecond) // core-api opens during the sleep, between two polls
			e.Fleet.Set("core-api", gauge.Open)
		}()
		j, log := e.run(context.Background(), d)
		if j.Outcome != drill.OutcomeStopped || j.ExitCode != exitcode.Error || j.Stop == nil || j.Stop.Condition != "core-api opened" {
			t.Fatalf("outcome %s exit %d stop %+v\n%s", j.Outcome, j.ExitCode, j.Stop, log)
		}
		if s := stepByID(t, j, "wait"); s.Status != drill.StatusStopped {
			t.Errorf("sleep step = %+v", s)
		}
		if s := stepByID(t, j, "never"); s.Status != drill.StatusSkipped {
			t.Errorf("step after the stop = %+v", s)
		}
		if took := time.Since(start); took != 1200*time.Millisecond {
			t.Errorf("the stop condition ended the 5m sleep after %s; the monitor polls every 200ms, so 1.2s", took)
		}
		if !j.RollbacksOK || e.Store.Has(breaker.OverrideKey("openai")) {
			t.Errorf("rollback after stop: %+v", j.Rollbacks)
		}
		if !strings.Contains(j.Stop.Detail, "2 open") {
			t.Errorf("stop detail = %q", j.Stop.Detail)
		}
	})
}

func TestChaosHeaderIsUsedButNeverReported(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	d := parse(t, `
name: chaos
timeout: 30s
steps:
  - id: sign
    chaos.sign: {target: openai, fault: error, ttl: 10m}
  - id: search
    http:
      url: ${env.FLEET}/search
      headers: {X-Kosha-Chaos: "${steps.sign.header}"}
      expect: {json: {result.chaos: applied}}
  - id: echo
    shell: echo "$DRILL_STEP_SIGN_HEADER"; echo "$DRILL_STEP_SIGN_HEADER" >&2
`)
	jf := &JournalFile{Path: filepath.Join(dir, "journal.json")}
	ju := &JUnitFile{Path: filepath.Join(dir, "junit.xml")}
	j, log := e.run(context.Background(), d, jf, ju)
	if j.ExitCode != exitcode.OK {
		t.Fatalf("exit %d: %s\n%s", j.ExitCode, j.Reason, log)
	}
	hdrs := e.Fleet.RequestHeaders()
	value := hdrs[len(hdrs)-1].Get(chaos.HeaderName)
	h, err := chaos.Parse(value)
	if err != nil {
		t.Fatalf("the fleet did not receive a chaos header: %v", err)
	}
	if got := h.ExpTime().Sub(j.StartedAt); got > 30*time.Second {
		t.Errorf("header lives %s past the start, beyond the drill's 30s timeout", got)
	}
	journal, _ := os.ReadFile(jf.Path)
	junit, _ := os.ReadFile(ju.Path)
	audits := e.auditRecords()
	for what, text := range map[string]string{"live log": log, "journal": string(journal), "junit": string(junit), "journal struct": journalJSON(t, j),
		"audit": journalJSON(t, &drill.Journal{Notices: []string{string(audits[0].After)}})} {
		if strings.Contains(text, value) || strings.Contains(text, h.SigString()) {
			t.Errorf("%s contains the chaos header or its signature", what)
		}
	}
	if !strings.Contains(string(journal), h.JTI) {
		t.Error("the journal should record the header's jti")
	}
	if got := stepByID(t, j, "sign").Outputs["header"]; got != "[secret]" {
		t.Errorf("journal output header = %q", got)
	}
	if out := stepByID(t, j, "echo").Outputs; out["stdout"] != "[redacted]" || out["stderr"] != "[redacted]" {
		t.Errorf("shell output not redacted: %q", out)
	}
	if rb := j.Rollbacks[0]; rb.Subject != "chaos#"+h.JTI || rb.Status != drill.StatusOK || rb.ExpiresAt == nil || !strings.Contains(rb.Detail, "withdrawn") {
		t.Errorf("chaos rollback = %+v", rb)
	}
	if len(audits) != 1 || audits[0].Action != kinds.ChaosAuditAction || audits[0].Subject != "chaos#"+h.JTI {
		t.Errorf("audit = %+v", audits)
	}
}

func TestBucketsAreRestoredToTheirLevelBeforeTheDrill(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, _, err := levertest.Bucket(ctx, e.Table, e.Clock, e.Audit, "oncall@ops", "set by hand", ratelimit.Change{Op: ratelimit.OpSet, Client: "busy", Tokens: 5}); err != nil {
		t.Fatal(err)
	}
	d := parse(t, `
name: buckets
timeout: 1m
steps:
  - ratelimit.drain: {client: busy, for: 10m}
  - assert: {bucket: {client: busy, admit: false}}
  - ratelimit.drain: {client: fresh}
  - ratelimit.reset: {client: busy}
  - ratelimit.set: {client: fresh, tokens: 2}
`)
	j, log := e.run(ctx, d)
	if j.ExitCode != exitcode.OK {
		t.Fatalf("exit %d: %s\n%s", j.ExitCode, j.Reason, log)
	}
	if len(j.Rollbacks) != 2 {
		t.Fatalf("want one rollback per bucket, got %+v", j.Rollbacks)
	}
	busy, _ := e.Buckets.Get(ctx, "busy")
	if busy.Tokens < 5 || busy.Tokens > 5.5 {
		t.Errorf("busy holds %g tokens after rollback, want its 5 (plus the refill of the run's few ms)", busy.Tokens)
	}
	fresh, _ := e.Buckets.Get(ctx, "fresh")
	if !fresh.Full() {
		t.Errorf("fresh had no bucket before; after rollback it holds %g, want full", fresh.Tokens)
	}
	// The drain's hold was clamped so the client is admitted again by the
	// drill's deadline.
	if f := parseFloat(t, stepByID(t, j, "step-1").Outputs["retry_after_seconds"]); f > 60 || f < 59 {
		t.Errorf("drain refuses the client for %gs; want just under the drill's 1m timeout", f)
	}
}

func TestSomeoneElsesOverrideIsRestored(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, _, err := levertest.Force(ctx, e.Table, e.Clock, e.Audit, levertest.Req{Dependency: "openai", Reason: "real incident", Actor: "oncall@ops", For: time.Hour}); err != nil {
		t.Fatal(err)
	}
	d := parse(t, `
name: restore
timeout: 1m
steps:
  - breaker.force-open: {dependency: openai}
`)
	j, _ := e.run(ctx, d)
	if j.ExitCode != exitcode.Error || !strings.Contains(j.Steps[0].Error, "oncall@ops") || !strings.Contains(j.Steps[0].Error, "overwrite: true") {
		t.Fatalf("forcing over an active override without overwrite: %+v", j.Steps[0])
	}
	if len(j.Rollbacks) != 0 {
		t.Errorf("a refused step registered rollbacks: %+v", j.Rollbacks)
	}

	d = parse(t, `
name: restore
timeout: 1m
steps:
  - breaker.force-open: {dependency: openai, overwrite: true}
  - breaker.clear: {dependency: openai}
`)
	j, log := e.run(ctx, d)
	if j.ExitCode != exitcode.OK {
		t.Fatalf("exit %d\n%s", j.ExitCode, log)
	}
	o, err := e.Overrides.Get(ctx, "openai")
	if err != nil {
		t.Fatalf("the override held before the drill was not restored: %v", err)
	}
	if o.Actor != "oncall@ops" || o.Reason != "real incident" || !o.ActiveAt(time.Now()) {
		t.Errorf("restored override = %+v", o)
	}
	if !strings.Contains(j.Rollbacks[0].Detail, "restored the override held by oncall@ops") {
		t.Errorf("rollback detail = %q", j.Rollbacks[0].Detail)
	}
}

func TestAnOverrideSomeoneForcedMeanwhileIsLeftAlone(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var once sync.Once
	rec := &recorder{on: func(ev Event) {
		if ev.Kind == EventStepDone && ev.Step.ID == "force" {
			once.Do(func() {
				if _, _, err := levertest.Force(ctx, e.Table, e.Clock, e.Audit, levertest.Req{Dependency: "openai", Reason: "someone else", Actor: "oncall@ops",
					For: time.Hour, Overwrite: true}); err != nil {
					t.Error(err)
				}
			})
		}
	}}
	d := parse(t, `
name: meanwhile
timeout: 1m
steps:
  - id: force
    breaker.force-open: {dependency: openai}
`)
	j, _ := e.run(ctx, d, rec)
	if !j.RollbacksOK || !strings.Contains(j.Rollbacks[0].Detail, "left alone: oncall@ops now holds it") {
		t.Fatalf("rollback = %+v", j.Rollbacks)
	}
	if o, err := e.Overrides.Get(ctx, "openai"); err != nil || o.Actor != "oncall@ops" {
		t.Errorf("someone else's override was removed: %+v %v", o, err)
	}
}

func TestContinueOnFailureRunsLaterStepsButFails(t *testing.T) {
	e := newEnv(t)
	d := parse(t, `
name: continue
timeout: 1m
steps:
  - id: bad
    shell: exit 3
    continue_on_failure: true
  - id: next
    shell: echo ran
`)
	j, _ := e.run(context.Background(), d)
	if j.ExitCode != exitcode.Error || stepByID(t, j, "next").Status != drill.StatusPassed {
		t.Fatalf("exit %d steps %+v", j.ExitCode, j.Steps)
	}
	if !strings.Contains(stepByID(t, j, "bad").Error, "exit code 3, want 0") {
		t.Errorf("error = %q", stepByID(t, j, "bad").Error)
	}
}

func TestUnsetEnvironmentVariableIsInvalidAndDoesNothing(t *testing.T) {
	e := newEnv(t)
	d := parse(t, `
name: vars
timeout: 1m
vars:
  url: ${env.NOT_SET}
steps:
  - breaker.force-open: {dependency: openai}
`)
	j, _ := e.run(context.Background(), d)
	if j.Outcome != drill.OutcomeInvalid || j.ExitCode != exitcode.Usage || !strings.Contains(j.Reason, "NOT_SET is not set") {
		t.Fatalf("outcome %s exit %d reason %q", j.Outcome, j.ExitCode, j.Reason)
	}
	if e.Store.Has(breaker.OverrideKey("openai")) || j.Steps[0].Status != drill.StatusPending {
		t.Error("an invalid drill acted")
	}
}

func TestClearLeavesAnOverrideForcedDuringTheDrill(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	rec := &recorder{on: func(ev Event) {
		if ev.Kind == EventStepDone && ev.Step.ID == "force" {
			if _, _, err := levertest.Force(ctx, e.Table, e.Clock, e.Audit, levertest.Req{Dependency: "openai", Reason: "real incident", Actor: "oncall@ops",
				For: time.Hour, Overwrite: true}); err != nil {
				t.Error(err)
			}
		}
	}}
	d := parse(t, `
name: clear-theirs
timeout: 1m
steps:
  - id: force
    breaker.force-open: {dependency: openai}
  - id: clear
    breaker.clear: {dependency: openai}
`)
	j, _ := e.run(ctx, d, rec)
	if s := stepByID(t, j, "clear"); s.Status != drill.StatusFailed || !strings.Contains(s.Error, "oncall@ops") || !strings.Contains(s.Error, "forced during the drill") {
		t.Errorf("clear step = %+v", s)
	}
	if o, err := e.Overrides.Get(ctx, "openai"); err != nil || o.Actor != "oncall@ops" {
		t.Errorf("the on-call override was removed: %+v %v", o, err)
	}
	if !j.RollbacksOK || !strings.Contains(j.Rollbacks[0].Detail, "left alone") {
		t.Errorf("rollbacks = %+v", j.Rollbacks)
	}
}
