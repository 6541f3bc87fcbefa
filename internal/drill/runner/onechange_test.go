package runner

import (
	"context"
	"encoding/json"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/lever/levertest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/store"
)

// A lever change and its audit record are one transaction: these tests
// are the drill's side of it (docs/contracts/store.md, "One change, one
// transaction").

const forceOnly = `
name: one-change
timeout: 10m
steps:
  - id: force
    breaker.force-open: {dependency: openai, for: 5m}
`

// atPhase runs f once when the run enters phase.
func atPhase(phase string, f func()) *recorder {
	return &recorder{on: func(ev Event) {
		if ev.Kind == EventPhase && ev.Phase == phase {
			f()
		}
	}}
}

func (e *env) records(action, subject string) []audit.Record {
	e.T.Helper()
	var out []audit.Record
	for _, r := range e.auditRecords() {
		if r.Action == action && r.Subject == subject {
			out = append(out, r)
		}
	}
	return out
}

// The answers of the force and of its rollback's clear are lost after
// both landed: each is settled as landed ("confirmed"), each has exactly
// one record, and the journal names exactly those two records.
func TestLeverAndRollbackWhoseAnswersAreLostAreConfirmedOnce(t *testing.T) {
	e := newEnv(t)
	e.Store.LostPut = breaker.OverridePrefix
	lose := atPhase(drill.PhaseRollback, func() {
		e.Store.Inject(func() {
			e.Store.LostPut = audit.Prefix // the clear puts only its record
		})
	})
	j, log := e.run(context.Background(), parse(t, forceOnly), lose)
	if j.ExitCode != exitcode.OK || !j.RollbacksOK {
		t.Fatalf("exit %d, rollbacks ok %v\n%s", j.ExitCode, j.RollbacksOK, log)
	}
	if d := stepByID(t, j, "force").Detail; !strings.Contains(d, store.ConfirmedNote) {
		t.Errorf("force detail %q, want it confirmed", d)
	}
	if d := j.Rollbacks[0].Detail; d != "cleared ("+store.ConfirmedNote+")" || j.Rollbacks[0].Attempts != 1 {
		t.Errorf("rollback %q after %d attempt(s), want cleared and confirmed at once", d, j.Rollbacks[0].Attempts)
	}
	forces, clears := e.records(breaker.ActionForceOpen, "breaker#openai"), e.records(breaker.ActionClear, "breaker#openai")
	if len(forces) != 1 || len(clears) != 1 {
		t.Fatalf("%d force and %d clear records, want one each", len(forces), len(clears))
	}
	if e.Store.Has(breaker.OverrideKey("openai")) {
		t.Error("the drill's override is still stored")
	}
	if len(j.Audit) != 2 || j.Audit[0].ID != forces[0].ID || j.Audit[1].ID != clears[0].ID {
		t.Errorf("journal audit refs %+v, want the force's %s then the clear's %s", j.Audit, forces[0].ID, clears[0].ID)
	}
}

// A force the store refuses whole (its record denied, as IAM would) writes
// nothing: the step fails, no audit ref is journaled, no rollback has
// anything to undo, and the run's exit is the step's failure, not 8 or 9.
func TestRefusedChangeIsNeitherWrittenNorJournaled(t *testing.T) {
	e := newEnv(t)
	e.Store.DenyPut = audit.Prefix
	j, log := e.run(context.Background(), parse(t, forceOnly))
	if j.ExitCode != exitcode.Error || !j.RollbacksOK || stepByID(t, j, "force").Status != drill.StatusFailed {
		t.Fatalf("exit %d, rollbacks ok %v\n%s", j.ExitCode, j.RollbacksOK, log)
	}
	if e.Store.Has(breaker.OverrideKey("openai")) {
		t.Error("the override was written without its record")
	}
	if len(j.Audit) != 0 {
		t.Errorf("journal names records of a change that failed: %+v", j.Audit)
	}
	if len(j.Rollbacks) != 1 || j.Rollbacks[0].Status != drill.StatusOK || !strings.Contains(j.Rollbacks[0].Detail, "nothing to undo") {
		t.Errorf("rollbacks %+v, want one with nothing to undo", j.Rollbacks)
	}
}

// A rollback whose store stops answering, and cannot be read to settle
// it, has an unknown outcome: it fails at once (not retried into
// "already"), its one line says to check with breaker get, and the run
// exits 9 with the lever reported as not restored.
func TestRollbackWhoseOutcomeIsUnknownFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		down := atPhase(drill.PhaseRollback, func() {
			e.Store.Inject(func() {
				e.Store.FailDelete, e.Store.FailGet = breaker.OverridePrefix, audit.Prefix
			})
		})
		j, log := e.run(context.Background(), parse(t, forceOnly), down)
		rb := j.Rollbacks[0]
		if j.ExitCode != exitcode.Rollback || j.RollbacksOK || rb.Status != drill.StatusFailed || rb.Attempts != 1 {
			t.Fatalf("exit %d, rollback %+v\n%s", j.ExitCode, rb, log)
		}
		if !strings.Contains(rb.Error, "outcome of the change is unknown") || !strings.HasSuffix(rb.Error, "check with koshactl breaker get openai") {
			t.Errorf("rollback error %q, want the outcome unknown and how to check", rb.Error)
		}
		if strings.Contains(log, "NOT AUDITED") || strings.Contains(log, "repair") {
			t.Errorf("live log speaks of an unaudited state:\n%s", log)
		}
	})
}

// Someone else forces the dependency during the run with the run's own
// actor and its run tag in the reason (a shared CI role): the override is
// not the drill's write (its write_id), so the rollback leaves it alone.
func TestRollbackTellsTheDrillsWriteByItsWriteID(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var runID string
	meddle := &recorder{on: func(ev Event) {
		if ev.Kind == EventStepDone && ev.Step.ID == "force" {
			cur, err := e.Overrides.Get(ctx, "openai")
			if err != nil {
				t.Error(err)
				return
			}
			runID = strings.Fields(strings.SplitN(cur.Reason, "run ", 2)[1])[0]
			if _, _, err := levertest.Force(ctx, e.Table, e.Clock, e.Audit, levertest.Req{Dependency: "openai", Reason: cur.Reason + " (again)", Actor: cur.Actor,
				For: time.Hour, Overwrite: true}); err != nil {
				t.Error(err)
			}
		}
	}}
	j, log := e.run(ctx, parse(t, forceOnly), meddle)
	if !j.RollbacksOK || !strings.Contains(j.Rollbacks[0].Detail, "left alone") {
		t.Fatalf("rollback %+v\n%s", j.Rollbacks, log)
	}
	o, err := e.Overrides.Get(ctx, "openai")
	if err != nil || !strings.HasSuffix(o.Reason, "(again)") || !strings.Contains(o.Reason, "run "+runID) {
		t.Errorf("the other write was touched: %+v %v", o, err)
	}
	if w := j.Rollbacks[0].Lever; w == nil || w.WriteID == "" || w.WriteID == o.WriteID {
		t.Errorf("journal lever %+v: want the drill's own write_id, not the other write's %s", w, o.WriteID)
	}
}

// A clear step of someone else's override is undone only while the
// override is still absent: restored then, with one record.
func TestClearStepIsUndoneOnlyWhileStillAbsent(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, _, err := levertest.Force(ctx, e.Table, e.Clock, e.Audit, levertest.Req{Dependency: "openai", Reason: "real incident", Actor: "oncall@ops", For: time.Hour}); err != nil {
		t.Fatal(err)
	}
	d := parse(t, `
name: clear-theirs
timeout: 1m
steps:
  - id: clear
    breaker.clear: {dependency: openai}
`)
	j, log := e.run(ctx, d)
	if j.ExitCode != exitcode.OK || !strings.Contains(j.Rollbacks[0].Detail, "restored the override held by oncall@ops") {
		t.Fatalf("exit %d, rollbacks %+v\n%s", j.ExitCode, j.Rollbacks, log)
	}
	if o, err := e.Overrides.Get(ctx, "openai"); err != nil || o.Actor != "oncall@ops" || o.Reason != "real incident" {
		t.Errorf("restored %+v %v", o, err)
	}
	if n := len(e.records(breaker.ActionForceOpen, "breaker#openai")); n != 2 { // oncall's, the restore's
		t.Errorf("%d force-open records, want 2", n)
	}

	// Again, and someone forces it while the drill runs: left alone.
	meddle := &recorder{on: func(ev Event) {
		if ev.Kind == EventStepDone && ev.Step.ID == "clear" {
			if _, _, err := levertest.Force(ctx, e.Table, e.Clock, e.Audit, levertest.Req{Dependency: "openai", Reason: "second incident", Actor: "bob@ops", For: time.Hour}); err != nil {
				t.Error(err)
			}
		}
	}}
	j, log = e.run(ctx, d, meddle)
	if !j.RollbacksOK || !strings.Contains(j.Rollbacks[0].Detail, "left alone: bob@ops") {
		t.Fatalf("rollbacks %+v\n%s", j.Rollbacks, log)
	}
	if o, err := e.Overrides.Get(ctx, "openai"); err != nil || o.Actor != "bob@ops" {
		t.Errorf("bob's override was touched: %+v %v", o, err)
	}
}

// plant writes an audit record as whoever may write one could: any
// run_id, change token and before-image it likes.
func (e *env) plant(r audit.Record) {
	e.T.Helper()
	if r.ID == "" {
		r.ID = "feedfacefeedface"
	}
	if r.Time.IsZero() {
		r.Time = e.Clock.Now().UTC().Truncate(time.Millisecond)
	}
	r.Context, r.Outcome = "test", "ok"
	if err := e.Store.Put(context.Background(), r.Item(), store.IfAbsent()); err != nil {
		e.T.Fatal(err)
	}
}

// mallory is the before-image a hostile record plants.
var mallory = map[string]any{"state": breaker.OverrideStateForcedOpen, "reason": "planted", "actor": "mallory@evil",
	"created_at": int64(1), "version": 1}

// drill recover restores from the run's own record of the change the
// item carries, whatever else the audit trail holds: a record planted with
// the run's run_id and a chosen before-image (under a change token of its
// own, or the journal pointing at it) changes nothing; one planted under
// the drill's own change token makes two differing records of one change,
// and the rollback writes nothing.
func TestRecoverRestoresOnlyFromTheRecordOfTheItemsChange(t *testing.T) {
	for _, tc := range []struct {
		name string
		// plant plants the hostile record; token is the drill's change's.
		plant func(e *env, runID, token string, j *drill.Journal)
		// restored: alice's override is back; else the drill's stays.
		restored bool
	}{
		{"planted record of its own change", func(e *env, runID, _ string, _ *drill.Journal) {
			e.plant(audit.Record{Actor: "tester@test", Action: breaker.ActionForceOpen, Subject: "breaker#openai", RunID: runID,
				Change: "0123456789abcdef0123456789abcdef", Before: mustJSON(e.T, mallory)})
		}, true},
		{"journal pointing at a planted record", func(e *env, runID, _ string, j *drill.Journal) {
			e.plant(audit.Record{Actor: "tester@test", Action: breaker.ActionForceOpen, Subject: "breaker#openai", RunID: runID,
				Change: "0123456789abcdef0123456789abcdef", Before: mustJSON(e.T, mallory)})
			j.Rollbacks[0].Lever.WriteID = "0123456789abcdef0123456789abcdef"
			j.Rollbacks[0].Lever.BeforeOverride = &drill.OverrideState{State: breaker.OverrideStateForcedOpen, Actor: "mallory@evil", Reason: "planted"}
		}, true},
		{"data plane's record of the drill's change", func(e *env, runID, token string, _ *drill.Journal) {
			// The data plane may write under audit#dp# only: its record
			// is ignored, even one naming the drill's own change.
			it := audit.Record{ID: "feedfacefeedface", Time: e.Clock.Now().UTC().Truncate(time.Millisecond), Actor: "tester@test",
				Action: breaker.ActionForceOpen, Subject: "breaker#openai", RunID: runID, Context: "test", Outcome: "ok",
				Change: token, Before: mustJSON(e.T, mallory)}.Item()
			it[store.PK] = strings.Replace(it.PK(), audit.Prefix, audit.DataPlanePrefix, 1)
			if err := e.Store.Put(context.Background(), it, store.IfAbsent()); err != nil {
				e.T.Fatal(err)
			}
		}, true},
		{"planted record of the drill's change", func(e *env, runID, token string, _ *drill.Journal) {
			e.plant(audit.Record{Actor: "tester@test", Action: breaker.ActionForceOpen, Subject: "breaker#openai", RunID: runID,
				Change: token, Before: mustJSON(e.T, mallory)})
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			if _, _, err := levertest.Force(ctx, e.Table, e.Clock, e.Audit, levertest.Req{Dependency: "openai", Reason: "real incident", Actor: "alice@ops", For: time.Hour}); err != nil {
				t.Fatal(err)
			}
			j := abandonedRun(t, e, replaceAlice)
			drillWrite, err := e.Overrides.Get(ctx, "openai")
			if err != nil || drillWrite.Actor != "tester@test" {
				t.Fatalf("the drill's override: %+v %v", drillWrite, err)
			}
			tc.plant(e, j.RunID, drillWrite.WriteID, j)
			rec, err := (&Recovery{Deps: e.Deps, Trail: e.Audit}).Run(ctx, j)
			if err != nil {
				t.Fatal(err)
			}
			cur, err := e.Overrides.Get(ctx, "openai")
			if err != nil {
				t.Fatal(err)
			}
			if cur.Actor == "mallory@evil" || cur.Reason == "planted" {
				t.Fatalf("recover restored the planted before-image: %+v", cur)
			}
			if tc.restored {
				if !rec.OK || cur.Actor != "alice@ops" || cur.Reason != "real incident" {
					t.Errorf("recovery %+v, override %+v: want alice's restored", j.Rollbacks, cur)
				}
				return
			}
			if rec.OK || cur.WriteID != drillWrite.WriteID || !strings.Contains(j.Rollbacks[0].Error, "differing records of change") {
				t.Errorf("recovery %+v, override %+v: want nothing written, the rollback failed", j.Rollbacks, cur)
			}
		})
	}
}

// An override someone else wrote after the run is left alone by recover,
// even with a record planted under its write_id claiming it for the run.
func TestRecoverLeavesAnotherWriteAloneWhateverIsPlanted(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	j := abandonedRun(t, e, forceOnly)
	theirs, _, err := levertest.Force(ctx, e.Table, e.Clock, e.Audit, levertest.Req{Dependency: "openai", Reason: "real incident", Actor: "oncall@ops", For: time.Hour, Overwrite: true})
	if err != nil {
		t.Fatal(err)
	}
	e.plant(audit.Record{Actor: "tester@test", Action: breaker.ActionForceOpen, Subject: "breaker#openai", RunID: j.RunID,
		Change: theirs.After.WriteID, Before: mustJSON(t, mallory)})
	if _, err := (&Recovery{Deps: e.Deps, Trail: e.Audit}).Run(ctx, j); err != nil {
		t.Fatal(err)
	}
	if cur, err := e.Overrides.Get(ctx, "openai"); err != nil || cur.WriteID != theirs.After.WriteID {
		t.Errorf("oncall's override was touched: %+v %v (rollbacks %+v)", cur, err, j.Rollbacks)
	}
}

func mustJSON(t testing.TB, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A run that cleared someone else's override and died: the override is
// absent, and an absent item carries no write_id proving nobody changed
// it since, so recover writes nothing from a record: the rollback fails
// and says how to restore it by hand.
func TestRecoverDoesNotRecreateAClearedOverrideFromARecord(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, _, err := levertest.Force(ctx, e.Table, e.Clock, e.Audit, levertest.Req{Dependency: "openai", Reason: "real incident", Actor: "alice@ops", For: time.Hour}); err != nil {
		t.Fatal(err)
	}
	j := abandonedRun(t, e, "name: clear\ntimeout: 10m\nsteps:\n  - breaker.clear: {dependency: openai}\n")
	rec, err := (&Recovery{Deps: e.Deps, Trail: e.Audit}).Run(ctx, j)
	if err != nil {
		t.Fatal(err)
	}
	if rec.OK || !strings.Contains(j.Rollbacks[0].Error, "restore it by hand with koshactl breaker force-open openai") {
		t.Errorf("recovery %+v, rollback %+v: want it failed, naming the restore by hand", rec, j.Rollbacks[0])
	}
	if e.Store.Has(breaker.OverrideKey("openai")) {
		t.Error("recover re-created the cleared override from an audit record")
	}
}
