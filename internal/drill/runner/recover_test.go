package runner

import (
	"context"
	"encoding/json"
	"github.com/kosha-platform/koshactl/internal/drill/drilltest"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/lever/levertest"
	"strings"
	"testing"
	"testing/synctest"
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
	r := &Runner{Deps: e.Deps, RollbackContext: gone}
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
		if rb.Lever == nil || (rb.Lever.Kind == drill.LeverOverride && rb.Lever.WriteID == "") {
			t.Fatalf("journal lacks what recover needs: %+v", rb)
		}
	}
	ctx := context.Background()
	// Meanwhile someone else takes openai over, and core-api's override
	// is re-written (same actor and run tag, a later version).
	if _, _, err := levertest.Force(ctx, e.Table, e.Clock, e.Audit, levertest.Req{Dependency: "openai", Reason: "real incident", Actor: "oncall@ops", For: time.Hour, Overwrite: true}); err != nil {
		t.Fatal(err)
	}
	cur, err := e.Overrides.Get(ctx, "core-api")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := levertest.Force(ctx, e.Table, e.Clock, e.Audit, levertest.Req{Dependency: "core-api", Reason: cur.Reason, Actor: cur.Actor, For: time.Hour, Overwrite: true}); err != nil {
		t.Fatal(err)
	}
	e.Deps.Actor = "recoverer@ops"
	var lines []string
	rec, err := (&Recovery{Deps: e.Deps, Trail: e.Audit, Log: func(s string) { lines = append(lines, s) }}).Run(ctx, j)
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
	if d := byID["rb-2"].Detail; !strings.Contains(d, "not a write the audit trail records as run "+j.RunID) {
		t.Errorf("core-api: %q", d)
	}
	if o, err := e.Overrides.Get(ctx, "openai"); err != nil || o.Actor != "oncall@ops" {
		t.Errorf("someone else's override was touched: %+v %v", o, err)
	}
	if !e.Store.Has(breaker.OverrideKey("core-api")) {
		t.Error("an override moved since the drill wrote it was cleared")
	}
	if st, err := e.Buckets.Get(ctx, "agent-1"); err != nil || !st.Full() {
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
	if again, err := (&Recovery{Deps: e.Deps, Trail: e.Audit}).Run(ctx, j); again != nil || err != nil || len(j.Recoveries) != 1 {
		t.Errorf("second recovery: %+v", again)
	}
}

// The drill's own override, unchanged since it was written, is cleared by
// a recovery that someone else runs (the run's actor is the journal's).
func TestRecoveryClearsTheDrillsOwnOverride(t *testing.T) {
	e := newEnv(t)
	j := abandonedRun(t, e, twoLevers)
	e.Deps.Actor = "someone-else@ops"
	rec, err := (&Recovery{Deps: e.Deps, Trail: e.Audit}).Run(context.Background(), j)
	if err != nil || rec == nil || !rec.OK {
		t.Fatalf("recovery %+v: %+v", rec, j.Rollbacks)
	}
	if e.Store.Has(breaker.OverrideKey("openai")) || e.Store.Has(breaker.OverrideKey("core-api")) {
		t.Errorf("overrides left: %+v", j.Rollbacks)
	}
}

// A rollback whose audit record the store refuses changes nothing: a
// lever's change and its record are one transaction. The recovery's
// override rollbacks fail (each drill override stays as it was, its
// rollback pending again), the journal of the killed run says exit 9; a
// later recovery, the records allowed again, restores them, each with
// exactly one record.
func TestRecoveryWhoseRecordsAreRefusedChangesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		j := abandonedRun(t, e, twoLevers)
		j.Outcome = drill.OutcomeRunning
		e.Store.Inject(func() {
			e.Store.DenyPut = audit.Prefix
		})
		rec, err := (&Recovery{Deps: e.Deps, Trail: e.Audit}).Run(context.Background(), j)
		if err != nil || rec == nil || rec.OK {
			t.Fatalf("recovery %+v, %v: want not ok", rec, err)
		}
		for _, rb := range j.Rollbacks {
			if !strings.HasPrefix(rb.Subject, breaker.OverridePrefix) {
				continue // a bucket's change is ratelimit's (branch rl)
			}
			if rb.Status != drill.StatusFailed || strings.Contains(rb.Error, "repair") || strings.Contains(strings.ToLower(rb.Error), "audited") {
				t.Errorf("rollback %s: status %q, error %q; want failed, nothing said of a repair", rb.ID, rb.Status, rb.Error)
			}
			if !e.Store.Has(rb.Subject) {
				t.Errorf("%s was cleared without its record", rb.Subject)
			}
		}
		if j.RollbacksOK || j.Outcome != drill.OutcomeKilled || j.ExitCode != exitcode.Rollback {
			t.Errorf("journal rollbacks ok %v, outcome %s, exit %d; want false, killed, 9", j.RollbacksOK, j.Outcome, j.ExitCode)
		}
		if n := countAction(e, breaker.ActionClear); n != 0 {
			t.Errorf("%d clear records written by a refused recovery", n)
		}

		e.Store.Inject(func() {
			e.Store.DenyPut = ""
		})
		if len(Pending(j)) == 0 {
			t.Fatal("the failed rollbacks are not pending again")
		}
		if rec, err := (&Recovery{Deps: e.Deps, Trail: e.Audit}).Run(context.Background(), j); err != nil || rec == nil || !rec.OK {
			t.Fatalf("second recovery %+v, %v: %+v", rec, err, j.Rollbacks)
		}
		for _, dep := range []string{"openai", "core-api"} {
			if e.Store.Has(breaker.OverrideKey(dep)) {
				t.Errorf("%s still forced after the second recovery", dep)
			}
		}
		if n := countAction(e, breaker.ActionClear); n != 2 {
			t.Errorf("%d clear records, want one per override", n)
		}
	})
}

// countAction counts the audit records of action.
func countAction(e *env, action string) int {
	n := 0
	for _, r := range e.auditRecords() {
		if r.Action == action {
			n++
		}
	}
	return n
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
		{name: "past max-override", expires: 3 * time.Hour, max: time.Hour, want: "over this context's max-override of 1h"},
		{name: "within max-override", expires: 30 * time.Minute, max: time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			req := levertest.Req{Dependency: "openai", Reason: "real incident", Actor: "alice@ops", NoExpiry: true}
			if tc.expires > 0 {
				req.For = tc.expires
			}
			if _, _, err := levertest.Force(ctx, e.Table, e.Clock, e.Audit, req); err != nil {
				t.Fatal(err)
			}
			j := abandonedRun(t, e, replaceAlice)
			e.Deps.Levers = drilltest.Levers(e.Table, e.Clock, e.Overrides.WithDurations(breaker.DurationPolicy{Max: tc.max}), e.Buckets)
			rec, err := (&Recovery{Deps: e.Deps, Trail: e.Audit, AllowNoExpiry: tc.yes}).Run(ctx, j)
			if err != nil {
				t.Fatal(err)
			}
			cur, gerr := e.Overrides.Get(ctx, "openai")
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
	if _, err := (&Recovery{Deps: e.Deps, Trail: e.Audit}).Run(context.Background(), j); err != nil {
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
