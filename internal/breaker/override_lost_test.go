package breaker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo"
	"github.com/kosha-platform/koshactl/internal/store/dynamo/dynamotest"
	"github.com/kosha-platform/koshactl/internal/testutil/faultproxy"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// With no retry at all (one attempt), a lost answer is a send failure, not a
// refusal: the write still landed, and the re-read must say so, for a force
// and for a clear.
func TestLostAnswerWithoutRetryIsResolvedByTheReread(t *testing.T) {
	t.Parallel()
	p := faultproxy.Start(t, moto.Start(t))
	s := dynamotest.NewStore(t, p.URL()) // one attempt per request
	clk := clock.NewFake(time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC))
	ov := breaker.NewOverrides(s, clk)
	log := audit.NewLog(s, clk, "test")
	ctx := context.Background()

	p.LoseNext("PutItem", 1, faultproxy.Reset)
	res, rec, err := ov.ForceAudited(ctx, log, breaker.ForceRequest{Dependency: "openai", Reason: "incident", Actor: "me", For: time.Hour})
	if err != nil || !res.Confirmed || rec.ID == "" {
		t.Fatalf("force with its answer lost: confirmed %v, record %q, err %v; want confirmed and recorded", res.Confirmed, rec.ID, err)
	}
	got, err := ov.Get(ctx, "openai")
	if err != nil || got.WriteID != res.After.WriteID || got.WriteID == "" {
		t.Fatalf("stored override %+v, %v; want the write's token %q", got, err, res.After.WriteID)
	}

	p.LoseNext("DeleteItem", 1, faultproxy.Reset)
	cr, crec, err := ov.ClearAudited(ctx, log, "openai", "me", "over")
	if err != nil || cr.Before == nil || !cr.Confirmed || crec.ID == "" {
		t.Fatalf("clear with its answer lost: %+v, record %q, err %v; want cleared, confirmed and recorded", cr, crec.ID, err)
	}
	if _, err := ov.Get(ctx, "openai"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("override after the clear: %v, want not found", err)
	}
	if p.Lost("PutItem") != 1 || p.Lost("DeleteItem") != 1 {
		t.Fatalf("lost %d PutItem, %d DeleteItem answers; want 1 each", p.Lost("PutItem"), p.Lost("DeleteItem"))
	}
}

// A refusal on the first attempt, the item gone, is someone else's clear:
// "already clear", nothing recorded as this one's.
func TestClearRefusedOnFirstAttemptWithItemGoneIsAlreadyClear(t *testing.T) {
	t.Parallel()
	s := dynamotest.NewStore(t, moto.Start(t))
	clk := clock.NewFake(time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC))
	ov := breaker.NewOverrides(s, clk)
	ctx := context.Background()
	if _, err := ov.Force(ctx, breaker.ForceRequest{Dependency: "openai", Reason: "incident", Actor: "me", For: time.Hour}); err != nil {
		t.Fatal(err)
	}
	outs, err := ov.ClearAll(ctx, audit.NewLog(s, clk, "test"), breaker.ClearAll{Dependencies: []string{"openai"}, Reason: "x",
		Confirm: func([]breaker.ClearResult) error {
			// Someone else clears it between our read and our delete.
			return s.Delete(ctx, breaker.OverrideKey("openai"), store.IfPresent())
		}})
	if err != nil || len(outs) != 1 || outs[0].Written || outs[0].Result.Before != nil || outs[0].Result.Confirmed {
		t.Fatalf("clear after someone else's: %+v, %v; want already clear, nothing written", outs, err)
	}
}

// Two clears of one item: alice's delete lands and she records it; bob read
// the same item, and his delete's answer is lost (its refusal never came
// back), so his re-read finds the item gone, which his own delete may have
// done. The claim on the deleted item's write_id decides: alice's is there,
// so bob reports her clear and records nothing. Exactly one record.
func TestTwoClearsOfOneItemRecordItOnceAndTheLoserReportsTheOther(t *testing.T) {
	endpoint := moto.Start(t)
	p := faultproxy.Start(t, endpoint)
	direct := dynamotest.NewStore(t, endpoint)
	// bob's requests go through the proxy (one attempt each: a lost
	// answer is a failed send)
	bobStore := dynamo.NewFromConfig(moto.Config(t, p.URL()), direct.Table())
	clk := clock.NewFake(time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC))
	alice, bob := breaker.NewOverrides(direct, clk), breaker.NewOverrides(bobStore, clk)
	aliceLog, bobLog := audit.NewLog(direct, clk, "test"), audit.NewLog(bobStore, clk, "test")
	ctx := context.Background()
	if _, _, err := alice.ForceAudited(ctx, aliceLog, breaker.ForceRequest{Dependency: "openai", Reason: "incident", Actor: "alice", For: time.Hour}); err != nil {
		t.Fatal(err)
	}
	var aliceRec audit.Record
	outs, err := bob.ClearAll(ctx, bobLog, breaker.ClearAll{Dependencies: []string{"openai"}, Reason: "bob's clear",
		Actor: func(context.Context) (string, error) { return "bob", nil },
		Confirm: func([]breaker.ClearResult) error {
			// Between bob's read and his delete, alice clears the same item.
			res, rec, err := alice.ClearAudited(ctx, aliceLog, "openai", "alice", "alice's clear")
			if err != nil || res.Before == nil || res.Theirs != nil {
				t.Fatalf("alice's clear: %+v, %v", res, err)
			}
			aliceRec = rec
			p.LoseNext("DeleteItem", 1, faultproxy.Reset)
			return nil
		}})
	if err != nil || len(outs) != 1 {
		t.Fatalf("bob's clear: %+v, %v", outs, err)
	}
	got := outs[0]
	if got.Written || got.Result.Before != nil || got.Result.Theirs == nil || got.Result.Theirs.Actor != "alice" ||
		got.Result.Theirs.ID != aliceRec.ID || got.Record.ID != "" {
		t.Fatalf("bob's outcome %+v (theirs %+v); want nothing written by bob, alice's record %s named", got, got.Result.Theirs, aliceRec.ID)
	}
	if p.Lost("DeleteItem") != 1 {
		t.Fatalf("the proxy lost %d DeleteItem answers, want 1", p.Lost("DeleteItem"))
	}
	l, err := aliceLog.List(ctx, audit.Query{Subject: breaker.OverrideKey("openai"), Action: breaker.ActionClear, Scan: true})
	if err != nil || len(l.Records) != 1 || l.Records[0].Actor != "alice" || len(l.Unreadable) != 0 {
		t.Fatalf("clear records %+v (unreadable %v), %v; want alice's alone", l.Records, l.Unreadable, err)
	}
}

// An interrupt while the write is in flight (the store applied it, its
// answer never came and the caller's context was canceled) leaves an
// outcome the cancellation alone cannot tell: the re-read, on a context of
// its own, resolves it. A force that landed is reported as written, and its
// missing record as the exit-8 repair (an UnwrittenError naming its token),
// never as a plain canceled write that left an unaudited override.
func TestInterruptWhileTheForceIsInFlightIsResolvedByTheReread(t *testing.T) {
	t.Parallel()
	p := faultproxy.Start(t, moto.Start(t))
	s := dynamotest.NewStore(t, p.URL())
	clk := clock.NewFake(time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC))
	ov := breaker.NewOverrides(s, clk)
	log := audit.NewLog(s, clk, "test")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p.LoseNext("PutItem", 1, faultproxy.Withhold)
	go func() {
		p.WaitLost(t, "PutItem", 1)
		cancel()
	}()
	res, _, err := ov.ForceAudited(ctx, log, breaker.ForceRequest{Dependency: "openai", Reason: "incident", Actor: "me", For: time.Hour})
	var unwritten *audit.UnwrittenError
	if !res.Confirmed || !errors.As(err, &unwritten) || unwritten.WriteID != res.After.WriteID || !errors.Is(err, audit.ErrAuditWrite) {
		t.Fatalf("force interrupted in flight: confirmed %v, err %v; want confirmed, its record the repair of write %s", res.Confirmed, err, res.After.WriteID)
	}
	got, err := ov.Get(context.Background(), "openai")
	if err != nil || got.WriteID != res.After.WriteID {
		t.Fatalf("stored override %+v, %v; want the interrupted write's", got, err)
	}
}

// The same for a clear: the delete landed while the caller was interrupted.
// The clear is reported as made, its record as the exit-8 repair, and that
// repair works: the claim on the deleted item's token is written although
// the interrupt stopped the append, so `audit repair` finds the record.
func TestInterruptWhileTheClearIsInFlightLeavesARepairableRecord(t *testing.T) {
	t.Parallel()
	p := faultproxy.Start(t, moto.Start(t))
	s := dynamotest.NewStore(t, p.URL())
	clk := clock.NewFake(time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC))
	ov := breaker.NewOverrides(s, clk)
	log := audit.NewLog(s, clk, "test")
	forced, _, err := ov.ForceAudited(context.Background(), log, breaker.ForceRequest{Dependency: "openai", Reason: "incident", Actor: "me", For: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p.LoseNext("DeleteItem", 1, faultproxy.Withhold)
	go func() {
		p.WaitLost(t, "DeleteItem", 1)
		cancel()
	}()
	res, _, err := ov.ClearAudited(ctx, log, "openai", "me", "over")
	var unwritten *audit.UnwrittenError
	if res.Before == nil || !res.Confirmed || !errors.As(err, &unwritten) || unwritten.WriteID != forced.After.WriteID {
		t.Fatalf("clear interrupted in flight: %+v, err %v; want cleared, confirmed, its record the repair of write %s", res, err, forced.After.WriteID)
	}
	rec, written, err := ov.RepairAudit(context.Background(), log, "openai", unwritten.WriteID, "me")
	if err != nil || !written || rec.Action != breaker.ActionClear || rec.Actor != "me" {
		t.Fatalf("repair of the interrupted clear: %+v, written %v, %v; want the clear's record written", rec, written, err)
	}
}
