package runner

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
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
	rec, err := (&Recovery{Deps: e.svc, Trail: e.log, Log: func(s string) { lines = append(lines, s) }}).Run(ctx, j)
	if err != nil {
		t.Fatal(err)
	}
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
	if d := byID["rb-2"].Detail; !strings.Contains(d, "not the write the audit trail names as run") {
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
	if again, err := (&Recovery{Deps: e.svc, Trail: e.log}).Run(ctx, j); again != nil || err != nil || len(j.Recoveries) != 1 {
		t.Errorf("second recovery: %+v", again)
	}
}

// The drill's own override, unchanged since it was written, is cleared by
// a recovery that someone else runs (the run's actor is the journal's).
func TestRecoveryClearsTheDrillsOwnOverride(t *testing.T) {
	e := newEnv(t)
	j := abandonedRun(t, e, twoLevers)
	e.svc.Actor = "someone-else@ops"
	rec, err := (&Recovery{Deps: e.svc, Trail: e.log}).Run(context.Background(), j)
	if err != nil || rec == nil || !rec.OK {
		t.Fatalf("recovery %+v: %+v", rec, j.Rollbacks)
	}
	if e.store.has(breaker.OverrideKey("openai")) || e.store.has(breaker.OverrideKey("core-api")) {
		t.Errorf("overrides left: %+v", j.Rollbacks)
	}
}

// Rollbacks whose audit records are refused (a clear's claim is stored)
// are made once, not retried into "already clear": each is unaudited, a
// clear names the audit repair that writes its record from the claim, and
// none is pending again; the recovery is not ok and says why. The run's
// journal, as a SIGKILL left it (running), then says killed, exit 8:
// every lever restored, a record missing.
func TestRecoveryClearWithoutItsRecordIsUnauditedWithItsRepair(t *testing.T) {
	e := newEnv(t)
	j := abandonedRun(t, e, twoLevers)
	j.Outcome = drill.OutcomeRunning
	e.store.mu.Lock()
	e.store.denyPut, e.store.allowPut = audit.Prefix, audit.ClaimPrefix
	e.store.mu.Unlock()
	var lines []string
	rec, err := (&Recovery{Deps: e.svc, Trail: e.log, Log: func(s string) { lines = append(lines, s) }}).Run(context.Background(), j)
	if err != nil || rec == nil || rec.OK || !strings.Contains(rec.Detail, "0 ok, 3 restored but not audited") {
		t.Fatalf("recovery %+v, %v: want not ok, three restored but not audited", rec, err)
	}
	for _, rb := range j.Rollbacks {
		if !strings.HasPrefix(rb.Subject, breaker.OverridePrefix) {
			// A bucket's change has no audit repair.
			if rb.Status != drill.StatusUnaudited || rb.Attempts != 1 || !strings.Contains(rb.Error, "no audit repair can write it") {
				t.Errorf("rollback %s: status %q, %d attempts, error %q; want unaudited once, by hand", rb.ID, rb.Status, rb.Attempts, rb.Error)
			}
			continue
		}
		if rb.Status != drill.StatusUnaudited || rb.Attempts != 1 || rb.Detail != "cleared, but its audit record was not written" ||
			!strings.Contains(rb.Error, "audit repair '"+rb.Subject+"' --write-id ") {
			t.Errorf("rollback %s: status %q, %d attempts, detail %q, error %q; want unaudited once, with its repair", rb.ID, rb.Status, rb.Attempts, rb.Detail, rb.Error)
		}
		if e.store.has(rb.Subject) {
			t.Errorf("%s still stored", rb.Subject)
		}
	}
	if !j.RollbacksOK || len(Pending(j)) != 0 {
		t.Errorf("rollbacks ok %v, pending %v: want every lever restored and nothing pending", j.RollbacksOK, Pending(j))
	}
	if j.Outcome != OutcomeKilled || j.ExitCode != drill.ExitUnaudited {
		t.Errorf("journal outcome %s, exit %d; want killed, exit %d", j.Outcome, j.ExitCode, drill.ExitUnaudited)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "UNAUDITED ") || strings.Contains(l, "already clear") {
			t.Errorf("log line %q, want UNAUDITED", l)
		}
	}
}

const replaceAlice = `
name: replace
timeout: 10m
steps:
  - breaker.force-open: {dependency: openai, overwrite: true}
`

// A restore takes the override the drill replaced from the audit record's
// before-image, through the rules of any new override: one that never
// expires needs the operator's confirmation (recover --yes), and one that
// lapses past the context's max-override is not written.
func TestRecoveredRestoreFollowsTheOverrideRules(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		expires time.Duration // 0: never
		max     time.Duration
		yes     bool
		want    string // the rollback's error; "" restores alice's
	}{
		{name: "no expiry, unconfirmed", want: "needs confirmation (--yes)"},
		{name: "no expiry, --yes", yes: true},
		{name: "past max-override", expires: 3 * time.Hour, max: time.Hour, want: "over this context's max-override of 1h0m0s"},
		{name: "within max-override", expires: 30 * time.Minute, max: time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			req := breaker.ForceRequest{Dependency: "openai", Reason: "real incident", Actor: "alice@ops"}
			if tc.expires > 0 {
				req.For = tc.expires
			}
			if _, err := e.ov.Force(ctx, req); err != nil {
				t.Fatal(err)
			}
			j := abandonedRun(t, e, replaceAlice)
			e.svc.MaxOverride = tc.max
			rec, err := (&Recovery{Deps: e.svc, Trail: e.log, AllowNoExpiry: tc.yes}).Run(ctx, j)
			if err != nil {
				t.Fatal(err)
			}
			cur, gerr := e.ov.Get(ctx, "openai")
			if gerr != nil {
				t.Fatal(gerr)
			}
			if tc.want == "" {
				if !rec.OK || cur.Actor != "alice@ops" || cur.Reason != "real incident" {
					t.Fatalf("not restored: %+v; override %+v", j.Rollbacks, cur)
				}
				return
			}
			if rec.OK || !strings.Contains(j.Rollbacks[0].Error, tc.want) {
				t.Fatalf("rollback %+v, want it failed with %q", j.Rollbacks[0], tc.want)
			}
			if cur.Actor != "tester@test" {
				t.Errorf("the refused restore wrote the override: %+v", cur)
			}
		})
	}
}

// Every record a run writes names it (run_id), and the recovery's too.
func TestRunAndRecoveryRecordsCarryTheRunID(t *testing.T) {
	e := newEnv(t)
	j := abandonedRun(t, e, twoLevers)
	if _, err := (&Recovery{Deps: e.svc, Trail: e.log}).Run(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	recs := e.auditRecords()
	if len(recs) < 7 { // 3 levers, 3 rollbacks, the recovery
		t.Fatalf("%d records: %+v", len(recs), recs)
	}
	for _, r := range recs {
		if r.RunID != j.RunID {
			t.Errorf("record %s %s: run_id %q, want %q", r.Action, r.Subject, r.RunID, j.RunID)
		}
	}
}
