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
)

func TestRollbackRegisteredBeforeTheStepActs(t *testing.T) {
	e := newEnv(t)
	e.Store.LostPut = breaker.OverrideKey("openai")
	d := parse(t, `
name: lost-write
timeout: 1m
steps:
  - breaker.force-open: {dependency: openai}
`)
	j, log := e.run(context.Background(), d)
	if j.Steps[0].Status != drill.StatusPassed {
		t.Fatalf("step = %+v\n%s", j.Steps[0], log)
	}
	if !j.RollbacksOK || j.Rollbacks[0].Detail != "cleared" {
		t.Fatalf("rollbacks = %+v", j.Rollbacks)
	}
	if e.Store.Has(breaker.OverrideKey("openai")) {
		t.Error("the override whose write response was lost is still there")
	}
}

func TestRollbacksRunInReverseOrder(t *testing.T) {
	e := newEnv(t)
	out := filepath.Join(t.TempDir(), "order")
	e.Deps.Environ = []string{"OUT=" + out}
	d := parse(t, `
name: order
timeout: 1m
rollback:
  - shell: echo drill-level >> "$OUT"
steps:
  - id: a
    shell: "true"
    rollback:
      shell: echo a >> "$OUT"
  - id: b
    breaker.force-open: {dependency: openai}
    rollback:
      - shell: echo b1 >> "$OUT"
      - shell: echo b2 >> "$OUT"
  - id: c
    shell: "true"
    rollback:
      shell: echo c >> "$OUT"
`)
	j, log := e.run(context.Background(), d)
	if j.ExitCode != exitcode.OK {
		t.Fatalf("exit %d: %s\n%s", j.ExitCode, j.Reason, log)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Fields(string(b)), []string{"c", "b2", "b1", "a", "drill-level"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("rollback order = %v, want %v", got, want)
	}
	var ids []string
	for _, r := range j.Rollbacks {
		ids = append(ids, r.ID+":"+r.Step+":"+r.Subject)
	}
	want := "rb-1:drill:shell rb-2:a:shell rb-3:b:shell rb-4:b:shell rb-5:b:breaker#openai rb-6:c:shell"
	if strings.Join(ids, " ") != want {
		t.Errorf("registered rollbacks = %v, want %s", ids, want)
	}
	if e.Store.Has(breaker.OverrideKey("openai")) {
		t.Error("override not cleared")
	}
}

func TestFailedRollbackIsReportedWithTheLeversExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.Store.FailDelete = breaker.OverrideKey("openai")
		d := parse(t, `
name: stuck
timeout: 1m
rollback_timeout: 5s
steps:
  - breaker.force-open: {dependency: openai, for: 30s}
`)
		start := time.Now()
		j, log := e.run(context.Background(), d)
		if j.ExitCode != exitcode.Rollback || j.RollbacksOK {
			t.Fatalf("exit %d, rollbacks ok %v\n%s", j.ExitCode, j.RollbacksOK, log)
		}
		rb := j.Rollbacks[0]
		if rb.Status != drill.StatusFailed || rb.Attempts != rollbackAttempts || !strings.Contains(rb.Error, "store unavailable") {
			t.Errorf("rollback = %+v", rb)
		}
		if rb.ExpiresAt == nil || !rb.ExpiresAt.Equal(start.Add(30*time.Second).UTC().Truncate(time.Millisecond)) {
			t.Errorf("rollback expiry = %v, want the override's expiry 30s after the start", rb.ExpiresAt)
		}
		if !strings.Contains(log, "SOME LEVERS WERE NOT RESTORED") || !strings.Contains(log, "lapses on its own at") {
			t.Errorf("live log does not warn about the lever left:\n%s", log)
		}
		if elapsed := time.Since(start); elapsed != rollbackBackoff+2*rollbackBackoff {
			t.Errorf("retries took %s, want the backoff 250ms + 500ms", elapsed)
		}
	})
}

func TestAbandonedRollbacksAreReported(t *testing.T) {
	e := newEnv(t)
	rbCtx, abandon := context.WithCancel(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	rec := &recorder{on: func(ev Event) {
		switch {
		case ev.Kind == EventStepStarted && ev.Step.ID == "wait":
			cancel()
		case ev.Kind == EventRollbackDone && ev.Rollback.Subject == "rl#c":
			abandon() // third signal during the first rollback
		}
	}}
	d := parse(t, `
name: abandon
timeout: 1m
steps:
  - breaker.force-open: {dependency: openai, for: 20s}
  - ratelimit.drain: {client: c}
  - id: wait
    sleep: 30s
`)
	var log strings.Builder
	r := &Runner{Deps: e.Deps, Reporters: []Reporter{&LiveLog{W: &log}, rec}, RollbackContext: rbCtx}
	j := r.Run(ctx, d)
	if j.ExitCode != exitcode.Rollback {
		t.Fatalf("exit %d\n%s", j.ExitCode, log.String())
	}
	if j.Rollbacks[1].Status != drill.StatusOK || j.Rollbacks[0].Status != drill.StatusAbandoned || j.Rollbacks[0].ExpiresAt == nil {
		t.Errorf("rollbacks = %+v", j.Rollbacks)
	}
}
