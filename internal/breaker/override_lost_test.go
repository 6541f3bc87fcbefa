package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo/dynamotest"
	"github.com/kosha-platform/koshactl/internal/testutil/faultproxy"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// records lists every audit record of subject.
func records(t *testing.T, log *audit.Log, subject string) []audit.Record {
	t.Helper()
	l, err := log.List(context.Background(), audit.Query{Scan: true, Subject: subject})
	if err != nil {
		t.Fatal(err)
	}
	return l.Records
}

// Every way an answer can go missing, for a force and for a clear: the
// connection reset after the transaction applied, the answer withheld
// until the client gives up, and the request stalled and the caller
// interrupted. Each change is confirmed, with exactly one record, never
// "unaudited": the record was written in the same transaction.
func TestLostAnswersAreConfirmedWithExactlyOneRecord(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		fault     faultproxy.Fault
		interrupt bool
	}{
		{"reset after apply", faultproxy.Reset, false},
		{"answer withheld, caller interrupted", faultproxy.Withhold, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := faultproxy.Start(t, moto.Start(t))
			s := dynamotest.NewStore(t, p.URL()) // one attempt per request
			clk := clocktest.NewFake(t0)
			ov := newLevers(s, clk)
			log := audit.NewLog(s, clk, "test")
			lose := func() context.Context {
				p.LoseNext("TransactWriteItems", 1, tc.fault)
				if !tc.interrupt {
					return context.Background()
				}
				ctx, cancel := context.WithCancel(context.Background())
				t.Cleanup(cancel)
				seen := p.Lost("TransactWriteItems")
				go func() {
					p.WaitLost(t, "TransactWriteItems", seen+1)
					cancel()
				}()
				return ctx
			}
			res, o, err := ov.WithLog(log).ForceOne(lose(), forceReq{Dependency: "openai", Reason: "incident", Actor: "me", For: time.Hour})
			if err != nil || !o.Confirmed || o.Record.ID == "" {
				t.Fatalf("force with its answer lost: confirmed %v, record %q, err %v; want confirmed and recorded", o.Confirmed, o.Record.ID, err)
			}
			if got, err := ov.Get(context.Background(), "openai"); err != nil || got.WriteID != res.After.WriteID || got.WriteID != o.Record.Change {
				t.Fatalf("stored override %+v, %v; want the change's token %q, the record's too", got, err, o.Record.Change)
			}
			cr, co, err := ov.WithLog(log).ClearOne(lose(), "openai", "me", "over")
			if err != nil || cr.Before == nil || !co.Confirmed || co.Record.ID == "" {
				t.Fatalf("clear with its answer lost: %+v, record %q, err %v; want cleared, confirmed and recorded", cr, co.Record.ID, err)
			}
			if _, err := ov.Get(context.Background(), "openai"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("override after the clear: %v, want not found", err)
			}
			if recs := records(t, log, "breaker#openai"); len(recs) != 2 {
				t.Fatalf("%d records of openai, want exactly 2 (the force and the clear): %+v", len(recs), recs)
			}
			if p.Lost("TransactWriteItems") != 2 {
				t.Fatalf("lost %d answers, want 2", p.Lost("TransactWriteItems"))
			}
		})
	}
}

// A request stalled before it reached the store, and the caller
// interrupted: the change is re-issued on a context of its own, so it is
// settled (here: applied once, recorded once), never left behind a
// "context canceled".
func TestAStalledChangeInterruptedIsSettled(t *testing.T) {
	t.Parallel()
	p := faultproxy.Start(t, moto.Start(t))
	s := dynamotest.NewStore(t, p.URL())
	clk := clocktest.NewFake(t0)
	ov := newLevers(s, clk)
	log := audit.NewLog(s, clk, "test")
	p.LoseNext("TransactWriteItems", 1, faultproxy.Stall)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		p.WaitStalled(t, "TransactWriteItems", 1)
		cancel()
	}()
	res, o, err := ov.WithLog(log).ForceOne(ctx, forceReq{Dependency: "openai", Reason: "incident", Actor: "me", For: time.Hour})
	if err != nil || o.Record.ID == "" {
		t.Fatalf("force stalled and interrupted: %+v, %v", res, err)
	}
	if recs := records(t, log, "breaker#openai"); len(recs) != 1 {
		t.Fatalf("%d records, want exactly 1", len(recs))
	}
}

// A store that cannot be reached at all, neither for the change nor for
// settling it: the one unknown outcome, with the command that tells.
func TestAnUnreachableStoreIsAnUnknownOutcome(t *testing.T) {
	t.Parallel()
	p := faultproxy.Start(t, moto.Start(t))
	s := dynamotest.NewStore(t, p.URL())
	clk := clocktest.NewFake(t0)
	ov := newLevers(s, clk)
	p.LoseNext("TransactWriteItems", 1, faultproxy.Reset)
	p.LoseNext("GetItem", 1, faultproxy.Reset)
	_, _, err := ov.WithLog(audit.NewLog(s, clk, "test")).ForceOne(context.Background(),
		forceReq{Dependency: "openai", Reason: "incident", Actor: "me", For: time.Hour})
	if !errors.Is(err, store.ErrOutcomeUnknown) || errors.Is(err, audit.ErrAuditWrite) {
		t.Fatalf("force on an unreachable store: %v; want the unknown outcome, never an audit failure", err)
	}
	if want := "koshactl breaker get openai"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say how to check (%s)", err, want)
	}
}

// Two operators race on one dependency for 20 rounds, each forcing it
// (overwriting) and clearing: every round has one winner per lever pull
// and exactly one record for each change that landed.
func TestTwoOperatorsRacingRecordEachChangeOnce(t *testing.T) {
	t.Parallel()
	for name, s := range map[string]store.Store{"sqlite": openStore(t), "dynamo": dynamotest.NewStore(t, endpoint)} {
		t.Run(name, func(t *testing.T) {
			clk := clocktest.NewFake(t0)
			ov := newLevers(s, clk)
			log := audit.NewLog(s, clk, "race")
			landed := 0
			for round := range 20 {
				var wg sync.WaitGroup
				errs := make([]error, 2)
				for i := range 2 {
					wg.Go(func() {
						_, _, errs[i] = ov.WithLog(log).ForceOne(t.Context(), forceReq{Dependency: "openai",
							Reason: fmt.Sprintf("round %d", round), Actor: fmt.Sprintf("op%d", i), For: time.Hour})
					})
				}
				wg.Wait()
				wins := 0
				for _, err := range errs {
					switch {
					case err == nil:
						wins++
					case !errors.Is(err, breaker.ErrConflict):
						t.Fatalf("round %d: %v, want a win or a conflict", round, err)
					}
				}
				if wins != 1 {
					t.Fatalf("round %d: %d forces won, want 1", round, wins)
				}
				landed++
				for i := range 2 {
					wg.Go(func() {
						_, _, errs[i] = ov.WithLog(log).ClearOne(t.Context(), "openai", fmt.Sprintf("op%d", i), "done")
					})
				}
				wg.Wait()
				cleared := 0
				for _, err := range errs {
					if err == nil {
						cleared++
					} else if !errors.Is(err, breaker.ErrConflict) {
						t.Fatalf("round %d clear: %v", round, err)
					}
				}
				if cleared == 0 {
					t.Fatalf("round %d: no clear succeeded", round)
				}
			}
			forces, clears := 0, 0
			for _, r := range records(t, log, "breaker#openai") {
				switch r.Action {
				case breaker.ActionForceOpen:
					forces++
				case breaker.ActionClear:
					clears++
				}
			}
			if forces != landed || clears != landed {
				t.Errorf("%d force and %d clear records for %d rounds, want one of each per round", forces, clears, landed)
			}
		})
	}
}

// A claim an older koshactl (or anyone with PutItem on audit#) planted
// beside an override changes nothing: the clear writes its own record, in
// its own transaction.
func TestAPlantedClaimHidesNoClear(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	clk := clocktest.NewFake(t0)
	ov := newLevers(s, clk)
	log := audit.NewLog(s, clk, "test")
	res, _, err := ov.WithLog(log).ForceOne(t.Context(), forceReq{Dependency: "openai", Reason: "incident", Actor: "alice", For: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	planted := store.Item{store.PK: "audit#claim#" + res.After.WriteID, "record": "audit#0000000000000#feedfacefeedface",
		"actor": "bob", "action": breaker.ActionClear, "subject": "breaker#openai"}
	if err := s.Put(t.Context(), planted, store.Always()); err != nil {
		t.Fatal(err)
	}
	cr, o, err := ov.WithLog(log).ClearOne(t.Context(), "openai", "carol", "recovered")
	if err != nil || cr.Before == nil || o.Record.Actor != "carol" {
		t.Fatalf("clear beside a planted claim: %+v, record %+v, %v; want carol's clear recorded", cr, o.Record, err)
	}
	recs := records(t, log, "breaker#openai")
	byActor := map[string]string{}
	for _, r := range recs {
		byActor[r.Actor] = r.Action
	}
	if len(recs) != 2 || byActor["carol"] != breaker.ActionClear || byActor["alice"] != breaker.ActionForceOpen {
		t.Fatalf("records %+v: want alice's force and carol's clear, the claim never listed", recs)
	}
}

// force-open a b c with b re-forced by someone else between the read and
// the write: one transaction, so none of them is written, and the error
// says which one conflicted.
func TestARaceOnOneDependencyChangesNone(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	clk := clocktest.NewFake(t0)
	ov := newLevers(s, clk)
	log := audit.NewLog(s, clk, "test")
	rep, err := lever.Do(t.Context(), ov.WithLog(log).svc(), forceAll("alice", "a", "b", "c"), func(*lever.Planned) error {
		_, _, err := ov.WithLog(log).ForceOne(t.Context(), forceReq{Dependency: "b", Reason: "mine", Actor: "bob", For: time.Hour})
		return err
	})
	outs := rep.Outcomes
	if err == nil || len(outs) != 3 {
		t.Fatalf("ForceAll racing bob on b: %+v, %v; want it refused", outs, err)
	}
	var ce *breaker.ConflictError
	if !errors.As(outs[1].Err, &ce) || ce.Current.Actor != "bob" {
		t.Errorf("b's outcome: %v, want a conflict naming bob", outs[1].Err)
	}
	for _, i := range []int{0, 2} {
		if outs[i].Written || !errors.Is(outs[i].Err, lever.ErrNotWritten) || !strings.Contains(outs[i].Err.Error(), `"b"`) {
			t.Errorf("outcome %d: written %v, %v; want not written, naming b", i, outs[i].Written, outs[i].Err)
		}
	}
	for _, d := range []string{"a", "c"} {
		if _, err := ov.Get(t.Context(), d); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s was written although the change was refused: %v", d, err)
		}
	}
	if recs := records(t, log, "breaker#*"); len(recs) != 1 || recs[0].Actor != "bob" {
		t.Errorf("records %+v: want bob's alone", recs)
	}
}

// An override planted with a 2,100-byte write_id, and one of ~400 KB, are
// cleared with their records like any other: nothing about the item can
// make its clear unrecordable (the record keeps a summary of a before-image
// too large for it).
func TestHostileItemsAreClearedWithTheirRecords(t *testing.T) {
	t.Parallel()
	for name, s := range map[string]store.Store{"sqlite": openStore(t), "dynamo": dynamotest.NewStore(t, endpoint)} {
		t.Run(name, func(t *testing.T) {
			clk := clocktest.NewFake(t0)
			ov := newLevers(s, clk)
			log := audit.NewLog(s, clk, "test")
			base := func(dep string) store.Item {
				return store.Item{store.PK: breaker.OverrideKey(dep), "state": "forced_open", "reason": "r", "actor": "mallory",
					"created_at": t0.UnixMilli(), "version": int64(1)}
			}
			long := base("long-id")
			long[store.WriteIDAttr] = strings.Repeat("w", 2100)
			huge := base("huge")
			huge["padding"] = strings.Repeat("x", 390*1024)
			for _, it := range []store.Item{long, huge} {
				if err := s.Put(t.Context(), it, store.Always()); err != nil {
					t.Fatal(err)
				}
			}
			for _, dep := range []string{"long-id", "huge"} {
				res, o, err := ov.WithLog(log).ClearOne(t.Context(), dep, "carol", "cleanup")
				if err != nil || res.Before == nil || o.Record.ID == "" {
					t.Fatalf("clear of %s: %+v, record %q, %v; want cleared and recorded", dep, res, o.Record.ID, err)
				}
				if _, err := ov.Get(t.Context(), dep); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("%s is still stored: %v", dep, err)
				}
				if recs := records(t, log, breaker.OverrideKey(dep)); len(recs) != 1 || recs[0].Actor != "carol" {
					t.Errorf("records of %s: %+v, want carol's clear", dep, recs)
				}
			}
		})
	}
}
