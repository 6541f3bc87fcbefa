package runner

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/drill"
)

// abandonedRun runs d with its rollbacks abandoned, as a run killed after
// its steps leaves them, and returns the journal as a file would hold it.
func abandonedRun(t *testing.T, e *env, src string) *drill.Journal {
	t.Helper()
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	r := &Runner{Deps: e.svc, RollbackContext: gone}
	j := r.Run(context.Background(), parse(t, src))
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	var out drill.Journal
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

const twoLevers = `
name: levers
timeout: 10m
steps:
  - breaker.force-open: {dependency: openai}
  - breaker.force-open: {dependency: core-api}
  - ratelimit.drain: {client: agent-1, for: 5m}
`

func TestRecoveryRunsPendingRollbacksWithTheRunsRules(t *testing.T) {
	e := newEnv(t)
	j := abandonedRun(t, e, twoLevers)
	if len(Pending(j)) != 3 {
		t.Fatalf("pending %v: %+v", Pending(j), j.Rollbacks)
	}
	for _, rb := range j.Rollbacks {
		if rb.Lever == nil || (rb.Lever.Kind == drill.LeverOverride && rb.Lever.WrittenVersion == 0) {
			t.Fatalf("journal lacks what recover needs: %+v", rb)
		}
	}
	ctx := context.Background()
	// Meanwhile someone else takes openai over, and core-api's override
	// is re-written (same actor and run tag, a later version).
	if _, err := e.ov.Force(ctx, breaker.ForceRequest{Dependency: "openai", Reason: "real incident", Actor: "oncall@ops", For: time.Hour, Overwrite: true}); err != nil {
		t.Fatal(err)
	}
	cur, err := e.ov.Get(ctx, "core-api")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.ov.Force(ctx, breaker.ForceRequest{Dependency: "core-api", Reason: cur.Reason, Actor: cur.Actor, For: time.Hour, Overwrite: true}); err != nil {
		t.Fatal(err)
	}
	e.svc.Actor = "recoverer@ops"
	var lines []string
	rec := (&Recovery{Deps: e.svc, Log: func(s string) { lines = append(lines, s) }}).Run(ctx, j)
	if rec == nil || !rec.OK || strings.Join(rec.Rollbacks, ",") != "rb-3,rb-2,rb-1" {
		t.Fatalf("recovery %+v", rec)
	}
	byID := map[string]drill.RollbackRecord{}
	for _, rb := range j.Rollbacks {
		byID[rb.ID] = rb
	}
	if d := byID["rb-1"].Detail; !strings.Contains(d, "left alone: oncall@ops now holds it") {
		t.Errorf("openai: %q", d)
	}
	if d := byID["rb-2"].Detail; !strings.Contains(d, "left alone: it is at version") {
		t.Errorf("core-api: %q", d)
	}
	if o, err := e.ov.Get(ctx, "openai"); err != nil || o.Actor != "oncall@ops" {
		t.Errorf("someone else's override was touched: %+v %v", o, err)
	}
	if !e.store.has(breaker.OverrideKey("core-api")) {
		t.Error("an override moved since the drill wrote it was cleared")
	}
	if st, err := e.bk.Get(ctx, "agent-1"); err != nil || !st.Full() {
		t.Errorf("bucket after recovery: %+v %v", st, err)
	}
	var audited bool
	for _, r := range e.auditRecords() {
		audited = audited || (r.Action == ActionRecover && r.Actor == "recoverer@ops" && strings.Contains(r.Reason, "run "+j.RunID))
	}
	if !audited || len(j.Recoveries) != 1 {
		t.Errorf("recovery not recorded: audited %v, recoveries %+v", audited, j.Recoveries)
	}
	// Idempotent: nothing is pending any more.
	if again := (&Recovery{Deps: e.svc}).Run(ctx, j); again != nil || len(j.Recoveries) != 1 {
		t.Errorf("second recovery: %+v", again)
	}
}

// The drill's own override, unchanged since it was written, is cleared by
// a recovery that someone else runs (the run's actor is the journal's).
func TestRecoveryClearsTheDrillsOwnOverride(t *testing.T) {
	e := newEnv(t)
	j := abandonedRun(t, e, twoLevers)
	e.svc.Actor = "someone-else@ops"
	rec := (&Recovery{Deps: e.svc}).Run(context.Background(), j)
	if rec == nil || !rec.OK {
		t.Fatalf("recovery %+v: %+v", rec, j.Rollbacks)
	}
	if e.store.has(breaker.OverrideKey("openai")) || e.store.has(breaker.OverrideKey("core-api")) {
		t.Errorf("overrides left: %+v", j.Rollbacks)
	}
}
