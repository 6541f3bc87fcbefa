package ratelimit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo/dynamotest"
	"github.com/kosha-platform/koshactl/internal/testutil/faultproxy"
)

// interruptFixture is a store behind a fault proxy (one attempt per request),
// buckets and an audit log on it, and alice's bucket drained.
func interruptFixture(t *testing.T) (*faultproxy.Proxy, store.Store, *ratelimit.Buckets, *audit.Log) {
	t.Helper()
	p := faultproxy.Start(t, motoURL(t))
	s := dynamotest.NewStore(t, p.URL())
	clk := clock.NewFake(time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC))
	b, err := ratelimit.NewBuckets(s, clk, ratelimit.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	log := audit.NewLog(s, clk, "test")
	if _, err := b.Apply(context.Background(), ratelimit.Change{Op: ratelimit.OpDrain, Client: "alice"}); err != nil {
		t.Fatal(err)
	}
	return p, s, b, log
}

// resetInterrupted resets alice while the next PutItem is hit by fault, and
// cancels the context once the proxy holds it.
func resetInterrupted(t *testing.T, p *faultproxy.Proxy, b *ratelimit.Buckets, log *audit.Log, fault faultproxy.Fault) (ratelimit.ChangeResult, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p.LoseNext("PutItem", 1, fault)
	go func() {
		if fault == faultproxy.Stall {
			p.WaitStalled(t, "PutItem", p.Stalled("PutItem")+1)
		} else {
			p.WaitLost(t, "PutItem", p.Lost("PutItem")+1)
		}
		cancel()
	}()
	res, _, err := b.ApplyAudited(ctx, log, "me", "incident", ratelimit.Change{Op: ratelimit.OpReset, Client: "alice"})
	return res, err
}

func records(t *testing.T, log *audit.Log, subject string) []audit.Record {
	t.Helper()
	l, err := log.List(context.Background(), audit.Query{Subject: subject, Scan: true})
	if err != nil {
		t.Fatal(err)
	}
	return l.Records
}

// An interrupt while the reset is in flight (the store applied it, its
// answer held): the re-read on a context of its own finds the write's token,
// so the reset is reported confirmed, and its record, which the interrupt
// stopped, is the exit-8 repair: run, it writes exactly one record; run
// again, none.
func TestResetInterruptedInFlightIsConfirmedAndRepairableOnce(t *testing.T) {
	t.Parallel()
	p, s, b, log := interruptFixture(t)
	res, err := resetInterrupted(t, p, b, log, faultproxy.Withhold)
	var unwritten *audit.UnwrittenError
	if !res.Confirmed || !errors.As(err, &unwritten) || unwritten.WriteID != res.WriteID || unwritten.Subject != "rl#alice" || !unwritten.Repairable() {
		t.Fatalf("reset interrupted in flight: confirmed %v, err %v; want confirmed, its record the repair of write %s", res.Confirmed, err, res.WriteID)
	}
	if it, err := s.Get(context.Background(), "rl#alice"); err != nil || it.WriteID() != res.WriteID {
		t.Fatalf("stored bucket %v, %v; want the interrupted write's", it, err)
	}
	if got := records(t, log, "rl#alice"); len(got) != 0 {
		t.Fatalf("records before the repair: %+v, want none (the interrupt stopped the append)", got)
	}
	rec, written, err := b.RepairAudit(context.Background(), log, "alice", unwritten.WriteID, "fixer")
	if err != nil || !written || rec.Action != ratelimit.ActionReset || rec.Actor != "me" || rec.Reason != "incident" || rec.RepairedBy != "fixer" {
		t.Fatalf("repair: %+v, written %v, %v; want the reset's record written", rec, written, err)
	}
	if _, written, err := b.RepairAudit(context.Background(), log, "alice", unwritten.WriteID, "fixer"); err != nil || written {
		t.Fatalf("second repair: written %v, %v; want nothing written", written, err)
	}
	if got := records(t, log, "rl#alice"); len(got) != 1 || len(got[0].Before) == 0 || len(got[0].After) == 0 {
		t.Fatalf("records after two repairs: %+v, want exactly one, with before and after", got)
	}
	if _, _, err := b.RepairAudit(context.Background(), log, "bob", unwritten.WriteID, "fixer"); !errors.Is(err, ratelimit.ErrNothingToRepair) {
		t.Fatalf("repair under another client: %v, want nothing to repair", err)
	}
}

// A repair named with another client's subject is refused before anything
// is written: the claimed change of alice stays unrecorded until its own
// repair writes it.
func TestRepairUnderAnotherClientWritesNothing(t *testing.T) {
	t.Parallel()
	p, _, b, log := interruptFixture(t)
	_, err := resetInterrupted(t, p, b, log, faultproxy.Withhold)
	var unwritten *audit.UnwrittenError
	if !errors.As(err, &unwritten) || !unwritten.Repairable() {
		t.Fatalf("reset interrupted in flight: %v, want a repairable unwritten record", err)
	}
	if _, _, err := b.RepairAudit(context.Background(), log, "bob", unwritten.WriteID, "fixer"); !errors.Is(err, ratelimit.ErrNothingToRepair) {
		t.Fatalf("repair under another client: %v, want nothing to repair", err)
	}
	if got := append(records(t, log, "rl#alice"), records(t, log, "rl#bob")...); len(got) != 0 {
		t.Fatalf("records after a repair under the wrong client: %+v, want none", got)
	}
}

// An interrupt while the request has not reached the store: the re-read
// shows the bucket as read, so nothing was changed, and the error is the
// cancellation (exit 130), never a change without its record.
func TestResetInterruptedBeforeTheStoreChangesNothing(t *testing.T) {
	t.Parallel()
	p, s, b, log := interruptFixture(t)
	before, err := s.Get(context.Background(), "rl#alice")
	if err != nil {
		t.Fatal(err)
	}
	res, err := resetInterrupted(t, p, b, log, faultproxy.Stall)
	if res.Confirmed || !errors.Is(err, context.Canceled) || errors.Is(err, audit.ErrAuditWrite) {
		t.Fatalf("reset interrupted before the store: confirmed %v, err %v; want canceled, nothing changed", res.Confirmed, err)
	}
	if after, err := s.Get(context.Background(), "rl#alice"); err != nil || after.WriteID() != before.WriteID() {
		t.Fatalf("bucket after: %v, %v; want it as it was (%v)", after, err, before)
	}
	if got := records(t, log, "rl#alice"); len(got) != 0 {
		t.Fatalf("records: %+v, want none", got)
	}
}

// An interrupt in flight whose re-read also fails: the outcome is unknown,
// said so (exit 8, never "canceled"), with how to check.
func TestResetInterruptedWithTheRereadFailingIsUnknown(t *testing.T) {
	t.Parallel()
	p, _, b, log := interruptFixture(t)
	p.LoseNext("GetItem", 2, faultproxy.Reset) // the apply's own read is the next
	res, err := resetInterrupted(t, p, b, log, faultproxy.Withhold)
	if res.Confirmed || !errors.Is(err, ratelimit.ErrOutcomeUnknown) || !errors.Is(err, audit.ErrAuditWrite) {
		t.Fatalf("reset interrupted, re-read failed: confirmed %v, err %v; want the outcome unknown", res.Confirmed, err)
	}
	var unwritten *audit.UnwrittenError
	if errors.As(err, &unwritten) {
		t.Fatalf("an unknown outcome names a repair: %v", err)
	}
	if p.Lost("GetItem") != 1 {
		t.Fatalf("lost %d GetItem answers, want 1 (the re-read)", p.Lost("GetItem"))
	}
}
